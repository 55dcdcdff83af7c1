import { Readable } from 'node:stream';
import { z } from 'zod';
import type { Db } from '../../db/database.js';
import { run } from '../../db/statements.js';
import { tenant, type Tenant } from '../../db/tenant.js';
import type { Download } from '../../lib/download.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import { parse } from '../../lib/validation.js';
import { operation, type Operation } from '../../operation.js';
import type { Caller } from '../auth/caller.js';
import {
  CONSENT_CHANNELS,
  CONTACT_FIELDS,
  CREATED_AT_COLUMN,
  exportHeader,
  GROUPS_COLUMN,
  ID_COLUMN,
  LIST_SEPARATOR,
  subscriptionColumn,
  UPDATED_AT_COLUMN,
} from './csv-columns.js';
import { csvCell, csvRecord } from './csv-records.js';
import { EXPORT_LINK_LIFETIME_MS, exportToken, readExportToken, type ExportLink } from './export-links.js';
import { pageMemberships } from './queries.js';
import { filterInput, matching, READ, type ContactFilter } from './service.js';

/**
 * The contacts export (platform.md, "Contacts in bulk"): the contacts a list filter matches as CSV,
 * in the vocabulary of csv-columns.ts (so a file exported imports again unchanged), newest first.
 * Read in keyset pages of `PAGE_ROWS`, each a short query of its own, the next one read while the
 * client takes this one: memory holds two pages whatever the organization's size, and a client that
 * reads slowly holds no connection while it does. A page's memberships are one statement of their own
 * (`pageMemberships`), on a second connection while the next page's contacts are read on the first:
 * looking them up is as much of Postgres's work as reading the contacts.
 */

const PAGE_ROWS = 5000;
/** Combinations of groups whose cell is kept (contacts share few of them; more are written anew). */
const GROUP_CELLS_KEPT = 10_000;
/** The length of a uuid as text: `pageMemberships` answers ids side by side. */
const UUID_TEXT = 36;

/** The attribute keys of the matching contacts, sorted: one column each. */
async function attributeKeys(t: Tenant, filter: ContactFilter): Promise<string[]> {
  const rows = (await t
    .scoped('contacts')
    .modify(matching(t, filter))
    .whereRaw(`contacts.attributes <> '{}'::jsonb`)
    .distinct(t.db.raw('jsonb_object_keys(contacts.attributes) AS key'))
    .orderBy('key')) as { key: string }[];
  return rows.map((r) => r.key);
}

/** The organization's group names by id (groups are few beside contacts: read once per export). */
async function groupNames(t: Tenant): Promise<Map<string, string>> {
  const rows = (await t.scoped('groups').select('groups.id', 'groups.name')) as { id: string; name: string }[];
  return new Map(rows.map((g) => [g.id, g.name]));
}

/** Where a page starts: after the previous page's last row, in the list's order. */
interface Keyset {
  createdAt: string;
  id: string;
}

/**
 * Where the values are in a page's row: the id, the contact's six fields (`name` to `tags`, as in
 * the header), its consent (one bit per channel of `CONSENT_CHANNELS`, set when it left), one value
 * per attribute key, then its times (seconds since the epoch, made ISO 8601 here: cheaper than
 * Postgres's `to_char`) and its `created_at` in full precision, where the next page starts.
 */
const FIELDS_END = 7;
const CONSENT = 7;
const ATTRIBUTES = 8;

type Row = (string | number | null)[];

/** One page of rows as arrays, in the layout above. */
async function pageQuery(t: Tenant, filter: ContactFilter, keys: string[], after: Keyset | null): Promise<Row[]> {
  const { db } = t;
  const columns = [
    db.raw('contacts.id::text'),
    'contacts.name',
    'contacts.email',
    'contacts.phone',
    'contacts.country_code',
    'contacts.company',
    db.raw('array_to_string(contacts.tags, ?)', [LIST_SEPARATOR]),
    db.raw(CONSENT_CHANNELS.map((_, i) => `CASE WHEN (contacts.unsubscribed -> ?::text) IS NULL THEN 0 ELSE ${1 << i} END`).join(' + '), [...CONSENT_CHANNELS]),
    // A string as it is; a number or a boolean as its JSON text, which an import reads back as one.
    ...keys.map((key) => db.raw('contacts.attributes ->> ?::text', [key])),
    db.raw(`date_part('epoch', contacts.created_at)`),
    db.raw(`date_part('epoch', contacts.updated_at)`),
    db.raw('contacts.created_at::text'),
  ];
  const q = t
    .scoped('contacts')
    .modify(matching(t, filter))
    .select(columns)
    .orderBy([
      { column: 'contacts.created_at', order: 'desc' },
      { column: 'contacts.id', order: 'desc' },
    ])
    .limit(PAGE_ROWS)
    .options({ rowMode: 'array' });
  if (after) q.whereRaw('(contacts.created_at, contacts.id) < (?::timestamptz, ?::uuid)', [after.createdAt, after.id]);
  return (await q) as unknown as Row[];
}

/** The ids of the groups of each contact of a page that has any, side by side (`pageMemberships`). */
async function pageGroups(t: Tenant, rows: Row[]): Promise<Map<string, string>> {
  // One array literal (uuids need no quoting): cheaper to send than a list the driver escapes element by element.
  const contactIds = `{${rows.map((r) => r[0] as string).join(',')}}`;
  const [row] = await run(t.db, pageMemberships, { orgId: t.orgId, contactIds });
  const groups = new Map<string, string>();
  const text = row?.memberships ?? '';
  for (let at = 0; at < text.length; at += 2 * UUID_TEXT) {
    const contactId = text.slice(at, at + UUID_TEXT);
    const groupId = text.slice(at + UUID_TEXT, at + 2 * UUID_TEXT);
    const before = groups.get(contactId);
    groups.set(contactId, before === undefined ? groupId : before + groupId);
  }
  return groups;
}

/** The groups cell of a contact's group ids (their names, sorted), written once per combination met. */
function groupsCells(names: Map<string, string>): (ids: string | undefined) => string {
  const cells = new Map<string, string>();
  return (ids) => {
    if (ids === undefined) return '';
    let cell = cells.get(ids);
    if (cell === undefined) {
      const named: string[] = [];
      for (let at = 0; at < ids.length; at += UUID_TEXT) {
        const name = names.get(ids.slice(at, at + UUID_TEXT));
        if (name) named.push(name);
      }
      cell = csvCell(named.sort().join(LIST_SEPARATOR));
      if (cells.size < GROUP_CELLS_KEPT) cells.set(ids, cell);
    }
    return cell;
  };
}

/** The consent cells of each value of a row's consent bits. */
const CONSENT_CELLS = Array.from({ length: 1 << CONSENT_CHANNELS.length }, (_, bits) =>
  CONSENT_CHANNELS.map((_, i) => (bits & (1 << i) ? 'unsubscribed' : 'subscribed')).join(','),
);

/**
 * ISO 8601 of seconds since the epoch, to the millisecond, as `toISOString` writes it; the date and
 * time of day written once per second met (the rows of an import share their seconds).
 */
function isoTimes(): (epochSeconds: number) => string {
  let second = NaN;
  let head = '';
  return (epochSeconds) => {
    const ms = Math.round(epochSeconds * 1000);
    const s = Math.floor(ms / 1000);
    if (s !== second) {
      head = new Date(s * 1000).toISOString().slice(0, -4);
      second = s;
    }
    const fraction = ms - s * 1000;
    return `${head}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
  };
}

/** The header's layout is the rows': what `pageWriter` writes where. */
const LAYOUT = [ID_COLUMN, ...CONTACT_FIELDS, GROUPS_COLUMN, ...CONSENT_CHANNELS.map(subscriptionColumn), CREATED_AT_COLUMN, UPDATED_AT_COLUMN];
if (exportHeader([]).join() !== LAYOUT.join()) throw new Error('the export writes its rows in another order than its header');

/** What a record takes, to begin with: a page's bytes grow when its records are longer. */
const RECORD_BYTES = 256;

/**
 * Writes a page's rows as CSV records, each into the page's bytes as it is made: one string for the
 * whole page, made bytes at the end, took twice as long.
 */
function pageWriter(names: Map<string, string>, keys: number): (head: string, rows: Row[], groups: Map<string, string>) => Buffer {
  const groupsCell = groupsCells(names);
  const created = isoTimes();
  const updated = isoTimes();
  const times = ATTRIBUTES + keys;
  return (head, rows, groups) => {
    let bytes = Buffer.allocUnsafe(rows.length * RECORD_BYTES + head.length * 3);
    let used = bytes.write(head);
    for (const row of rows) {
      let record = row[0] as string;
      for (let i = 1; i < FIELDS_END; i++) record += `,${csvCell(row[i] as string | null)}`;
      record += `,${groupsCell(groups.get(row[0] as string))},${CONSENT_CELLS[row[CONSENT] as number]}`;
      for (let i = ATTRIBUTES; i < times; i++) record += `,${csvCell(row[i] as string | null)}`;
      record += `,${created(row[times] as number)},${updated(row[times + 1] as number)}\n`;
      // Three bytes at most per UTF-16 unit.
      if (used + record.length * 3 > bytes.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * bytes.length, used + record.length * 3));
        bytes.copy(grown, 0, 0, used);
        bytes = grown;
      }
      used += bytes.write(record, used);
    }
    return bytes.subarray(0, used);
  };
}

/** A page's rows, and the groups of its contacts read after them. */
interface Page {
  rows: Promise<Row[]>;
  groups: Promise<Map<string, string>>;
}

function readPage(t: Tenant, filter: ContactFilter, keys: string[], after: Keyset | null): Page {
  const rows = pageQuery(t, filter, keys, after);
  const groups = rows.then((r) => pageGroups(t, r));
  // A page the client never takes still settles (its error is the generator's to throw, not an unhandled one).
  rows.catch(() => undefined);
  groups.catch(() => undefined);
  return { rows, groups };
}

/**
 * The file, a page at a time, the next page read while this one is sent: the header row comes with
 * the first page, so that the work that can fail (the first queries) is done before anything is sent.
 */
async function* csvPages(db: Db, orgId: string, filter: ContactFilter): AsyncGenerator<Buffer> {
  const t = tenant(db, orgId);
  const [keys, names] = await Promise.all([attributeKeys(t, filter), groupNames(t)]);
  const write = pageWriter(names, keys.length);
  const keyset = ATTRIBUTES + keys.length + 2;
  let head = csvRecord(exportHeader(keys));
  let next: Page | null = readPage(t, filter, keys, null);
  while (next) {
    const rows: Row[] = await next.rows;
    const last = rows[rows.length - 1];
    // The next page's contacts are read while this page's groups are.
    const following = rows.length === PAGE_ROWS ? readPage(t, filter, keys, { createdAt: last![keyset] as string, id: last![0] as string }) : null;
    yield write(head, rows, await next.groups);
    head = '';
    next = following;
  }
}

function contactsCsv(db: Db, orgId: string, filter: ContactFilter): Download {
  return {
    contentType: 'text/csv; charset=utf-8',
    filename: `contacts-${new Date().toISOString().slice(0, 10)}.csv`,
    // Pulled a page at a time as the response drains (the stream's buffer holds at most one page).
    stream: Readable.from(csvPages(db, orgId, filter), { objectMode: false, highWaterMark: 1 }),
  };
}

/** `GET /contacts/export` with the caller's credential: the filter from the query string. */
const exportForCaller = operation({
  access: READ,
  input: filterInput,
  async run(ctx, filter): Promise<Download> {
    return contactsCsv(ctx.db, ctx.caller.orgId, filter);
  },
});

const linkInput = z.strictObject({ token: z.string() });

/** Whether who asked for the link may still read the organization's contacts (active user, key not revoked). */
async function askerStillAllowed(db: Db, link: ExportLink): Promise<boolean> {
  const row =
    link.asker.kind === 'user'
      ? await db('users').where({ id: link.asker.id, organization_id: link.orgId, is_active: true }).first('id')
      : await db('api_keys').where({ id: link.asker.id, organization_id: link.orgId }).whereNull('revoked_at').first('id');
  return row !== undefined;
}

/**
 * `GET /contacts/export?token=`: the link is the credential, so no other may come with it. It
 * exports what it names, of its own organization only, while it lasts and while who asked for it
 * may still read contacts.
 */
const exportThroughLink = operation({
  access: { public: true },
  input: linkInput,
  async run(ctx, { token }): Promise<Download> {
    if (await ctx.authenticate()) throw badRequest('Provide exactly one credential');
    const link = readExportToken(ctx.config.jwtSecret, token);
    if (!link || !(await askerStillAllowed(ctx.db, link))) throw unauthorized('Invalid export link');
    if (link.expiresAt.getTime() <= Date.now()) throw unauthorized('Export link expired');
    await ctx.quotas.request(link.orgId);
    return contactsCsv(ctx.db, link.orgId, parse(filterInput, link.filter));
  },
});

const hasToken = (input: unknown) => typeof input === 'object' && input !== null && 'token' in input;

/** `GET /contacts/export`: through an export link when the query carries its `token`, else with the caller's credential. */
export const exportContacts: Operation<Record<string, never>, Download> = Object.assign(
  (ctx: Parameters<typeof exportForCaller>[0], input: unknown, params: Record<string, never>) =>
    (hasToken(input) ? exportThroughLink : exportForCaller)(ctx, input, params),
  // Described as the caller's export: the link's `token` stands in for the credential.
  { access: exportForCaller.access, input: exportForCaller.input },
);

export interface ExportLinkDto {
  url: string;
  path: string;
  expiresAt: string;
}

const askerOf = (caller: Caller): ExportLink['asker'] =>
  caller.via === 'apiKey' ? { kind: 'apiKey', id: caller.apiKeyId! } : { kind: 'user', id: caller.userId! };

/** A link to download the export of `filter` for the next 10 minutes, without a credential (GraphQL's door to the export). */
export const exportLink = operation({
  access: READ,
  input: filterInput,
  async run(ctx, filter): Promise<ExportLinkDto> {
    const expiresAt = new Date(Date.now() + EXPORT_LINK_LIFETIME_MS);
    const token = exportToken(ctx.config.jwtSecret, { orgId: ctx.caller.orgId, asker: askerOf(ctx.caller), filter, expiresAt });
    if (!token) throw badRequest('filter is too long for an export link');
    const path = `/contacts/export?token=${token}`;
    return { url: `${ctx.config.publicUrl}${path}`, path, expiresAt: expiresAt.toISOString() };
  },
});
