import { z } from 'zod';

/**
 * The `dateFrom`/`dateTo` filters of the lists (decisions.md: inclusive): an ISO 8601 date or
 * date-time each; a bare date means the whole of that day, UTC.
 */
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

export const dateFilter = () => z.union([z.iso.date(), z.iso.datetime({ offset: true })], { error: 'must be an ISO 8601 date or date-time' });

/** The first instant `dateFrom` covers. */
export const rangeStart = (d: string) => new Date(DATE_ONLY.test(d) ? `${d}T00:00:00.000Z` : d);

/** The last instant `dateTo` covers (a bare date: its last millisecond). */
export const rangeEnd = (d: string) => (DATE_ONLY.test(d) ? new Date(Date.parse(`${d}T00:00:00.000Z`) + 86_400_000 - 1) : new Date(d));

