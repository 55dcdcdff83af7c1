import type { Knex } from 'knex';
import { badRequest } from '../lib/errors.js';
import { isUuid } from '../lib/ids.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface PageRequest {
  limit?: number;
  cursor?: string | null;
}

export interface Page<T> {
  items: T[];
  totalCount: number;
  nextCursor: string | null;
}

export interface CursorKey {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: { created_at: Date; id: string }): string {
  return Buffer.from(`${row.created_at.toISOString()}|${row.id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): CursorKey {
  const [createdAt, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  // Only what encodeCursor writes: an exact ISO instant. Date.parse alone lets `2026-02-30` through,
  // which Postgres then refuses with a 500.
  const at = new Date(createdAt ?? '');
  if (rest.length || !id || !isUuid(id) || Number.isNaN(at.getTime()) || at.toISOString() !== createdAt) {
    throw badRequest('cursor is invalid');
  }
  return { createdAt: createdAt!, id };
}

/**
 * How a list is ordered newest first and resumed after a cursor's row. The default is the row's own
 * `(created_at, id)`; a list whose rows are not stored one per id (the sandbox outbox) brings its own.
 */
export interface Keyset {
  orderBy: { column: string; order: 'desc' }[];
  /** Narrows `query` to the rows that come after the cursor's row. */
  after(query: Knex.QueryBuilder, key: CursorKey): void;
}

const rowKeyset = (table: string): Keyset => ({
  orderBy: [
    { column: `${table}.created_at`, order: 'desc' },
    { column: `${table}.id`, order: 'desc' },
  ],
  after: (query, key) => query.whereRaw(`(??, ??) < (?::timestamptz, ?::uuid)`, [`${table}.created_at`, `${table}.id`, key.createdAt, key.id]),
});

/**
 * Newest-first keyset pagination (over `(created_at, id)` unless `keyset` says otherwise): page 500
 * costs what page 1 costs. `query` must already carry its tenant and filter conditions; `table`
 * qualifies the columns.
 */
export async function paginate<Row extends { created_at: Date; id: string }>(
  query: Knex.QueryBuilder,
  table: string,
  page: PageRequest,
  keyset: Keyset = rowKeyset(table),
): Promise<Page<Row>> {
  const { limit, rowsQuery, totalCount } = pageQueries(query, page, keyset);
  const rows = (await rowsQuery) as Row[];
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items, totalCount: await totalCount(items.length, more), nextCursor: more ? encodeCursor(items[items.length - 1]!) : null };
}

/**
 * A page's statements: its rows (one more than the page, to tell whether more follow, after the
 * cursor), and its total: a first page that holds everything is its own count, only a partial list
 * asks for it.
 */
function pageQueries(query: Knex.QueryBuilder, page: PageRequest, keyset: Keyset) {
  const limit = page.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit must be between 1 and ${MAX_LIMIT}`);
  const rowsQuery = query.clone().orderBy(keyset.orderBy).limit(limit + 1);
  if (page.cursor) keyset.after(rowsQuery, decodeCursor(page.cursor));
  const totalCount = async (shown: number, more: boolean) =>
    !page.cursor && !more ? shown : Number(((await query.clone().clearSelect().clearOrder().count({ n: '*' }).first()) as { n: number } | undefined)?.n ?? 0);
  return { limit, rowsQuery, totalCount };
}

/** `paginate`, each row turned into what the API shows. */
export async function paginateAs<Row extends { created_at: Date; id: string }, Dto>(
  query: Knex.QueryBuilder,
  table: string,
  page: PageRequest,
  toDto: (row: Row) => Dto,
  keyset?: Keyset,
): Promise<Page<Dto>> {
  const result = await paginate<Row>(query, table, page, keyset);
  return { ...result, items: result.items.map(toDto) };
}

/** A page whose items are already JSON: an array written by Postgres. */
export interface JsonPage {
  json: string;
  totalCount: number;
  nextCursor: string | null;
}

/**
 * `paginate`, with the page's items written as one JSON array by Postgres, each row as `itemSql`
 * (an SQL expression over the row `r`) writes it, in the page's order: no row is parsed, mapped or
 * stringified here. The rows, their order and the cursor are `paginate`'s.
 */
export async function paginateJson(
  query: Knex.QueryBuilder,
  table: string,
  page: PageRequest,
  itemSql: (r: string) => string,
  keyset: Keyset = rowKeyset(table),
): Promise<JsonPage> {
  const { limit, rowsQuery, totalCount } = pageQueries(query, page, keyset);
  // The page's statement as knex built it, its placeholders (and any `?` operator) written for knex again.
  const inner = rowsQuery.toSQL().toNative();
  const innerSql = inner.sql.replace(/\?/g, '\\?').replace(/\$\d+/g, '?');
  const order = keyset.orderBy.map((o) => `p.${o.column.split('.').pop()} ${o.order}`).join(', ');
  const { rows } = (await query.client.raw(
    `SELECT count(*)::int AS n,
            coalesce(json_agg(${itemSql('r')} ORDER BY r.n) FILTER (WHERE r.n <= ?), '[]')::text AS json,
            min(r.created_at) FILTER (WHERE r.n = ?) AS last_at, min(r.id::text) FILTER (WHERE r.n = ?) AS last_id
     FROM (SELECT p.*, row_number() OVER (ORDER BY ${order}) AS n FROM (${innerSql}) p) r`,
    [limit, limit, limit, ...inner.bindings],
  )) as { rows: { n: number; json: string; last_at: Date | null; last_id: string | null }[] };
  const [row] = rows;
  const more = row!.n > limit;
  return {
    json: row!.json,
    totalCount: await totalCount(Math.min(row!.n, limit), more),
    nextCursor: more ? encodeCursor({ created_at: row!.last_at!, id: row!.last_id! }) : null,
  };
}
