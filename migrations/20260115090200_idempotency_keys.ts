import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE idempotency_keys (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      key text NOT NULL,
      scope text NOT NULL,
      request_hash text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'done')),
      response json,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (organization_id, key)
    )`);
  await knex.raw('CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (organization_id, expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE idempotency_keys');
}
