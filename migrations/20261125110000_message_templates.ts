import type { Knex } from 'knex';

/**
 * Saved message templates (platform.md, "Personalised messages"): a tenant table like groups, its
 * names unique per organization ignoring case, listed newest first.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE message_templates (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      name text NOT NULL,
      channel text NOT NULL CHECK (channel IN ('email', 'sms', 'whatsapp')),
      subject text,
      content text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id),
      CHECK ((channel = 'email') = (subject IS NOT NULL))
    )`);
  await knex.raw('CREATE UNIQUE INDEX message_templates_org_name_key ON message_templates (organization_id, lower(name))');
  await knex.raw('CREATE INDEX message_templates_org_created_idx ON message_templates (organization_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE message_templates');
}
