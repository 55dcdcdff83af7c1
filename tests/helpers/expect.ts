import { STATUS_CODES } from 'node:http';
import type { Reply } from './herald.js';

// The documented error shapes (decisions.md, "Errors"), asserted the same way by every test file.

export const ERROR_KEYS = ['error', 'message', 'statusCode'];

export const sortedKeys = (o: object) => Object.keys(o).sort();

/** Exactly `{ statusCode, message, error }` as JSON, with the standard reason phrase. */
export function expectError(res: Reply, status: number, message?: string | RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(sortedKeys(res.body)).toEqual(ERROR_KEYS);
  expect(res.body.statusCode).toBe(status);
  expect(res.body.error).toBe(STATUS_CODES[status]);
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  if (typeof message === 'string') expect(res.body.message).toBe(message);
  else if (message) expect(res.body.message).toMatch(message);
}

/**
 * A 400 validation failure naming exactly these fields: `details` holds `{ field, message }` per
 * failing field, and `message` is their messages joined with `; `.
 */
export function expectValidation(res: Reply, fields: string[]) {
  expect(res.status).toBe(400);
  expect(sortedKeys(res.body)).toEqual(['details', ...ERROR_KEYS].sort());
  expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  const details = res.body.details as { field: string; message: string }[];
  expect(Array.isArray(details)).toBe(true);
  for (const d of details) {
    expect(sortedKeys(d)).toEqual(['field', 'message']);
    expect(d.message.startsWith(d.field)).toBe(true);
  }
  expect([...new Set(details.map((d) => d.field))].sort()).toEqual([...fields].sort());
  expect(res.body.message).toBe(details.map((d) => d.message).join('; '));
}

/** The first GraphQL error carries the REST status and code (and message, when given). */
export function expectGqlError(res: Reply, statusCode: number, code: string, message?: string) {
  expect(Array.isArray(res.body.errors)).toBe(true);
  const [err] = res.body.errors;
  expect(err.extensions.statusCode).toBe(statusCode);
  expect(err.extensions.code).toBe(code);
  if (message !== undefined) expect(err.message).toBe(message);
  return err;
}
