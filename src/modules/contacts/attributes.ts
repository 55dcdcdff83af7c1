import { z } from 'zod';
import type { FieldProblem } from '../../lib/errors.js';

/**
 * A contact's `attributes` (platform.md, "Personalised messages"): a flat JSON object of at most 50
 * keys and 8 KiB of JSON text, keys of 1-50 letters, digits or underscores, values strings, numbers
 * or booleans. Every rule about them lives here: the change a create or an update gives (a `null`
 * removes its key), the merge into the stored object, and what a list filter matches.
 */
export const MAX_KEYS = 50;
/** Of the compact JSON text (`JSON.stringify`), in UTF-8 bytes. */
export const MAX_BYTES = 8 * 1024;
const KEY = /^[A-Za-z0-9_]{1,50}$/;

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;
/** What a create or an update gives: a value sets its key, `null` removes it. */
export type AttributesChange = Record<string, AttributeValue | null>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isValue = (v: unknown): v is AttributeValue =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** A few keys for a message, quoted (so any character reads safely) and cut short. */
function listed(keys: string[]): string {
  const shown = keys.slice(0, 5).map((k) => JSON.stringify(k.length > 50 ? `${k.slice(0, 50)}...` : k));
  return keys.length > 5 ? `${shown.join(', ')} and ${keys.length - 5} more` : shown.join(', ');
}

const jsonBytes = (attributes: Attributes) => Buffer.byteLength(JSON.stringify(attributes), 'utf8');

/** The keys and values of an object that break their rules, as messages that follow the field name. */
function entryProblems(value: Record<string, unknown>, allowNull: boolean): string[] {
  const entries = Object.entries(value);
  const badKeys = entries.filter(([k]) => !KEY.test(k)).map(([k]) => k);
  const badValues = entries.filter(([k, v]) => KEY.test(k) && !isValue(v) && !(allowNull && v === null)).map(([k]) => k);
  return [
    ...(badKeys.length ? [`keys must be 1-50 letters, digits or underscores: ${listed(badKeys)}`] : []),
    ...(badValues.length ? [`values must be strings, numbers or booleans${allowNull ? ' (null removes a key)' : ''}: ${listed(badValues)}`] : []),
  ];
}

/** The limits on a whole attributes object; `after` words them for the result of a merge. */
function limitProblems(attributes: Attributes, after = ''): string[] {
  const problems: string[] = [];
  const keys = Object.keys(attributes).length;
  if (keys > MAX_KEYS) problems.push(`must have at most ${MAX_KEYS} keys${after} (${after ? 'would have' : 'has'} ${keys})`);
  const bytes = jsonBytes(attributes);
  if (bytes > MAX_BYTES) problems.push(`must be at most 8 KiB of JSON${after} (${after ? 'would be' : 'is'} ${bytes} bytes)`);
  return problems;
}

/** The stored object after `change`: its values set, its nulls removed (stored keys keep their place). */
export function merge(stored: Attributes, change: AttributesChange): Attributes {
  // A Map, then `fromEntries`: a key such as `__proto__` is an own key like any other, never a prototype.
  const merged = new Map(Object.entries(stored));
  for (const [key, value] of Object.entries(change)) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  return Object.fromEntries(merged);
}

/**
 * The `attributes` of a create or an update, checked on its own: keys and values, and the limits on
 * the keys it sets (a merge keeps all of those, so a change over the limits is over them after any).
 */
export const attributesChange = z.custom<AttributesChange>().superRefine((value, ctx) => {
  if (!isObject(value)) return ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
  const problems = entryProblems(value, true);
  if (!problems.length) problems.push(...limitProblems(merge({}, value as AttributesChange)));
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
});

/** The limits on the result of merging `change` into the stored attributes, as problems of `attributes`. */
export function mergeProblems(stored: Attributes, change: AttributesChange): FieldProblem[] {
  return limitProblems(merge(stored, change), ' once merged with the stored ones').map((message) => ({ field: 'attributes', message: `attributes ${message}` }));
}

/** A list filter: key -> value, every one to match; more keys than a contact can have is refused. */
export const attributesFilter = z.custom<Attributes>().superRefine((value, ctx) => {
  if (!isObject(value)) return ctx.addIssue({ code: 'custom', message: 'must be a JSON object of key -> value' });
  const problems = entryProblems(value, false);
  const keys = Object.keys(value).length;
  if (keys > MAX_KEYS) problems.push(`must have at most ${MAX_KEYS} keys (has ${keys})`);
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
});

const PREFIX = 'attributes.';

/**
 * The REST door names each filter `attributes.<key>=<value>` in the query string: gathered here into
 * the `attributes` object the GraphQL door gives, so both are checked and run alike.
 */
export function gatherQueryFilters(raw: unknown): unknown {
  if (!isObject(raw)) return raw;
  const entries = Object.entries(raw);
  const dotted = entries.filter(([k]) => k.startsWith(PREFIX));
  if (!dotted.length) return raw;
  const attributes = Object.fromEntries(dotted.map(([k, v]) => [k.slice(PREFIX.length), v]));
  // `attributes` given as well (as `?attributes=x`) is kept, to be refused as what it is.
  return Object.fromEntries([...entries.filter(([k]) => !k.startsWith(PREFIX)), ['attributes', 'attributes' in raw ? raw.attributes : attributes]]);
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * The stored values a filter value matches. A string (all the REST door has) matches the same
 * string, the number it reads as (JSON number syntax: `30`, `-1.5`, `2e3`) and the boolean `true` or
 * `false` names; a number or a boolean (GraphQL) matches that number or boolean.
 */
export function matchedValues(value: AttributeValue): AttributeValue[] {
  if (typeof value !== 'string') return [value];
  const out: AttributeValue[] = [value];
  if (JSON_NUMBER.test(value) && Number.isFinite(Number(value))) out.push(Number(value));
  if (value === 'true' || value === 'false') out.push(value === 'true');
  return out;
}

/**
 * The filter as containment tests (`attributes @> <json>`, which the organization's GIN index
 * answers): one group per key, all to hold, each holding when one of its objects is contained.
 */
export function containments(filter: Attributes): string[][] {
  // A computed key is an own property whatever its name, `__proto__` included.
  return Object.entries(filter).map(([key, value]) => matchedValues(value).map((v) => JSON.stringify({ [key]: v })));
}
