import { describe, expect, test } from '@jest/globals';
import { isForeignKeyViolation, isUniqueViolation } from './errors.js';

// As node-postgres hands them over: on plain Postgres, and from a Citus shard (index and table named with the shard id).
const plain = { code: '23505', constraint: 'groups_org_name_key', table: 'groups', detail: 'Key (organization_id, lower(name))=(0b5e…, vip) already exists.' };
const shard = { code: '23505', constraint: 'users_email_key_102009', table: 'users_102009', detail: 'Key (lower(email))=(a@example.com) already exists.' };

describe('isUniqueViolation', () => {
  test('matches the key the detail names, whatever the index is called', () => {
    expect(isUniqueViolation(plain, 'organization_id, lower(name)')).toBe(true);
    expect(isUniqueViolation(shard, 'lower(email)')).toBe(true);
  });

  test('another key, another code, or no detail is not that violation', () => {
    expect(isUniqueViolation(plain, 'lower(email)')).toBe(false);
    expect(isUniqueViolation({ ...shard, code: '23503' }, 'lower(email)')).toBe(false);
    expect(isUniqueViolation({ code: '23505' }, 'lower(email)')).toBe(false);
  });

  test('a value that looks like a key does not confuse it', () => {
    const tricky = { code: '23505', detail: 'Key (organization_id, lower(name))=(0b5e…, a)=(b) already exists.' };
    expect(isUniqueViolation(tricky, 'organization_id, lower(name)')).toBe(true);
  });

  test('without a key, any unique violation', () => {
    expect(isUniqueViolation(shard)).toBe(true);
    expect(isUniqueViolation(new Error('x'))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});

test('isForeignKeyViolation is SQLSTATE 23503', () => {
  expect(isForeignKeyViolation({ code: '23503' })).toBe(true);
  expect(isForeignKeyViolation({ code: '23505' })).toBe(false);
});
