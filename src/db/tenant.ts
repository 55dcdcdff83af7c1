import type { Knex } from 'knex';
import { forbidden, notFound } from '../lib/errors.js';
import { isUuid } from '../lib/ids.js';
import type { Db } from './database.js';

/**
 * The one way services reach an organization's rows: every query starts from `scoped(table)`,
 * which already carries the organization filter, so forgetting it takes effort.
 */
export interface Tenant {
  readonly orgId: string;
  readonly db: Db | Knex.Transaction;
  scoped(table: string): Knex.QueryBuilder;
  /**
   * The row with this id in the caller's organization: 404 for a bad or unknown id, 403 for another
   * organization's. With `forUpdate` (in a transaction), the row stays locked until it ends.
   */
  owned<T = Record<string, unknown>>(table: string, id: string, columns?: string[], opts?: { forUpdate?: boolean }): Promise<T>;
}

export function tenant(db: Db | Knex.Transaction, orgId: string): Tenant {
  return {
    orgId,
    db,
    scoped: (table) => db(table).where(`${table}.organization_id`, orgId),
    async owned(table, id, columns = ['*'], opts = {}) {
      if (!isUuid(id)) throw notFound();
      const query = db(table).where(`${table}.organization_id`, orgId).andWhere(`${table}.id`, id);
      const row = await (opts.forUpdate ? query.forUpdate() : query).first(columns);
      if (row) return row;
      // A miss: tell "another organization's" (403, nothing revealed) from "no such id" (404).
      const elsewhere = await db(table).where(`${table}.id`, id).first(db.raw('1 AS found'));
      throw elsewhere ? forbidden() : notFound();
    },
  };
}
