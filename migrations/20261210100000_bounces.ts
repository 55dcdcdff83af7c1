import type { Knex } from 'knex';

/**
 * Bounces and complaints. A recipient's row in `recipient_receipts` records its first bounce
 * (`bounced_at`, `bounce_type`, `bounce_reason`; a permanent one replaces a temporary one) and its
 * complaint (`complained_at`); campaigns count each recipient once in `bounced` and `complained`.
 * `email_bounces` keeps every bounce of an address, one per recipient and type, which is how
 * temporary ones are counted towards suppressing it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE recipient_receipts
      ADD COLUMN bounced_at timestamptz,
      ADD COLUMN bounce_type text CHECK (bounce_type IN ('hard', 'soft')),
      ADD COLUMN bounce_reason text,
      ADD COLUMN complained_at timestamptz`);
  await knex.raw(`
    ALTER TABLE campaigns
      ADD COLUMN bounced integer NOT NULL DEFAULT 0,
      ADD COLUMN complained integer NOT NULL DEFAULT 0`);
  await knex.raw(`
    CREATE TABLE email_bounces (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      address text NOT NULL,
      bounce_type text NOT NULL CHECK (bounce_type IN ('hard', 'soft')),
      log_id uuid NOT NULL,
      position integer NOT NULL,
      reason text,
      occurred_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE UNIQUE INDEX email_bounces_recipient_idx ON email_bounces (organization_id, log_id, position, bounce_type)');
  await knex.raw('CREATE INDEX email_bounces_address_idx ON email_bounces (organization_id, address, occurred_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE email_bounces');
  await knex.raw('ALTER TABLE campaigns DROP COLUMN bounced, DROP COLUMN complained');
  await knex.raw('ALTER TABLE recipient_receipts DROP COLUMN bounced_at, DROP COLUMN bounce_type, DROP COLUMN bounce_reason, DROP COLUMN complained_at');
}
