import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Global table: a presented key is found by its hash before its organization is known.
  await knex.raw(`
    CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'user')),
      prefix text NOT NULL,
      key_hash bytea NOT NULL UNIQUE,
      created_by uuid REFERENCES users (id) ON DELETE SET NULL,
      last_used_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    )`);
  await knex.raw('CREATE INDEX api_keys_org_created_idx ON api_keys (organization_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE api_keys');
}
