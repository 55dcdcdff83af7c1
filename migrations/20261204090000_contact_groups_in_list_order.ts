import type { Knex } from 'knex';

/**
 * Each membership carries its contact's `created_at`, and an index keeps the memberships in the
 * contacts' list order (newest first, ties by id). The export reads contacts in that order; a
 * page's memberships are then one range of that index beside the page, merge-joined, rather than
 * one lookup per contact of a key in contact-id order (a random page of the index for each).
 *
 * The copy is the contact's own: the memberships' key to their contact takes the time with the id
 * (the list's index on contacts becomes unique for it, as it already is by the id in it), so a
 * membership written with another time is refused, and a contact's time cannot change while it has
 * memberships (nothing changes it). Not `ON UPDATE CASCADE`: Citus refuses it on a key that holds
 * the distribution column.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE contact_groups ADD COLUMN contact_created_at timestamptz');
  await knex.raw(`
    UPDATE contact_groups cg SET contact_created_at = c.created_at
    FROM contacts c WHERE c.organization_id = cg.organization_id AND c.id = cg.contact_id`);
  await knex.raw('ALTER TABLE contact_groups ALTER COLUMN contact_created_at SET NOT NULL');

  await knex.raw('CREATE UNIQUE INDEX contacts_org_created_key ON contacts (organization_id, created_at DESC, id DESC)');
  await knex.raw('DROP INDEX contacts_org_created_idx');
  await knex.raw('ALTER INDEX contacts_org_created_key RENAME TO contacts_org_created_idx');
  await knex.raw('ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_organization_id_contact_id_fkey');
  await knex.raw(`
    ALTER TABLE contact_groups ADD CONSTRAINT contact_groups_contact_fkey
    FOREIGN KEY (organization_id, contact_id, contact_created_at) REFERENCES contacts (organization_id, id, created_at)
    ON DELETE CASCADE`);
  await knex.raw('CREATE INDEX contact_groups_list_order_idx ON contact_groups (organization_id, contact_created_at, contact_id, group_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX contact_groups_list_order_idx');
  await knex.raw('ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_contact_fkey');
  await knex.raw(`
    ALTER TABLE contact_groups ADD CONSTRAINT contact_groups_organization_id_contact_id_fkey
    FOREIGN KEY (organization_id, contact_id) REFERENCES contacts (organization_id, id) ON DELETE CASCADE`);
  await knex.raw('CREATE INDEX contacts_org_created_plain ON contacts (organization_id, created_at DESC, id DESC)');
  await knex.raw('DROP INDEX contacts_org_created_idx');
  await knex.raw('ALTER INDEX contacts_org_created_plain RENAME TO contacts_org_created_idx');
  await knex.raw('ALTER TABLE contact_groups DROP COLUMN contact_created_at');
}
