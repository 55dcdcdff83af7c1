/**
 * Shared assertions and builders for the contacts, groups, pagination and DataLoader tests.
 */
import { randomUUID } from 'node:crypto';
import { ERROR_KEYS, sortedKeys as sorted } from './expect.js';
import type { Client, Credential, Reply } from './herald.js';

export const FORBIDDEN_BODY = { statusCode: 403, message: 'Insufficient permissions', error: 'Forbidden' };
export const NOT_FOUND_BODY = { statusCode: 404, message: 'Resource not found', error: 'Not Found' };
export const CONTACT_KEYS = [
  'ServiceOrganization',
  '_id',
  'attributes',
  'countryCode',
  'createdAt',
  'email',
  'groups',
  'name',
  'organization',
  'phone',
  'subscriptions',
  'tags',
  'timezone',
  'updatedAt',
];
export const GROUP_KEYS = ['_id', 'color', 'contactCount', 'createdAt', 'description', 'name', 'organization', 'updatedAt'];

export { ERROR_KEYS, expectError, sortedKeys as sorted } from './expect.js';

/**
 * A 400 validation failure: `{ statusCode, message, error, details }`, each detail naming its field,
 * `message` joining the details with `; `, and `fields` (exact names or patterns) among those named
 * (expect.ts's `expectValidation` asks for exactly these fields).
 */
export function expectValidation(res: Reply, fields: (string | RegExp)[]) {
  expect({ status: res.status, keys: sorted(res.body ?? {}) }).toEqual({ status: 400, keys: ['details', ...ERROR_KEYS].sort() });
  expect(res.body.statusCode).toBe(400);
  expect(res.body.error).toBe('Bad Request');
  const details = res.body.details as { field: string; message: string }[];
  expect(Array.isArray(details)).toBe(true);
  expect(details.length).toBeGreaterThan(0);
  for (const d of details) {
    expect(sorted(d)).toEqual(['field', 'message']);
    expect(d.message.startsWith(d.field)).toBe(true);
  }
  expect(res.body.message).toBe(details.map((d) => d.message).join('; '));
  const named = details.map((d) => d.field);
  for (const f of fields) {
    if (typeof f === 'string') expect(named).toContain(f);
    else expect(named.some((n) => f.test(n))).toBe(true);
  }
}

/** A GraphQL error with the REST status and code in its extensions, and no data. */
export function expectGqlError(res: Reply, statusCode: number, code: string, message?: string) {
  const errors = res.body?.errors;
  expect(Array.isArray(errors)).toBe(true);
  const err = errors[0];
  expect({ statusCode: err.extensions?.statusCode, code: err.extensions?.code }).toEqual({ statusCode, code });
  if (message !== undefined) expect(err.message).toBe(message);
  expect(res.body.data ?? null).toBeNull();
  return err;
}

let counter = 0;
export const colorClass = () => 'bg-blue-500 text-white';

/** Creates a group through the REST door and returns its body; throws unless 201. */
export async function makeGroup(api: Client, cred: Credential, overrides: Record<string, unknown> = {}) {
  const res = await api.post('/groups', { name: `Group ${++counter} ${randomUUID().slice(0, 8)}`, color: colorClass(), ...overrides }, cred);
  if (res.status !== 201) throw new Error(`create group failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Creates a contact through the REST door and returns its body; throws unless 201. */
export async function makeContact(api: Client, cred: Credential, overrides: Record<string, unknown> = {}) {
  const res = await api.post('/contacts', { name: `Contact ${++counter}`, email: `c${counter}.${randomUUID().slice(0, 8)}@example.com`, ...overrides }, cred);
  if (res.status !== 201) throw new Error(`create contact failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The URL path and query of a `Link: <...>; rel="next"` header, or null when absent. */
export function nextLink(res: Reply): string | null {
  const link = res.headers.get('link');
  if (!link) return null;
  const m = /^<([^>]+)>;\s*rel="next"$/.exec(link);
  if (!m) throw new Error(`unexpected Link header: ${link}`);
  return m[1]!;
}

/** Newest first: createdAt desc, ties by _id desc. */
export function compareNewestFirst(a: { createdAt: string; _id: string }, b: { createdAt: string; _id: string }) {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a._id < b._id ? 1 : a._id > b._id ? -1 : 0;
}
