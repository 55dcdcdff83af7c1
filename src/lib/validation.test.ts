import { describe, expect, test } from '@jest/globals';
import { z } from 'zod';
import { HttpError } from './errors.js';
import { parse } from './validation.js';
import * as v from './validation.js';

const problemsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as HttpError).extra.details ?? [];
  }
  return [];
};

describe('the validation layer', () => {
  test('ids follow the one rule of path ids, named by their field, and read lower-case as stored', () => {
    const schema = z.strictObject({ groups: z.array(v.id()) });
    expect(parse(schema, { groups: ['0F8B2A34-1C2D-4E5F-8A9B-0123456789AB'] })).toEqual({ groups: ['0f8b2a34-1c2d-4e5f-8a9b-0123456789ab'] });
    expect(problemsOf(() => parse(schema, { groups: ['nope'] }))).toEqual([{ field: 'groups.0', message: 'groups.0 must be a valid id' }]);
  });

  test('strings Postgres can not store are named with the other problems, in one answer', () => {
    const schema = z.strictObject({ name: v.name(), email: v.email() });
    expect(problemsOf(() => parse(schema, { name: 'a\u0000b', email: 'not an email' })).map((p) => p.field).sort()).toEqual(['email', 'name']);
    expect(problemsOf(() => parse(schema, { name: 'x\ud800', email: 'a@example.com' })).map((p) => p.field)).toEqual(['name']);
  });
});
