import { Readable } from 'node:stream';
import { z } from 'zod';
import type { Db } from '../../db/database.js';
import { tenant, type Tenant } from '../../db/tenant.js';
import type { Download } from '../../lib/download.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import { parse } from '../../lib/validation.js';
import { operation, type Operation } from '../../operation.js';
import type { Caller } from '../auth/caller.js';
import { CONSENT_CHANNELS, exportHeader, GROUPS_COLUMN, LIST_SEPARATOR } from './csv-columns.js';
import { csvRecord } from './csv-records.js';
import { groupsCell, isoTimes } from './export-cells.js';
import { EXPORT_LINK_LIFETIME_MS, exportToken, readExportToken, type ExportLink } from './export-links.js';
import { filterInput, matching, READ, type ContactFilter } from './service.js';

/**
 * The contacts export (platform.md, "Contacts in bulk"): the contacts a list filter matches as CSV,
 * in the vocabulary of csv-columns.ts (so a file exported imports again unchanged), newest first.
 * Read in keyset pages of `PAGE_ROWS`, each a short query of its own, the next one read while the
 * client takes this one: memory holds two pages whatever the organization's size, and a client that
 * reads slowly holds no connection while it does. A page's groups come from the memberships read in
 * the same order beside it (see `pageQuery`); bench/export.ts measures the whole.
 */

const PAGE_ROWS = 5000;

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
 * The memberships from where a page starts, one row of group ids per contact, in the list's order
 * (the index contact_groups_list_order_idx holds them so). Merge-joined with the page's contacts, it
 * is read as far as the page goes: a whole export reads each membership once at most, where a lookup
 * per contact read a random page of the memberships' key each. The price is a filter that matches
 * few contacts far apart: their pages still read the memberships of every contact between them.
 */
function membershipsFrom(t: Tenant, after: Keyset | null) {
  const q = t
    .scoped('contact_groups')
    .select('contact_groups.contact_created_at', 'contact_groups.contact_id', t.db.raw(`string_agg(contact_groups.group_id::text, ',') AS group_ids`))
    .groupBy('contact_groups.contact_created_at', 'contact_groups.contact_id')
    .orderBy([
      { column: 'contact_groups.contact_created_at', order: 'desc' },
      { column: 'contact_groups.contact_id', order: 'desc' },
    ]);
  if (after) q.whereRaw('(contact_groups.contact_created_at, contact_groups.contact_id) < (?::timestamptz, ?::uuid)', [after.createdAt, after.id]);
  return q;
}

/**
 * One page of rows as arrays, every value already text but the times (seconds since the epoch, made
 * ISO 8601 here: cheaper than Postgres's `to_char`) and the groups (their ids, named here: a join to
 * the groups for their names cost as much as the memberships). The last value is the row's
 * `created_at` in full precision, where the next page starts.
 */
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
    'memberships.group_ids',
    ...CONSENT_CHANNELS.map((channel) => db.raw(`CASE WHEN (contacts.unsubscribed -> ?::text) IS NULL THEN 'subscribed' ELSE 'unsubscribed' END`, [channel])),
    // A string as it is; a number or a boolean as its JSON text, which an import reads back as one.
    ...keys.map((key) => db.raw('contacts.attributes ->> ?::text', [key])),
    db.raw(`date_part('epoch', contacts.created_at)`),
    db.raw(`date_part('epoch', contacts.updated_at)`),
    db.raw('contacts.created_at::text'),
  ];
  const q = t
    .scoped('contacts')
    .modify(matching(t, filter))
    .leftJoin(membershipsFrom(t, after).as('memberships'), function () {
      this.on('memberships.contact_created_at', 'contacts.created_at').andOn('memberships.contact_id', 'contacts.id');
    })
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

type Row = (string | number | null)[];

/** Where the groups are in a row (as in the header: before the attributes, so the same for any keys). */
const GROUPS = exportHeader([]).indexOf(GROUPS_COLUMN);

/** Writes a page's rows as CSV (`width` cells each: the header's), naming groups and times as it goes. */
function pageWriter(width: number, names: Map<string, string>): (rows: Row[]) => string {
  const groups = groupsCell(names);
  const iso = isoTimes();
  return (rows) => {
    let text = '';
    for (const row of rows) {
      const ids = row[GROUPS] as string | null;
      row[GROUPS] = ids && groups(ids);
      row[width - 2] = iso(row[width - 2] as number);
      row[width - 1] = iso(row[width - 1] as number);
      text += csvRecord(row as string[], width);
    }
    return text;
  };
}

/**
 * The file, a page at a time, the next page read while this one is sent: the header row comes with
 * the first page, so that the work that can fail (the first queries) is done before anything is sent.
 */
async function* csvPages(db: Db, orgId: string, filter: ContactFilter): AsyncGenerator<string> {
  const t = tenant(db, orgId);
  const [keys, names] = await Promise.all([attributeKeys(t, filter), groupNames(t)]);
  const width = exportHeader(keys).length;
  const pageText = pageWriter(width, names);
  let head = csvRecord(exportHeader(keys));
  let next: Promise<Row[]> | null = pageQuery(t, filter, keys, null);
  while (next) {
    const rows: Row[] = await next;
    const last = rows[rows.length - 1];
    // The next page is on its way while this one is written out.
    next = rows.length === PAGE_ROWS ? pageQuery(t, filter, keys, { createdAt: last![width] as string, id: last![0] as string }) : null;
    // A page the client never takes still settles (its error is the generator's to throw, not an unhandled one).
    next?.catch(() => undefined);
    yield head + pageText(rows);
    head = '';
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
