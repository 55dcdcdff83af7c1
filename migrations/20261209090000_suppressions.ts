import type { Knex } from 'knex';

/**
 * `suppressions`: the addresses an organization does not send email to (a suppression list):
 * added by an admin (`manual`), a CSV import (`import`), a permanent bounce or repeated temporary
 * ones (`bounce`, with its `bounce_type` and `detail`), or a complaint (`complaint`). Campaigns,
 * sends to every contact and automations leave them out; an ad hoc send to a hard-bounced address
 * fails at once. Removing the row allows sending again. One row per organization, channel and address.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE suppressions (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL DEFAULT 'email' CHECK (channel IN ('email')),
      address text NOT NULL,
      reason text NOT NULL CHECK (reason IN ('manual', 'import', 'bounce', 'complaint')),
      bounce_type text CHECK (bounce_type IN ('hard', 'soft')),
      detail text,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE UNIQUE INDEX suppressions_address_idx ON suppressions (organization_id, channel, address)');
  await knex.raw('CREATE INDEX suppressions_created_idx ON suppressions (organization_id, created_at, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE suppressions');
}
