import { z } from 'zod';

/**
 * When a campaign's message may reach its recipient, the one home of the rule: the time a recipient
 * is due (now, or the campaign's local send time in their zone) moved to the next opening of the
 * sending hours in their zone when it falls outside them. The engine holds the recipients of the
 * batches it claims to it, the estimate and the preview count with it: all through `dueSql`.
 */

/** A daily window on the wall clock, `HH:MM-HH:MM` in 24-hour time; it crosses midnight when its end comes first (`21:00-07:00`). */
const WINDOW = /^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-3]):[0-5]\d$/;
export const NOT_A_WINDOW = 'must be a daily window HH:MM-HH:MM in 24-hour time (08:00-20:00), its start and end differing';

/** Sending hours as input takes them (null: any time). */
export const sendingHours = () =>
  z
    .string()
    .trim()
    .refine((v) => WINDOW.test(v) && v.slice(0, 5) !== v.slice(6), { error: NOT_A_WINDOW })
    .nullable();

/** A wall-clock date and time without an offset (`2026-12-05T09:00`), as input takes a local send time. */
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;
export const NOT_LOCAL = 'must be a date and time without an offset (2026-12-05T09:00), read in each recipient\'s time zone';

export const localDateTime = () =>
  z
    .string()
    .trim()
    .refine((v) => {
      const m = LOCAL.exec(v);
      if (!m) return false;
      const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
      return d.getUTCMonth() === +m[2]! - 1 && d.getUTCDate() === +m[3]!;
    }, { error: NOT_LOCAL })
    .nullable();

/** The wall-clock time as if it were UTC. */
const asUtc = (local: string) => new Date(`${local.length === 16 ? `${local}:00` : local}Z`);

/** The zones furthest ahead of UTC and behind it: a local send time comes first at UTC+14 and last at UTC-12, 26 hours later. */
const AHEAD_MS = 14 * 3_600_000;
const BEHIND_MS = 12 * 3_600_000;

/** When a local send time first comes, somewhere (UTC+14): the campaign starts then. */
export const firstComing = (local: string): Date => new Date(asUtc(local).getTime() - AHEAD_MS);

/** When it last comes (UTC-12): after that it has passed everywhere. */
export const lastComing = (local: string): Date => new Date(asUtc(local).getTime() + BEHIND_MS);

/**
 * SQL joining, as `alias.due`, when a message to a recipient in `zone` may go: `now`, or the local
 * send time `localAt` (a `timestamp`, null for none) in the zone when that is later, then, when the
 * sending hours `hours` (`HH:MM-HH:MM` text, null for any time) are closed in the zone at that time,
 * their next opening there. Each argument is an SQL expression. Every function in it is immutable
 * (`AT TIME ZONE` with a named zone), so it runs as it is wherever Citus sends it. Daylight saving
 * follows the zone: an opening in a skipped hour (02:30 on the night clocks go forward) comes at
 * that time on the offset before the change, an hour later on the new wall clock (03:30); an opening
 * in a repeated hour (01:30 on the night they go back) comes the second time.
 */
export function dueSql(p: { zone: string; now: string; hours: string; localAt: string }, alias: string): string {
  const at = `${alias}_at`;
  const w = `${alias}_w`;
  return `CROSS JOIN LATERAL (SELECT CASE WHEN ${p.localAt} IS NULL THEN ${p.now}
                                         ELSE greatest(${p.now}, ${p.localAt} AT TIME ZONE ${p.zone}) END AS at) ${at}
     CROSS JOIN LATERAL (SELECT ${at}.at AT TIME ZONE ${p.zone} AS wall, split_part(${p.hours}, '-', 1)::time AS s, split_part(${p.hours}, '-', 2)::time AS e) ${w}
     CROSS JOIN LATERAL (SELECT CASE
         WHEN ${w}.s IS NULL THEN ${at}.at
         WHEN ${w}.s < ${w}.e AND ${w}.wall::time >= ${w}.s AND ${w}.wall::time < ${w}.e THEN ${at}.at
         WHEN ${w}.s > ${w}.e AND (${w}.wall::time >= ${w}.s OR ${w}.wall::time < ${w}.e) THEN ${at}.at
         WHEN ${w}.s < ${w}.e AND ${w}.wall::time >= ${w}.e THEN ((${w}.wall::date + 1) + ${w}.s) AT TIME ZONE ${p.zone}
         ELSE (${w}.wall::date + ${w}.s) AT TIME ZONE ${p.zone} END AS due) ${alias}`;
}

/**
 * SQL for a recipient's zone: that of a contact of the organization `orgId` with the address (the
 * channel's address index: the phone number, or the lower-cased email) that has one, else the
 * organization's `orgZone`. Each argument is an SQL expression.
 */
export const recipientZoneSql = (byEmail: boolean, p: { address: string; orgId: string; orgZone: string }) =>
  `coalesce((SELECT c.time_zone FROM contacts c
             WHERE c.organization_id = ${p.orgId} AND ${byEmail ? 'lower(c.email)' : 'c.phone'} = ${p.address} AND c.time_zone IS NOT NULL LIMIT 1), ${p.orgZone})`;
