import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organizations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      sector text NOT NULL,
      country text NOT NULL,
      credits numeric(14, 2) NOT NULL DEFAULT 0 CHECK (credits >= 0),
      email_from_name text,
      credentials bytea,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE organizations');
}
