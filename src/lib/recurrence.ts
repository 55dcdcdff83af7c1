import { DateTime, IANAZone } from 'luxon';
import rrulePkg, { type Options } from 'rrule';

const { RRule, Frequency } = rrulePkg;

/**
 * A recurring campaign's schedule: an RFC 5545 RRULE read in an IANA time zone. Occurrences are
 * worked out in the zone's wall-clock time (by `rrule`, on "floating" dates: UTC fields standing
 * for local ones) and then placed on the time line by `luxon` as the zone says: a wall-clock time a
 * daylight-saving change skips is moved forward by the gap (02:30 on a spring-forward night runs at
 * 03:30), and one it repeats runs once, at its first (earlier) instant, as RFC 5545 says.
 */
export interface Recurrence {
  rule: string;
  timezone: string;
}

/** The properties a rule may have: DTSTART is the launch (or `scheduleDate`), never part of the rule. */
const PROPERTIES = new Set(['FREQ', 'INTERVAL', 'COUNT', 'UNTIL', 'BYDAY', 'BYMONTHDAY', 'BYMONTH', 'BYHOUR', 'BYMINUTE', 'BYSECOND', 'BYSETPOS', 'BYWEEKNO', 'BYYEARDAY', 'WKST']);
const FREQUENCIES = new Set(['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY']);
const DAY = /^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$/;
const ONE_HOUR_MS = 3_600_000;
/** The numbers each numeric property takes (`signed`: a negative one counts from the end; never 0). */
const RANGES: Record<string, { min: number; max: number; signed?: boolean }> = {
  INTERVAL: { min: 1, max: 1000 },
  COUNT: { min: 1, max: 100_000 },
  BYHOUR: { min: 0, max: 23 },
  BYMINUTE: { min: 0, max: 59 },
  BYSECOND: { min: 0, max: 59 },
  BYMONTH: { min: 1, max: 12 },
  BYMONTHDAY: { min: 1, max: 31, signed: true },
  BYYEARDAY: { min: 1, max: 366, signed: true },
  BYWEEKNO: { min: 1, max: 53, signed: true },
  BYSETPOS: { min: 1, max: 366, signed: true },
};

/** Whether every comma-separated value is a whole number in the property's range. */
function inRange(key: string, value: string): boolean {
  const range = RANGES[key];
  if (!range) return true;
  const values = value.split(',');
  if (values.length > 1 && (key === 'INTERVAL' || key === 'COUNT')) return false;
  return values.every((v) => {
    if (!/^[+-]?\d{1,6}$/.test(v)) return false;
    const n = Number(v);
    const size = range.signed ? Math.abs(n) : n;
    return (range.signed || !v.startsWith('-')) && size >= range.min && size <= range.max;
  });
}
/** Occurrences looked at to tell a rule that fires more often than hourly. */
const GAP_SAMPLE = 200;

export type Checked = { ok: true; recurrence: Recurrence } | { ok: false; problem: string };

/** The rule's `KEY=VALUE` parts, upper-cased, without an `RRULE:` prefix. */
function parts(rule: string): [string, string][] {
  return rule
    .trim()
    .replace(/^RRULE:/i, '')
    .split(';')
    .filter((p) => p.trim() !== '')
    .map((p) => {
      const [key, ...value] = p.split('=');
      return [key!.trim().toUpperCase(), value.join('=').trim().toUpperCase()];
    });
}

/**
 * Checks a rule and its zone as a user gives them; answers the stored form (upper case, no prefix)
 * or the first problem, in words: an unknown property or value, a frequency under an hour, two runs
 * less than an hour apart, or a rule with no run after `now`.
 */
export function checkRecurrence(input: Recurrence, now: Date): Checked {
  if (!IANAZone.isValidZone(input.timezone)) return { ok: false, problem: `timezone ${input.timezone} is not an IANA time zone` };
  const given = parts(input.rule);
  if (!given.length) return { ok: false, problem: 'rule is empty' };
  const seen = new Set<string>();
  for (const [key, value] of given) {
    if (key === 'DTSTART') return { ok: false, problem: 'rule must not have DTSTART: the runs start at launch, or at scheduleDate' };
    if (!PROPERTIES.has(key)) return { ok: false, problem: `rule has an unknown property ${key}` };
    if (seen.has(key)) return { ok: false, problem: `rule has ${key} twice` };
    seen.add(key);
    if (!value) return { ok: false, problem: `rule has ${key} without a value` };
    if (key === 'FREQ' && (value === 'MINUTELY' || value === 'SECONDLY')) return { ok: false, problem: `rule fires more often than once an hour (FREQ=${value})` };
    if (key === 'FREQ' && !FREQUENCIES.has(value)) return { ok: false, problem: `rule has an unknown frequency ${value}` };
    if (!inRange(key, value)) return { ok: false, problem: `rule has an invalid value in ${key}=${value}` };
    if ((key === 'BYDAY' || key === 'WKST') && !value.split(',').every((d) => DAY.test(d))) return { ok: false, problem: `rule has an unknown day in ${key}=${value}` };
  }
  if (!seen.has('FREQ')) return { ok: false, problem: 'rule needs a FREQ' };
  if (seen.has('COUNT') && seen.has('UNTIL')) return { ok: false, problem: 'rule must not have both COUNT and UNTIL' };
  const rule = given.map(([k, v]) => `${k}=${v}`).join(';');
  let options: Partial<Options>;
  try {
    options = RRule.parseString(rule);
    new RRule(options);
  } catch (err) {
    return { ok: false, problem: `rule is not a valid RRULE: ${(err as Error).message}` };
  }
  for (const [key, value] of Object.entries(options)) {
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => v === undefined || (typeof v === 'number' && !Number.isFinite(v)))) {
      return { ok: false, problem: `rule has an invalid value for ${key.toUpperCase()}` };
    }
  }
  const recurrence = { rule, timezone: input.timezone };
  const upcoming = occurrences(recurrence, now, now, GAP_SAMPLE);
  if (!upcoming.length) return { ok: false, problem: 'rule never fires: it has no run after now' };
  for (let i = 1; i < upcoming.length; i++) {
    if (upcoming[i]!.getTime() - upcoming[i - 1]!.getTime() < ONE_HOUR_MS) return { ok: false, problem: 'rule fires more often than once an hour' };
  }
  return { ok: true, recurrence };
}

/** A time-line instant as the zone's wall clock, on a floating date. */
function floating(instant: Date, zone: string): Date {
  const local = DateTime.fromJSDate(instant, { zone });
  return new Date(Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second));
}

/** A floating date placed on the time line in the zone (a skipped time moves forward, a repeated one is its first instant). */
function instant(floatingDate: Date, zone: string): Date {
  const local = DateTime.fromObject(
    {
      year: floatingDate.getUTCFullYear(),
      month: floatingDate.getUTCMonth() + 1,
      day: floatingDate.getUTCDate(),
      hour: floatingDate.getUTCHours(),
      minute: floatingDate.getUTCMinutes(),
      second: floatingDate.getUTCSeconds(),
    },
    { zone },
  );
  // A repeated wall-clock time has two offsets; luxon picks one of them.
  const candidates = local.getPossibleOffsets().map((d) => d.toMillis());
  return new Date(Math.min(local.toMillis(), ...candidates));
}

/** The rule started at `anchor`; minutes and seconds it does not give are 0 (not the anchor's). */
function ruleFrom(recurrence: Recurrence, anchor: Date) {
  const options = RRule.parseString(recurrence.rule);
  if (options.byminute === undefined && options.freq !== Frequency.HOURLY) options.byminute = 0;
  if (options.byminute === undefined) options.byminute = 0;
  if (options.bysecond === undefined) options.bysecond = 0;
  // rrule reads UNTIL as a UTC instant; the floating dates compare with it as wall-clock time.
  if (options.until) options.until = floating(options.until, recurrence.timezone);
  const start = floating(anchor, recurrence.timezone);
  start.setUTCSeconds(0, 0);
  return new RRule({ ...options, dtstart: start });
}

/**
 * Up to `count` run times of the rule started at `anchor`, strictly after `after`, in order. Two
 * wall-clock times that fall on one instant (a time a daylight-saving change skips, moved onto the
 * next) run once.
 */
export function occurrences(recurrence: Recurrence, anchor: Date, after: Date, count: number): Date[] {
  const rule = ruleFrom(recurrence, anchor);
  const found: Date[] = [];
  let cursor = floating(after, recurrence.timezone);
  // The wall-clock time of `after` can be an instant earlier than it (the repeated hour), so times
  // at or before `after` itself are skipped here.
  while (found.length < count) {
    const next = rule.after(cursor, false);
    if (!next) break;
    cursor = next;
    const at = instant(next, recurrence.timezone);
    if (at.getTime() <= after.getTime()) continue;
    if (found.length && at.getTime() <= found[found.length - 1]!.getTime()) continue;
    found.push(at);
  }
  return found;
}

/** The first run time after `after`, or null when the rule has none left. */
export const nextOccurrence = (recurrence: Recurrence, anchor: Date, after: Date): Date | null => occurrences(recurrence, anchor, after, 1)[0] ?? null;

const pad = (n: number) => String(n).padStart(2, '0');

/** The rule in words: `every week on Monday at 09:00 Nairobi time`. */
export function describe(recurrence: Recurrence): string {
  const options = RRule.parseString(recurrence.rule);
  const hours = [options.byhour ?? []].flat();
  const minutes = [options.byminute ?? [0]].flat();
  const { byhour: _h, byminute: _m, bysecond: _s, ...days } = options;
  let text = new RRule(days).toText();
  const place = recurrence.timezone === 'UTC' || recurrence.timezone === 'Etc/UTC' ? 'UTC' : `${recurrence.timezone.split('/').pop()!.replace(/_/g, ' ')} time`;
  if (hours.length) {
    const times = hours.flatMap((h) => minutes.map((m) => `${pad(h)}:${pad(m)}`)).sort();
    text += ` at ${times.length > 1 ? `${times.slice(0, -1).join(', ')} and ${times[times.length - 1]}` : times[0]}`;
  } else if (options.freq === Frequency.HOURLY) {
    text += ` at ${minutes.map((m) => `:${pad(m)}`).join(', ')}`;
  }
  return `${text} ${place}`;
}
