import type { Knex } from 'knex';

/**
 * An organization's credits move to a table of their own, keyed by `organization_id` like every
 * tenant table: every send and campaign batch moves them, so they sit beside the logs they pay for
 * (on Citus, on the organization's own worker, in one-node transactions) and not in the global
 * `organizations` row that every node holds a copy of.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organization_credits (
      organization_id uuid PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      credits numeric(14, 2) NOT NULL DEFAULT 0 CHECK (credits >= 0)
    )`);
  await knex.raw('INSERT INTO organization_credits (organization_id, credits) SELECT id, credits FROM organizations');
  await knex.raw('ALTER TABLE organizations DROP COLUMN credits');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE organizations ADD COLUMN credits numeric(14, 2) NOT NULL DEFAULT 0 CHECK (credits >= 0)');
  await knex.raw('UPDATE organizations o SET credits = c.credits FROM organization_credits c WHERE c.organization_id = o.id');
  await knex.raw('DROP TABLE organization_credits');
}
