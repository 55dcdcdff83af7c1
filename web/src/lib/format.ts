/** Numbers and dates in the browser's own locale. */
const numberFormat = new Intl.NumberFormat(undefined);
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatNumber(n: number | null | undefined): string {
  return n == null ? '—' : numberFormat.format(n);
}

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTimeFormat.format(d);
}

export function formatPercent(part: number, whole: number): string {
  if (!whole) return '—';
  return new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 }).format(part / whole);
}

const rateFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const timeFormat = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** A sending pace: `2 messages a second`, `1 message a second`, `0.5 messages a second`. */
export function formatRate(perSecond: number): string {
  const n = rateFormat.format(perSecond);
  return `${n} ${n === rateFormat.format(1) ? 'message' : 'messages'} a second`;
}

/** A time soon: its time of day (with seconds) when it is today, else its date and time. */
export function formatTimeSoon(iso: string, now = Date.now()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toDateString() === new Date(now).toDateString() ? timeFormat.format(d) : dateTimeFormat.format(d);
}

/** How far a time is from now, in words: `in 12 seconds`, `in 3 minutes`, `in 2 hours`, `in 4 days`. */
export function formatRelative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relativeFormat.format(seconds, 'second');
  if (abs < 3600) return relativeFormat.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return relativeFormat.format(Math.round(seconds / 3600), 'hour');
  return relativeFormat.format(Math.round(seconds / 86_400), 'day');
}
