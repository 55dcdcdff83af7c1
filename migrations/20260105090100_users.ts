import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Users are a global table: login finds them by an email unique across all organizations.
  await knex.raw(`
    CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      first_name text NOT NULL,
      last_name text NOT NULL,
      email text NOT NULL,
      country_code text NOT NULL,
      phone_number text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'user')),
      is_active boolean NOT NULL DEFAULT true,
      password_hash text NOT NULL,
      tokens_valid_after bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    )`);
  await knex.raw('CREATE UNIQUE INDEX users_email_key ON users (lower(email))');
  await knex.raw('CREATE INDEX users_org_created_idx ON users (organization_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE users');
}
