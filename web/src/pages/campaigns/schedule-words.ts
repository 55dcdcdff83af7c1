/**
 * How the schedule of a campaign reads: a delay (an ISO 8601 duration) in words, a time in the
 * campaign's own time zone, and a local send time as its wall clock has it. Only for showing: the
 * server checks the values.
 */

const UNITS = [
  ['year', 'years'],
  ['month', 'months'],
  ['week', 'weeks'],
  ['day', 'days'],
  ['hour', 'hours'],
  ['minute', 'minutes'],
  ['second', 'seconds'],
] as const;

const DURATION =
  /^P(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

/**
 * An ISO 8601 duration in words (`P1DT12H` is `1 day and 12 hours`, `PT0S` is `no time`); null when
 * it is not one.
 */
export function durationInWords(iso: string | null | undefined): string | null {
  const match = iso ? DURATION.exec(iso.trim().toUpperCase()) : null;
  if (!match || iso!.trim().toUpperCase().endsWith('T') || iso!.trim().toUpperCase() === 'P') return null;
  const parts = UNITS.flatMap(([one, many], i) => {
    const value = match[i + 1];
    if (!value) return [];
    const n = Number(value.replace(',', '.'));
    return n === 0 ? [] : [`${n} ${n === 1 ? one : many}`];
  });
  if (!parts.length) return 'no time';
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

/** When an automated campaign sends after its trigger: `At once`, `2 days after the trigger`. */
export function delayInWords(iso: string | null | undefined): string {
  const words = durationInWords(iso);
  if (words === null) return iso ?? 'At once';
  return words === 'no time' ? 'At once, as soon as the trigger happens' : `${words[0]!.toUpperCase()}${words.slice(1)} after the trigger`;
}

/** A time as the clock in `zone` shows it, with the zone's abbreviation: `Mon, Mar 9, 2026, 9:00 AM GMT+3`. */
export function formatInZone(iso: string | null | undefined, zone: string): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  try {
    return new Intl.DateTimeFormat(undefined, {
      timeZone: zone,
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZoneName: 'short',
    }).format(d);
  } catch {
    // A zone this browser does not know: its own time, which formatDateTime would show.
    return d.toLocaleString();
  }
}

/** The IANA time zones to choose from: the browser's list, with UTC and the browser's own zone. */
export function timeZones(own: string): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set([...known, 'UTC', own])].sort((a, b) => a.localeCompare(b));
}

const wallClockFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

/**
 * A local send time (`2026-12-05T09:00:00`, a wall-clock time in no zone) as the console's other dates
 * read (`Dec 5, 2026, 9:00 AM`): its own figures, never moved to the browser's zone (read as UTC and
 * shown in UTC, so no daylight-saving change of the browser's shifts it).
 */
export function formatWallClock(local: string): string {
  const d = new Date(`${local.length === 16 ? `${local}:00` : local}Z`);
  return Number.isNaN(d.getTime()) ? local : wallClockFormat.format(d);
}
