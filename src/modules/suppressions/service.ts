import type { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import type { PageRequest } from '../../db/pagination.js';
import { paginateAs } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { isEmailAddress } from '../../lib/addresses.js';
import { badRequest, conflict, payloadTooLarge } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { detectDelimiter } from '../contact-imports/options.js';
import { record } from '../audit/record.js';

/**
 * The suppression list: the email addresses an organization does not send to. Admins add one by
 * hand, import a CSV of them, or remove one (sending to it is allowed again); bounces and complaints
 * add theirs elsewhere. Every member reads it. Addresses are stored trimmed and lower-case, once per
 * organization and channel.
 */

const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;
const TABLE = 'suppressions';
const COLUMNS = ['suppressions.id', 'suppressions.channel', 'suppressions.address', 'suppressions.reason', 'suppressions.bounce_type', 'suppressions.detail', 'suppressions.created_at'];
const UNIQUE_KEY = ['organization_id', 'channel', 'address'];

/** The largest CSV an import takes. */
export const MAX_IMPORT_BYTES = 1024 * 1024;
/** Rows per insert statement of an import. */
const INSERT_CHUNK = 1000;
/** The invalid lines an import's answer names; the rest are only counted. */
const INVALID_SHOWN = 100;
const DETAIL_MAX = 500;

interface SuppressionRow {
  id: string;
  channel: 'email';
  address: string;
  reason: 'manual' | 'import' | 'bounce' | 'complaint' | 'erased';
  bounce_type: 'hard' | 'soft' | null;
  detail: string | null;
  created_at: Date;
}

const toDto = (row: SuppressionRow) => ({
  _id: row.id,
  channel: row.channel,
  address: row.address,
  reason: row.reason,
  bounceType: row.bounce_type,
  detail: row.detail,
  createdAt: row.created_at.toISOString(),
});
export type SuppressionDto = ReturnType<typeof toDto>;

/** `LIKE` pattern of a substring, its wildcards taken literally. */
const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export const list = operation({
  access: READ,
  input: z.strictObject({ search: z.string().trim().max(254).optional() }),
  async run(ctx, filter, page: PageRequest) {
    const query = tenant(ctx.db, ctx.caller.orgId).scoped(TABLE).select(COLUMNS);
    // Addresses are stored lower-case: the pattern is too.
    if (filter.search) query.whereRaw('suppressions.address LIKE ?', [containing(filter.search)]);
    return paginateAs(query, TABLE, page, toDto);
  },
});

const detail = () => z.string().trim().max(DETAIL_MAX).nullable().optional();

/** Suppresses an address by hand (`manual`); one already on the list is a 409 naming it. */
export const add = operation({
  access: WRITE,
  input: z.strictObject({ address: v.recipientEmail(), detail: detail() }),
  check: async (ctx, input) => v.dotlessRefused('address', input.address, ctx.config.blockPrivateHosts),
  async run(ctx, input) {
    return ctx.db.transaction(async (trx) => {
      const [row] = (await trx(TABLE)
        .insert({ organization_id: ctx.caller.orgId, channel: 'email', address: input.address, reason: 'manual', detail: input.detail || null })
        .onConflict(UNIQUE_KEY)
        .ignore()
        .returning(COLUMNS)) as SuppressionRow[];
      if (!row) throw conflict(`${input.address} is already suppressed`);
      await record(trx, ctx, { action: 'suppression.added', resourceType: 'suppression', resourceId: row.id, details: { address: row.address, reason: row.reason } });
      return toDto(row);
    });
  },
});

/** Takes an address off the list: sending to it is allowed again. */
export const remove = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const row = await t.owned<SuppressionRow>(TABLE, id, COLUMNS, { forUpdate: true });
      await t.scoped(TABLE).where(`${TABLE}.id`, id).delete();
      await record(trx, ctx, { action: 'suppression.removed', resourceType: 'suppression', resourceId: id, details: { address: row.address, reason: row.reason } });
    });
    return { message: 'Suppression removed' };
  },
});

/** The CSV of an import, as either door gives it: the REST body, or the GraphQL argument as a stream. */
export interface SuppressionFile {
  stream: Readable;
}

/** The whole file as text, refused (413) past the limit. */
async function readFile(file: SuppressionFile): Promise<string> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of file.stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    bytes += buf.length;
    if (bytes > MAX_IMPORT_BYTES) throw payloadTooLarge(`csv must be at most ${MAX_IMPORT_BYTES / 1024 / 1024} MiB`);
    pieces.push(buf);
  }
  return Buffer.concat(pieces).toString('utf8');
}

/** Text as Postgres stores it: no NUL, no unpaired surrogate. */
const storable = (text: string) => text.replace(/\0/g, '').replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

interface ParsedImport {
  addresses: { address: string; detail: string | null }[];
  invalid: { line: number; value: string }[];
}

/**
 * The addresses of a CSV with a header row: the column named `email` or `address` (any case), and
 * an optional `detail` or `reason` column. Lines whose address is not an email address are named.
 */
function parseImport(ctx: AuthedContext, csv: string): ParsedImport {
  const text = csv.replace(/^\uFEFF/, '');
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parseCsv(text, { delimiter: detectDelimiter(text.split(/\r?\n/, 1)[0] ?? ''), info: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true }) as unknown as typeof records;
  } catch (err) {
    throw badRequest(`csv could not be read: ${(err as Error).message}`);
  }
  const [header, ...rows] = records;
  const headers = (header?.record ?? []).map((h) => h.trim().toLowerCase());
  const addressAt = headers.findIndex((h) => h === 'email' || h === 'address');
  if (addressAt < 0) throw badRequest('csv must start with a header row naming an `email` or `address` column');
  const detailAt = headers.findIndex((h) => h === 'detail' || h === 'reason');
  const rules = { dotlessDomains: !ctx.config.blockPrivateHosts };
  const parsed: ParsedImport = { addresses: [], invalid: [] };
  for (const { record: fields, info } of rows) {
    const value = (fields[addressAt] ?? '').trim();
    if (!isEmailAddress(value, rules)) {
      parsed.invalid.push({ line: info.lines, value: storable(value).slice(0, 254) });
      continue;
    }
    const note = detailAt >= 0 ? storable((fields[detailAt] ?? '').trim()).slice(0, DETAIL_MAX) : '';
    parsed.addresses.push({ address: value.toLowerCase(), detail: note || null });
  }
  return parsed;
}

/**
 * Adds a CSV's addresses (`import`) in one transaction; those already on the list (or twice in the
 * file) are counted, not changed. Answers the counts and the first invalid lines.
 */
export const importCsv = operation({
  access: WRITE,
  input: z.strictObject({}),
  async run(ctx, _input, { file }: { file: SuppressionFile }) {
    const csv = await readFile(file);
    if (!csv.trim()) throw badRequest('csv must not be empty');
    const { addresses, invalid } = parseImport(ctx, csv);
    const orgId = ctx.caller.orgId;
    const added = await ctx.db.transaction(async (trx) => {
      let inserted = 0;
      for (let i = 0; i < addresses.length; i += INSERT_CHUNK) {
        const rows = addresses.slice(i, i + INSERT_CHUNK).map((a) => ({ organization_id: orgId, channel: 'email', address: a.address, reason: 'import', detail: a.detail }));
        inserted += ((await trx(TABLE).insert(rows).onConflict(UNIQUE_KEY).ignore().returning('id')) as unknown[]).length;
      }
      // An import that added nothing changed nothing: no entry, as for any such action.
      if (inserted) {
        const details = { reason: 'import', added: inserted, alreadySuppressed: addresses.length - inserted, invalid: invalid.length };
        await record(trx, ctx, { action: 'suppression.imported', resourceType: 'suppression', resourceId: null, details });
      }
      return inserted;
    });
    return { added, alreadySuppressed: addresses.length - added, invalidCount: invalid.length, invalid: invalid.slice(0, INVALID_SHOWN) };
  },
});
