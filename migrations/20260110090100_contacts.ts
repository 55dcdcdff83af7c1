import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE contacts (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      name text NOT NULL,
      email text,
      phone text,
      country_code text,
      company text,
      tags text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id),
      CHECK (email IS NOT NULL OR phone IS NOT NULL)
    )`);
  await knex.raw(`
    CREATE TABLE contact_groups (
      organization_id uuid NOT NULL,
      contact_id uuid NOT NULL,
      group_id uuid NOT NULL,
      PRIMARY KEY (organization_id, contact_id, group_id),
      FOREIGN KEY (organization_id, contact_id) REFERENCES contacts (organization_id, id) ON DELETE CASCADE,
      FOREIGN KEY (organization_id, group_id) REFERENCES groups (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw('CREATE INDEX contact_groups_group_idx ON contact_groups (organization_id, group_id, contact_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE contact_groups');
  await knex.raw('DROP TABLE contacts');
}
