import { dateFilter, rangeEnd, rangeStart } from './date-range.js';

describe('the lists’ date filters', () => {
  test('a date or a date-time with an offset; nothing else', () => {
    for (const ok of ['2026-02-01', '2026-02-01T10:00:00Z', '2026-02-01T10:00:00.123+03:00']) expect(dateFilter().safeParse(ok).success).toBe(true);
    for (const bad of ['yesterday', '2026-02-30', '2026-02-01T10:00:00', '01/02/2026', '']) expect(dateFilter().safeParse(bad).success).toBe(false);
  });

  test('a bare date covers its whole day, UTC; a date-time is that instant', () => {
    expect(rangeStart('2026-02-01').toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(rangeEnd('2026-02-01').toISOString()).toBe('2026-02-01T23:59:59.999Z');
    expect(rangeStart('2026-02-01T10:00:00+03:00').toISOString()).toBe('2026-02-01T07:00:00.000Z');
    expect(rangeEnd('2026-02-01T10:00:00.5Z').toISOString()).toBe('2026-02-01T10:00:00.500Z');
  });
});
