import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { isEmailAddress } from '../../lib/addresses.js';
import { toE164 } from '../../lib/phone.js';
import { isTimeZone, NOT_A_ZONE, phoneTimeZone } from '../../lib/time-zones.js';
import type { Channel } from '../../delivery/types.js';
import { CHANNELS } from '../../delivery/types.js';
import { MAX_BYTES, MAX_KEYS, type Attributes } from '../contacts/attributes.js';
import { isSubscribedCell, isUnsubscribedCell, LIST_SEPARATOR } from '../contacts/csv-columns.js';
import type { Layout } from './options.js';

/**
 * One row of a file as a contact to merge, judged by the rules a single create follows (contacts'
 * service): the same address rules, the phone read with the row's country code else the
 * organization's country, the same limits. A row that breaks one is a row error, and the others go on.
 */

/** A row ready for the staging table. */
export interface StagedRow {
  line: number;
  /**
   * The match address: the row's `matchBy` field (lower-case email or E.164 phone), else its other
   * one, else `#<line>`, which matches nothing. A key holding `@` is an email, any other a phone.
   */
  matchKey: string;
  /** The id the contact takes if the row creates one: time-ordered, so a batch's inserts append to the key's index. */
  id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  countryCode: string | null;
  company: string | null;
  tags: string[];
  attributes: Attributes;
  /** Channels the row says the contact left. */
  leaves: Channel[];
  /** The row's time zone (`timeZoneSet`), else its phone number's country's when that has one. */
  timeZone: string | null;
  timeZoneSet: boolean;
}

export interface RowError {
  line: number;
  /** The column's header, when one column is at fault. */
  column?: string;
  message: string;
}

export interface RowRules {
  layout: Layout;
  orgCountry: string | null;
  /** Domains without a dot are refused where private relays are blocked (`BLOCK_PRIVATE_HOSTS`). */
  dotlessDomains: boolean;
}

const COUNTRY_CODE = /^(\+\d{1,4}|[A-Za-z]{2})$/;
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A cell as an attribute value: `true`/`false` and numbers written as JSON writes them (`42`, not `042`) read as such. */
function attributeValue(cell: string): string | number | boolean {
  if (cell === 'true' || cell === 'false') return cell === 'true';
  if (JSON_NUMBER.test(cell)) {
    const n = Number(cell);
    if (Number.isFinite(n) && String(n) === cell) return n;
  }
  return cell;
}

/** Ids whose random bytes one `randomFillSync` gives: one call per id (the `uuid` package's own) took a fifth of a file's staging. */
const IDS_PER_FILL = 1024;
const randomPool = new Uint8Array(16 * IDS_PER_FILL);
let poolNext = IDS_PER_FILL;
/** The last id's time and sequence: ids made in the same millisecond count up, as `uuid`'s own v7 state does. */
const idClock = { msecs: -Infinity, seq: 0 };

/** A time-ordered id (UUIDv7), each greater than the one before it in this process. */
function timeOrderedId(): string {
  if (poolNext === IDS_PER_FILL) {
    randomFillSync(randomPool);
    poolNext = 0;
  }
  const random = randomPool.subarray(poolNext * 16, ++poolNext * 16);
  const now = Date.now();
  if (now > idClock.msecs) {
    idClock.msecs = now;
    // As `uuid` starts a millisecond's sequence: 31 random bits.
    idClock.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    idClock.seq = (idClock.seq + 1) | 0;
    if (idClock.seq === 0) idClock.msecs++;
  }
  return uuidv7({ random, msecs: idClock.msecs, seq: idClock.seq });
}

const tooLong = (line: number, column: string, max: number): RowError => ({ line, column, message: `${column} must be at most ${max} characters` });

/** The row as a contact to merge, or the first problem found in it. */
export function stageRow(record: string[], line: number, rules: RowRules): StagedRow | RowError {
  const { columns, matchBy } = rules.layout;
  if (record.length !== columns.length) return { line, message: `has ${record.length} fields, the header has ${columns.length}` };
  const row: StagedRow = { line, matchKey: '', id: '', name: null, email: null, phone: null, countryCode: null, company: null, tags: [], attributes: {}, leaves: [], timeZone: null, timeZoneSet: false };
  let rawPhone: { cell: string; header: string } | null = null;
  const leaves = new Set<Channel>();
  for (let i = 0; i < columns.length; i++) {
    const { header, target } = columns[i]!;
    const cell = record[i]!.trim();
    // Postgres text (and JSON text) cannot hold a NUL: such a row is reported, never copied.
    if (cell.includes('\0')) return { line, column: header, message: `${header} must not contain a NUL character` };
    if (!target || !cell) continue;
    switch (target.kind) {
      case 'field':
        switch (target.field) {
          case 'name':
            if (cell.length > 100) return tooLong(line, header, 100);
            row.name = cell;
            break;
          case 'email':
            if (cell.length > 254 || !isEmailAddress(cell, { dotlessDomains: rules.dotlessDomains })) return { line, column: header, message: `${header} must be a valid email` };
            row.email = cell.toLowerCase();
            break;
          case 'phone':
            rawPhone = { cell, header };
            break;
          case 'countryCode':
            if (!COUNTRY_CODE.test(cell)) return { line, column: header, message: `${header} must be a calling code such as +254 or a country code such as KE` };
            row.countryCode = cell;
            break;
          case 'organization':
            if (cell.length > 100) return tooLong(line, header, 100);
            row.company = cell;
            break;
          case 'tags': {
            const tags = cell.split(LIST_SEPARATOR).map((t) => t.trim()).filter(Boolean);
            if (tags.some((t) => t.length > 50)) return { line, column: header, message: `${header}: each tag must be at most 50 characters` };
            row.tags = [...new Set([...row.tags, ...tags])];
            break;
          }
          case 'timezone':
            if (!isTimeZone(cell)) return { line, column: header, message: `${header} ${NOT_A_ZONE}` };
            row.timeZone = cell;
            row.timeZoneSet = true;
            break;
        }
        break;
      case 'attribute':
        row.attributes[target.key] = attributeValue(cell);
        break;
      case 'subscription':
        if (isUnsubscribedCell(cell)) leaves.add(target.channel);
        else if (!isSubscribedCell(cell)) return { line, column: header, message: `${header} must be subscribed or unsubscribed` };
        break;
      case 'unsubscribed':
        if (isUnsubscribedCell(cell)) CHANNELS.forEach((c) => leaves.add(c));
        else if (!isSubscribedCell(cell)) return { line, column: header, message: `${header} must be true or false` };
        break;
    }
  }
  if (rawPhone) {
    row.phone = toE164(rawPhone.cell, { countryCode: row.countryCode, orgCountry: rules.orgCountry });
    if (!row.phone) return { line, column: rawPhone.header, message: `${rawPhone.header} must be a valid phone number` };
  }
  if (!row.email && !row.phone) return { line, message: 'email or phone is required' };
  if (!row.timeZoneSet) row.timeZone = phoneTimeZone(row.phone);
  if (row.tags.length > 50) return { line, message: 'must have at most 50 tags' };
  const keys = Object.keys(row.attributes).length;
  if (keys > MAX_KEYS) return { line, message: `attributes must have at most ${MAX_KEYS} keys (has ${keys})` };
  if (keys && Buffer.byteLength(JSON.stringify(row.attributes), 'utf8') > MAX_BYTES) return { line, message: 'attributes must be at most 8 KiB of JSON' };
  row.leaves = [...leaves];
  // A row without the `matchBy` field is matched by its other one: an exported contact with a phone
  // and no email (an email column in the file) must find itself again, not come back as a copy.
  row.matchKey = (matchBy === 'email' ? (row.email ?? row.phone) : (row.phone ?? row.email)) ?? `#${line}`;
  row.id = timeOrderedId();
  return row;
}

export const isRowError = (r: StagedRow | RowError): r is RowError => 'message' in r;

// COPY's text format: a tab between fields, `\N` for null, and backslash escapes.
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const copyText = (value: string) => value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!);
const copyField = (value: string | null) => (value === null ? '\\N' : copyText(value));
/** A text[] literal: every element quoted, quotes and backslashes escaped. */
const arrayLiteral = (items: string[]) => `{${items.map((t) => `"${t.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;

/** The row as a line of `COPY contact_import_rows (...) FROM STDIN` (text format), in `STAGING_COLUMNS` order. */
export function copyLine(orgId: string, importId: string, row: StagedRow): string {
  return [
    orgId,
    importId,
    String(row.line),
    copyText(row.matchKey),
    row.id,
    copyField(row.name),
    copyField(row.email),
    copyField(row.phone),
    copyField(row.countryCode),
    copyField(row.company),
    copyText(arrayLiteral(row.tags)),
    copyText(JSON.stringify(row.attributes)),
    copyText(arrayLiteral(row.leaves)),
    copyField(row.timeZone),
    row.timeZoneSet ? 't' : 'f',
  ].join('\t') + '\n';
}

export const STAGING_COLUMNS = 'organization_id, import_id, line, match_key, id, name, email, phone, country_code, company, tags, attributes, leaves, time_zone, time_zone_set';
