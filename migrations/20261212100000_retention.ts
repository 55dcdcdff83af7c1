import type { Knex } from 'knex';

/**
 * How long an organization keeps its message logs (with their recipients, receipts and events),
 * sandbox outbox, webhook events and attempts, and bounce history: `retention_days`, 395 (13
 * months) unless it chose otherwise, at least 30. The daily retention job (`src/modules/retention`)
 * deletes what is older.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE organizations ADD COLUMN retention_days int NOT NULL DEFAULT 395 CHECK (retention_days BETWEEN 30 AND 3650)');
  // The job reads each table's oldest rows of an organization: these two had no index for it.
  await knex.raw('CREATE INDEX webhook_attempts_org_created_idx ON webhook_attempts (organization_id, created_at)');
  await knex.raw('CREATE INDEX email_bounces_org_occurred_idx ON email_bounces (organization_id, occurred_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX email_bounces_org_occurred_idx');
  await knex.raw('DROP INDEX webhook_attempts_org_created_idx');
  await knex.raw('ALTER TABLE organizations DROP COLUMN retention_days');
}
