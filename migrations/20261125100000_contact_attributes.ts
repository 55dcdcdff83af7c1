import type { Knex } from 'knex';

/**
 * Contacts gain `attributes`, a flat JSON object (platform.md, "Personalised messages"), and the
 * index that answers the list filter `attributes @> {...}`: GIN, leading with organization_id
 * (btree_gin) like every tenant index, with `jsonb_path_ops` (containment is the only operator the
 * filter uses, and that index is the smaller and faster one for it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE contacts ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(attributes) = 'object')`);
  await knex.raw('CREATE INDEX contacts_org_attributes_idx ON contacts USING gin (organization_id, attributes jsonb_path_ops)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX contacts_org_attributes_idx');
  await knex.raw('ALTER TABLE contacts DROP COLUMN attributes');
}
