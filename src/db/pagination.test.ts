import { describe, expect, test } from '@jest/globals';
import { HttpError } from '../lib/errors.js';
import { decodeCursor, encodeCursor } from './pagination.js';

describe('list cursors', () => {
  const row = { created_at: new Date('2026-01-05T09:30:00.123Z'), id: '0f8b2a34-1c2d-4e5f-8a9b-0123456789ab' };

  test('a cursor decodes to the row it was made from', () => {
    expect(decodeCursor(encodeCursor(row))).toEqual({ createdAt: '2026-01-05T09:30:00.123Z', id: row.id });
  });

  test.each([
    ['not base64url at all', '%%%'],
    ['no id', Buffer.from('2026-01-05T09:30:00.123Z').toString('base64url')],
    ['a bad id', Buffer.from('2026-01-05T09:30:00.123Z|nope').toString('base64url')],
    ['an impossible date', Buffer.from(`2026-02-30T09:30:00.000Z|${row.id}`).toString('base64url')],
    ['an extra part', Buffer.from(`2026-01-05T09:30:00.123Z|${row.id}|x`).toString('base64url')],
  ])('%s is a 400', (_, cursor) => {
    expect(() => decodeCursor(cursor)).toThrow(HttpError);
    try {
      decodeCursor(cursor);
    } catch (err) {
      expect((err as HttpError).statusCode).toBe(400);
    }
  });
});
