import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import { z } from 'zod';
import { copyOut } from '../../db/copy-out.js';
import type { Db } from '../../db/database.js';
import { tenant, type Tenant } from '../../db/tenant.js';
import type { Download } from '../../lib/download.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import { parse } from '../../lib/validation.js';
import { operation, type Operation } from '../../operation.js';
import type { Caller } from '../auth/caller.js';
import { exportHeader } from './csv-columns.js';
import { attributeKeys, csvPage, pageEnd, type Keyset, type PageRange } from './export-sql.js';
import { EXPORT_LINK_LIFETIME_MS, exportToken, readExportToken, type ExportLink } from './export-links.js';
import { filterInput, READ, type ContactFilter } from './service.js';

/**
 * The contacts export (platform.md, "Contacts in bulk"): the contacts a list filter matches as CSV,
 * in the vocabulary of csv-columns.ts (so a file exported imports again unchanged), newest first.
 * Postgres writes the file (`COPY ... TO STDOUT (FORMAT csv)` of export-sql.ts's `csvPage`), in
 * keyset pages of `PAGE_ROWS`, each a short statement of its own: memory holds a few pages whatever
 * the organization's size, and a client that reads slowly holds no connection while it does.
 * bench/export.ts measures the whole.
 */

/** Pages read side by side while the one before them is sent. */
const READ_AHEAD = 2;

/**
 * The pages in order, each page's end read while the page before it is (the first from now on).
 * Each page is bounded by keys read before it, so pages read side by side (each in its own
 * snapshot) neither repeat a contact nor skip one that was there throughout; the first is open
 * above, for contacts added since.
 */
function pageRanges(t: Tenant, filter: ContactFilter): AsyncGenerator<PageRange> {
  type End = { created_at: string; id: string; full_page: boolean };
  const endAfter = (after: Keyset | null) => {
    const end: Promise<End | undefined> = pageEnd(t, filter, after).then((rows: End[]) => rows[0]);
    // An end read ahead and never asked for still settles (its error is for whoever awaits it).
    end.catch(() => undefined);
    return end;
  };
  let next: Promise<End | undefined> | null = endAfter(null);
  return (async function* () {
    let after: Keyset | null = null;
    while (next) {
      const end: End | undefined = await next;
      if (!end) return;
      const last: Keyset = { createdAt: end.created_at, id: end.id };
      next = end.full_page ? endAfter(last) : null;
      yield { after, last };
      after = last;
    }
  })();
}

/**
 * The file as Postgres writes it, page after page, the next `READ_AHEAD` read while one is sent: the
 * header row comes with the first page, so that the work that can fail (the first statements) is
 * done before anything is sent.
 */
async function* csvFile(db: Db, orgId: string, filter: ContactFilter): AsyncGenerator<Buffer> {
  const t = tenant(db, orgId);
  const ranges = pageRanges(t, filter);
  try {
    const keys = ((await attributeKeys(t, filter)) as { key: string }[]).map((r) => r.key);
    const reading: Promise<Buffer>[] = [];
    const readAhead = async () => {
      while (reading.length < READ_AHEAD) {
        const range = await ranges.next();
        if (range.done) return;
        const page = copyOut(db, csvPage(t, filter, keys, range.value));
        // A page the client never takes still settles (its error is the generator's to throw, not an unhandled one).
        page.catch(() => undefined);
        reading.push(page);
      }
    };
    let head: Buffer | null = Buffer.from(stringify([exportHeader(keys)], { record_delimiter: 'unix' }));
    await readAhead();
    if (!reading.length) yield head;
    while (reading.length) {
      const page = await reading.shift()!;
      await readAhead();
      yield head ? Buffer.concat([head, page]) : page;
      head = null;
    }
  } finally {
    await ranges.return(undefined);
  }
}

function contactsCsv(db: Db, orgId: string, filter: ContactFilter): Download {
  return {
    contentType: 'text/csv; charset=utf-8',
    filename: `contacts-${new Date().toISOString().slice(0, 10)}.csv`,
    // Pulled a page at a time as the response drains (the stream's buffer holds at most one page).
    stream: Readable.from(csvFile(db, orgId, filter), { objectMode: false, highWaterMark: 1 }),
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
