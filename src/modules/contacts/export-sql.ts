import type { Knex } from 'knex';
import type { Tenant } from '../../db/tenant.js';
import { CONSENT_CHANNELS, LIST_SEPARATOR } from './csv-columns.js';
import { matching, type ContactFilter } from './service.js';

/**
 * The export's statements (export.ts runs them): the attribute keys that make its columns, where
 * its pages end, and each page's rows formatted by Postgres as the file's cells, so that `COPY`
 * writes the CSV itself.
 */

/** Contacts per page. */
export const PAGE_ROWS = 5000;

/** A contact's place in the list's order (newest first, ties by id): `created_at` as text, in full precision. */
export interface Keyset {
  createdAt: string;
  id: string;
}

/** A page: the contacts after `after` (the previous page's last; from the newest when null) down to `last`, its own last. */
export interface PageRange {
  after: Keyset | null;
  last: Keyset;
}

const LIST_ORDER = (table: string, createdAt: string, id: string) => [
  { column: `${table}.${createdAt}`, order: 'desc' as const },
  { column: `${table}.${id}`, order: 'desc' as const },
];

/**
 * Keeps the rows after `after` in the list's order, keyed by `(createdAt, id)` columns. The bound on
 * the time alone says nothing the keys do not, but Postgres estimates a range of one column from its
 * statistics and a row comparison as if it kept most rows: with the row comparisons alone, a
 * filter's own index looked cheaper than a page's range of the list's index, and every page read all
 * of the filter's matches.
 */
function olderThan(q: Knex.QueryBuilder, createdAt: string, id: string, after: Keyset): Knex.QueryBuilder {
  return q.whereRaw(`${createdAt} <= ?::timestamptz AND (${createdAt}, ${id}) < (?::timestamptz, ?::uuid)`, [after.createdAt, after.createdAt, after.id]);
}

/** Keeps the rows of `range`, as `olderThan` does. */
function within(q: Knex.QueryBuilder, createdAt: string, id: string, { after, last }: PageRange): Knex.QueryBuilder {
  if (after) olderThan(q, createdAt, id, after);
  return q.whereRaw(`${createdAt} >= ?::timestamptz AND (${createdAt}, ${id}) >= (?::timestamptz, ?::uuid)`, [last.createdAt, last.createdAt, last.id]);
}

/** How many matching contacts give the attribute keys `attributeKeys` expects. */
const KEYS_SAMPLE = 1000;

/**
 * The attribute keys of the matching contacts, sorted: one column each. Contacts of an organization
 * mostly share their keys, so the keys of the first `KEYS_SAMPLE` matching contacts found (in no
 * order: a sparse filter's are found through its own index) are taken first, and the pass over every
 * contact only looks for others: deleting the expected keys from each contact costs less than
 * listing every key of every contact and keeping the distinct ones.
 */
export function attributeKeys(t: Tenant, filter: ContactFilter): Knex.QueryBuilder {
  const { db } = t;
  const matched = () => t.scoped('contacts').modify(matching(t, filter)).whereRaw(`contacts.attributes <> '{}'::jsonb`);
  const sample = matched().select('contacts.attributes').limit(KEYS_SAMPLE);
  const unexpected = `contacts.attributes - ARRAY(SELECT key FROM expected)`;
  const others = matched().select(db.raw(`jsonb_object_keys(${unexpected}) AS key`)).whereRaw(`${unexpected} <> '{}'::jsonb`);
  return db
    .with('expected', db.select(db.raw('DISTINCT jsonb_object_keys(sample.attributes) AS key')).from(sample.as('sample')))
    .select('key')
    .from('expected')
    .union(others)
    .orderBy('key');
}

/**
 * Where the page after `after` ends (from the newest when null): its `PAGE_ROWS`th matching contact
 * (`full_page`), or else the last one (the last page). Read ahead of the page, so that pages can be
 * read side by side; only the list's index is read for an export without filters.
 */
export function pageEnd(t: Tenant, filter: ContactFilter, after: Keyset | null): Knex.QueryBuilder {
  const { db } = t;
  const following = (order: 'asc' | 'desc') => {
    const q = t
      .scoped('contacts')
      .modify(matching(t, filter))
      .orderBy([
        { column: 'contacts.created_at', order },
        { column: 'contacts.id', order },
      ]);
    return after ? olderThan(q, 'contacts.created_at', 'contacts.id', after) : q;
  };
  const nth = following('desc').select('contacts.created_at', 'contacts.id', db.raw('true AS full_page')).offset(PAGE_ROWS - 1).limit(1);
  const last = following('asc').select('contacts.created_at', 'contacts.id', db.raw('false AS full_page')).limit(1);
  // The second part runs only when the first finds nothing.
  return db
    .select(db.raw('ends.created_at::text AS created_at'), db.raw('ends.id::text AS id'), 'ends.full_page')
    .from(db.raw('((?) UNION ALL (?)) AS ends', [nth, last]))
    .limit(1);
}

/**
 * A group's place among a contact's group names: as JavaScript sorts strings (by UTF-16 code
 * units), which is how the cell was ordered before Postgres wrote it; that differs from the bytes'
 * order ("C") only where a character beyond U+FFFF meets one from U+E000 to U+FFFF, so such a
 * character is put after U+D7FF (unassigned) to sort where its surrogates would.
 */
const UTF16_ORDER = `CASE WHEN groups.name ~ '[\\U00010000-\\U0010FFFF]'
  THEN regexp_replace(groups.name, '([\\U00010000-\\U0010FFFF])', U&'\\D7FF' || '\\1', 'g') ELSE groups.name END`;

/**
 * The group names of the page's contacts (the statement's `page`), one row per contact with
 * memberships, from one range of the memberships' list-order index (not a lookup per contact). With
 * a filter, the range also holds contacts the filter leaves out (all of the organization's, between
 * two matches far apart): their memberships are left out before they are named and sorted. The
 * organization's groups are read once per page (OFFSET 0 keeps their sort keys from being worked
 * out again for every membership).
 */
function groupNames(t: Tenant, range: PageRange, filtered: boolean): Knex.QueryBuilder {
  const { db } = t;
  const groups = t.scoped('groups').select('groups.id', 'groups.name', db.raw(`${UTF16_ORDER} AS sort_key`));
  const q = t
    .scoped('contact_groups')
    .join(db.raw('(? OFFSET 0) AS named', [groups]), 'named.id', 'contact_groups.group_id')
    .select(
      'contact_groups.contact_created_at',
      'contact_groups.contact_id',
      db.raw(`string_agg(named.name, ? ORDER BY named.sort_key COLLATE "C") AS names`, [LIST_SEPARATOR]),
    )
    .groupBy('contact_groups.contact_created_at', 'contact_groups.contact_id');
  // As a hashed subplan (one hash of the page's keys, whatever their number is guessed to be):
  // `OR false` keeps Postgres from making it a join, which it may run as a pass over the page for
  // every membership when it counts the page's contacts as one.
  if (filtered) q.whereRaw('((contact_groups.contact_created_at, contact_groups.contact_id) IN (SELECT page.created_at, page.id FROM page) OR false)');
  return within(q, 'contact_groups.contact_created_at', 'contact_groups.contact_id', range);
}

/**
 * A time as the file writes it, `Date#toISOString`'s form: UTC, to the millisecond, half a
 * millisecond rounded up (`MS` drops what is below the millisecond).
 */
const isoTime = (column: string) => `to_char((${column} + interval '500 microseconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A cell from a text that may be null or empty: COPY writes null as an empty cell and quotes an
 * empty text (`""`), where the file has always written both as an empty cell.
 */
const orEmpty = (expression: string) => `NULLIF(${expression}, '')`;

/**
 * One page of the file (without its header): the cells of `exportHeader(keys)` per contact, in the
 * list's order, for `copyOut` to write as CSV.
 *
 * The page's contacts meet their group names in a FULL JOIN, which Postgres can only merge or hash;
 * every row of group names has its contact, so it answers what a LEFT JOIN would. A LEFT JOIN may
 * also be a nested loop, which for an organization the statistics do not know yet (its rows
 * counted as one) aggregated the page's memberships again for every contact.
 */
export function csvPage(t: Tenant, filter: ContactFilter, keys: readonly string[], range: PageRange): Knex.QueryBuilder {
  const { db } = t;
  // Without a filter, the page is all of its range, so every membership of the range is one of the page's.
  const filtered = Object.values(filter).some((value) => value !== undefined);
  const page = within(t.scoped('contacts').modify(matching(t, filter)).select('contacts.*'), 'contacts.created_at', 'contacts.id', range);
  const columns = [
    'contacts.id',
    ...['name', 'email', 'phone', 'country_code', 'company'].map((column) => db.raw(orEmpty(`contacts.${column}`))),
    db.raw(orEmpty('array_to_string(contacts.tags, ?)'), [LIST_SEPARATOR]),
    db.raw(orEmpty('CASE WHEN contacts.time_zone_set THEN contacts.time_zone END')),
    'memberships.names',
    ...CONSENT_CHANNELS.map((channel) => db.raw(`CASE WHEN (contacts.unsubscribed -> ?::text) IS NULL THEN 'subscribed' ELSE 'unsubscribed' END`, [channel])),
    // A string as it is; a number or a boolean as its JSON text, which an import reads back as one.
    ...keys.map((key) => db.raw(orEmpty('contacts.attributes ->> ?::text'), [key])),
    db.raw(isoTime('contacts.created_at')),
    db.raw(isoTime('contacts.updated_at')),
  ];
  return db
    .with('page', page)
    .select(columns)
    .from('page as contacts')
    .fullOuterJoin(groupNames(t, range, filtered).as('memberships'), function () {
      this.on('memberships.contact_created_at', 'contacts.created_at').andOn('memberships.contact_id', 'contacts.id');
    })
    .orderBy(LIST_ORDER('contacts', 'created_at', 'id'));
}
