import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE sandbox_outbox (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL,
      recipient text NOT NULL,
      subject text,
      body text NOT NULL,
      attachments jsonb NOT NULL DEFAULT '[]',
      status text NOT NULL CHECK (status IN ('success', 'failed')),
      error text,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX sandbox_outbox_org_created_idx ON sandbox_outbox (organization_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE sandbox_outbox');
}
