import type { Knex } from 'knex';

/**
 * The (organization, lower(email)) index of contacts carries the email itself, so a campaign's
 * email audience (materialised at launch, counted by the estimate) is read from the index alone in
 * address order: Postgres answers an expression from an index only when the columns it is computed
 * from are in the index. Without them, a 1,000,000-contact audience was a sequential scan and a
 * sort spilled to disk (0.9 s, against 0.25 s read this way).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX contacts_org_email_address_idx ON contacts (organization_id, lower(email)) INCLUDE (email) WHERE email IS NOT NULL');
  await knex.raw('DROP INDEX contacts_org_email_idx');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX contacts_org_email_idx ON contacts (organization_id, lower(email)) WHERE email IS NOT NULL');
  await knex.raw('DROP INDEX contacts_org_email_address_idx');
}
