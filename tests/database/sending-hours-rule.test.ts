import type { Herald } from '../../src/server.js';
import { dueSql } from '../../src/lib/sending-hours.js';
import { heraldWithClient } from '../helpers/herald.js';

/**
 * The rule of when a campaign's message may reach its recipient (`lib/sending-hours.ts`), as
 * Postgres works it out: windows by day and crossing midnight, local send times, and the nights the
 * clocks change.
 */

let herald: Herald;
beforeAll(async () => ({ herald } = await heraldWithClient()));
afterAll(() => herald?.stop());

const DUE = dueSql({ zone: 'p.zone', now: 'p.now', hours: 'p.hours', localAt: 'p.local_at' }, 'd');

async function due(zone: string, now: string, hours: string | null, localAt: string | null = null): Promise<string> {
  const { rows } = await herald.db.raw(
    `SELECT d.due FROM (SELECT ?::text AS zone, ?::timestamptz AS now, ?::text AS hours, ?::timestamp AS local_at) p ${DUE}`,
    [zone, now, hours, localAt],
  );
  return (rows[0].due as Date).toISOString();
}

test('a window by day: inside it now, after it the next morning, before it this morning', async () => {
  expect(await due('Africa/Nairobi', '2026-06-10T16:30:00Z', '08:00-20:00')).toBe('2026-06-10T16:30:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T17:00:00Z', '08:00-20:00')).toBe('2026-06-11T05:00:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T03:00:00Z', '08:00-20:00')).toBe('2026-06-10T05:00:00.000Z');
  // The start is inside, the end is not.
  expect(await due('Africa/Nairobi', '2026-06-10T05:00:00Z', '08:00-20:00')).toBe('2026-06-10T05:00:00.000Z');
  expect(await due('Asia/Kolkata', '2026-06-10T14:30:00Z', '08:00-20:00')).toBe('2026-06-11T02:30:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T17:00:00Z', null)).toBe('2026-06-10T17:00:00.000Z');
});

test('a window crossing midnight: open late in the evening and early in the morning, closed between', async () => {
  expect(await due('Africa/Nairobi', '2026-06-10T12:00:00Z', '21:00-07:00')).toBe('2026-06-10T18:00:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T19:00:00Z', '21:00-07:00')).toBe('2026-06-10T19:00:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T02:00:00Z', '21:00-07:00')).toBe('2026-06-10T02:00:00.000Z');
  expect(await due('Africa/Nairobi', '2026-06-10T04:00:00Z', '21:00-07:00')).toBe('2026-06-10T18:00:00.000Z');
});

test('the nights the clocks change: a skipped opening comes an hour later on the new clock, a repeated one the second time', async () => {
  // New York, 8 March 2026: 02:00 EST becomes 03:00 EDT; 02:30 never comes, 03:30 EDT (07:30Z) does.
  expect(await due('America/New_York', '2026-03-08T05:00:00Z', '02:30-05:00')).toBe('2026-03-08T07:30:00.000Z');
  // 09:00 the day after the change is EDT (13:00Z); the day before, EST (14:00Z).
  expect(await due('America/New_York', '2026-03-08T04:00:00Z', '09:00-17:00')).toBe('2026-03-08T13:00:00.000Z');
  expect(await due('America/New_York', '2026-03-07T04:00:00Z', '09:00-17:00')).toBe('2026-03-07T14:00:00.000Z');
  // 1 November 2026: 01:30 comes twice (EDT, then EST); a recipient waiting for it gets it the second time.
  expect(await due('America/New_York', '2026-11-01T04:30:00Z', '01:30-05:00')).toBe('2026-11-01T06:30:00.000Z');
  // Lord Howe moves by half an hour.
  expect(await due('Australia/Lord_Howe', '2026-06-10T00:00:00Z', '20:00-21:00')).toBe('2026-06-10T09:30:00.000Z');
});

test('a local send time in the zone, then the window at that time', async () => {
  expect(await due('Pacific/Auckland', '2026-03-07T19:00:00Z', null, '2026-03-08T09:00:00')).toBe('2026-03-07T20:00:00.000Z');
  expect(await due('America/New_York', '2026-03-07T19:00:00Z', null, '2026-03-08T09:00:00')).toBe('2026-03-08T13:00:00.000Z');
  // Passed already in the zone: at once.
  expect(await due('Pacific/Auckland', '2026-03-08T01:00:00Z', null, '2026-03-08T09:00:00')).toBe('2026-03-08T01:00:00.000Z');
  // 09:00 is before the window: its opening, 10:00, that day.
  expect(await due('Pacific/Auckland', '2026-03-07T19:00:00Z', '10:00-18:00', '2026-03-08T09:00:00')).toBe('2026-03-07T21:00:00.000Z');
});
