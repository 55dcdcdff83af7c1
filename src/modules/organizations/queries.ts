import type { Knex } from 'knex';
import type { Db } from '../../db/database.js';
import type { OrganizationRow } from './dto.js';

/**
 * The rows of these organizations with their credits (kept in `organization_credits`), as
 * `OrganizationRow`s. Both tables are filtered by the ids, so on Citus the balance is read from the
 * organizations' own shards only.
 */
export function organizationRows(db: Db | Knex.Transaction, ids: readonly string[]): Knex.QueryBuilder<OrganizationRow, OrganizationRow[]> {
  return db('organizations')
    .join('organization_credits', 'organization_credits.organization_id', 'organizations.id')
    .whereIn('organizations.id', ids as string[])
    .whereIn('organization_credits.organization_id', ids as string[])
    .select('organizations.*', 'organization_credits.credits');
}
