import { LIST_SEPARATOR } from './csv-columns.js';

/**
 * The export's cells that are not stored as written: a contact's groups by name, its times in
 * ISO 8601. Each is made once per distinct value where values repeat (sets of groups, days), so
 * a million contacts cost little more than their text.
 */

/** A bounded memo: cleared when full, so an export of any size holds at most `max` entries. */
function memo(max: number, compute: (key: string) => string): (key: string) => string {
  const known = new Map<string, string>();
  return (key) => {
    let value = known.get(key);
    if (value === undefined) {
      value = compute(key);
      if (known.size >= max) known.clear();
      known.set(key, value);
    }
    return value;
  };
}

/**
 * The groups cell of a contact from its group ids: their names, sorted. Contacts share a few sets
 * of groups, so each set is named once.
 */
export const groupsCell = (names: Map<string, string>) =>
  memo(10_000, (ids) => ids.split(',').map((id) => names.get(id) ?? '').filter(Boolean).sort().join(LIST_SEPARATOR));

const DAY_MS = 86_400_000;
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/**
 * A time as `Date#toISOString` writes it, from seconds since the epoch rounded to the millisecond:
 * the day's part is `toISOString`'s own, made once per day; the time of day is put together here
 * (a `Date` and its `toISOString` per cell cost more than the rest of the row's text).
 */
export function isoTimes(): (epochSeconds: number) => string {
  const day = memo(1000, (n) => {
    const text = new Date(Number(n) * DAY_MS).toISOString();
    return text.slice(0, text.indexOf('T') + 1);
  });
  return (epochSeconds) => {
    const ms = Math.round(epochSeconds * 1000);
    // Outside Date's range (or not a number), as toISOString has it: it throws.
    if (!(Math.abs(ms) <= 8.64e15)) return new Date(ms).toISOString();
    const days = Math.floor(ms / DAY_MS);
    let rest = ms - days * DAY_MS;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    return `${day(String(days))}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[rest - seconds * 1000]}Z`;
  };
}

