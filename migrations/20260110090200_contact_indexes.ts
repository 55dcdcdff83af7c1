import type { Knex } from 'knex';

/**
 * What keeps listing, filtering and lookups fast at 100,000 contacts per organization. Every index
 * leads with organization_id (btree_gin lets the GIN indexes do so too).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS btree_gin');
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm');
  await knex.raw('CREATE INDEX contacts_org_created_idx ON contacts (organization_id, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX contacts_org_email_idx ON contacts (organization_id, lower(email)) WHERE email IS NOT NULL');
  await knex.raw('CREATE INDEX contacts_org_phone_idx ON contacts (organization_id, phone) WHERE phone IS NOT NULL');
  await knex.raw('CREATE INDEX contacts_org_tags_idx ON contacts USING gin (organization_id, tags)');
  await knex.raw(`
    CREATE INDEX contacts_org_search_idx ON contacts
    USING gin (organization_id, (lower(name || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))) gin_trgm_ops)`);
}

export async function down(knex: Knex): Promise<void> {
  for (const index of ['contacts_org_search_idx', 'contacts_org_tags_idx', 'contacts_org_phone_idx', 'contacts_org_email_idx', 'contacts_org_created_idx']) {
    await knex.raw(`DROP INDEX ${index}`);
  }
}
