/**
 * A contact's attributes as the editor holds them: one row per key, with the value's JSON type, so
 * a number stays a number and `true` a boolean. `changeOf` turns the rows back into what the API
 * takes: the whole object on create; on update (the server merges), the keys set or changed and
 * `null` for each stored key the rows no longer hold, which is how the API removes a key.
 */
import { formatNumber } from '../../lib/format';

export type AttributeType = 'text' | 'number' | 'boolean';

export interface AttributeRow {
  /** A local id, so React keeps each row's inputs while keys are typed. */
  id: number;
  key: string;
  type: AttributeType;
  /** The text, the number (or '' while its input is empty) or `true`/`false`. */
  value: string | number | boolean;
}

export type AttributeValue = string | number | boolean;

let nextId = 1;

export function newRow(): AttributeRow {
  return { id: nextId++, key: '', type: 'text', value: '' };
}

export function typeOf(value: unknown): AttributeType {
  return typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'text';
}

/** The rows of a stored attributes object, in its order. */
export function rowsOf(attributes: Record<string, unknown>): AttributeRow[] {
  return Object.entries(attributes).map(([key, value]) => ({ id: nextId++, key, type: typeOf(value), value: value as AttributeValue }));
}

/** A row's value as its type says; a number input left empty is sent as typed, for the server to judge. */
function valueOf(row: AttributeRow): AttributeValue {
  if (row.type === 'boolean') return row.value === true || row.value === 'true';
  if (row.type === 'number') return typeof row.value === 'number' ? row.value : String(row.value);
  return String(row.value);
}

/** Rows left wholly blank (no key, no value) are not attributes: the editor's spare row. */
const isBlank = (row: AttributeRow) => row.key === '' && (row.value === '' || row.type === 'boolean');

/** The rows as a new contact's attributes. */
export function attributesOf(rows: AttributeRow[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const row of rows) if (!isBlank(row)) out[row.key] = valueOf(row);
  return out;
}

/**
 * What an update sends for the rows, given the stored attributes: changed or new keys with their
 * values, removed keys as `null`; `undefined` when nothing changed.
 */
export function changeOf(stored: Record<string, unknown>, rows: AttributeRow[]): Record<string, AttributeValue | null> | undefined {
  const next = attributesOf(rows);
  const change: Record<string, AttributeValue | null> = {};
  for (const key of Object.keys(stored)) if (!(key in next)) change[key] = null;
  for (const [key, value] of Object.entries(next)) if (stored[key] !== value) change[key] = value;
  return Object.keys(change).length ? change : undefined;
}

/** A stored value as the page shows it. */
export function shownValue(value: unknown): string {
  if (typeof value === 'number') return formatNumber(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}
