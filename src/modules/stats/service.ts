import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Db } from '../../db/database.js';
import { run } from '../../db/statements.js';
import { foldChanges, organizationsWithChanges, STATS_COUNTERS } from '../../delivery/sql/stats.js';
import { CHANNELS, type Channel } from '../../delivery/types.js';
import { notFound, validationFailed } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { isTimeZone, NOT_A_ZONE } from '../../lib/time-zones.js';
import { operation } from '../../operation.js';
import { dailyFigures, funnelCampaign, funnelFigures, funnelTimeline, type Figures } from './sql.js';

/**
 * What an organization sent, as pictures read it: per day and channel (the dashboard), per campaign
 * (its funnel). The figures come from the rollup (`delivery/sql/stats.ts`, where what counts is
 * decided), so a range of 90 days or a campaign of millions reads a few hundred rows.
 */

const READ = { role: 'any', apiKeys: true } as const;

/** The ranges the dashboard offers, in days (today included). */
export const RANGES = [7, 30, 90] as const;
type Range = (typeof RANGES)[number];

export type FiguresDto = Figures;
export interface DayFiguresDto extends Figures {
  /** The day, `YYYY-MM-DD`, in the answer's time zone. */
  date: string;
  channel: Channel;
}

export interface DailyStatsDto {
  days: Range;
  /** The first and last day counted (`YYYY-MM-DD`, today the last). */
  from: string;
  to: string;
  timeZone: string;
  channel: Channel | null;
  /** Every day of the range for every channel asked for, zeros included, oldest first, channels in the order of `CHANNELS`. */
  daily: DayFiguresDto[];
  byChannel: (Figures & { channel: Channel })[];
  totals: Figures;
}

const zero = (): Figures => Object.fromEntries(STATS_COUNTERS.map((c) => [c, 0])) as Figures;

const add = (into: Figures, from: Figures): Figures => {
  for (const c of STATS_COUNTERS) into[c] += Number(from[c]);
  into.credits = Math.round(into.credits * 100) / 100;
  return into;
};

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

// A name, not an offset: the runtime reads `+03:00` as ISO does, the database as POSIX does (west of UTC).
const timeZone = z.string().refine(isTimeZone, { error: NOT_A_ZONE });

const range = z
  .union([z.number(), z.string().regex(/^\d+$/).transform(Number)], { error: 'must be 7, 30 or 90' })
  .refine((n): n is Range => (RANGES as readonly number[]).includes(n), { error: 'must be 7, 30 or 90' });

/**
 * `GET /stats/daily` and `dailyStats`: the last `days` days (7 by default, today included) of the
 * organization's sends, per day and channel, with their totals: one indexed read of the rollup. Days
 * run from midnight to midnight in `timeZone` (an IANA name, UTC by default; the console asks in the
 * browser's zone), daylight-saving changes included.
 */
export const daily = operation({
  access: READ,
  input: z.strictObject({ days: range.optional(), channel: z.enum(CHANNELS).optional(), timeZone: timeZone.optional() }),
  async run(ctx, { days = 7, channel, timeZone = 'UTC' }): Promise<DailyStatsDto> {
    // Calendar days as UTC midnights: the zone's today, then whole days back from it.
    const today = Date.parse(`${DateTime.now().setZone(timeZone).toISODate()}T00:00:00Z`);
    const from = isoDay(today - (days - 1) * DAY_MS);
    const rows = await run(ctx.db, dailyFigures, { orgId: ctx.caller.orgId, from, timeZone, channel: channel ?? null }).catch((err: unknown) => {
      // A name the runtime knows and the database does not (their zone data differ in age).
      if ((err as { code?: string }).code === '22023') throw validationFailed([{ field: 'timeZone', message: `timeZone ${NOT_A_ZONE}` }]);
      throw err;
    });
    const found = new Map(rows.map((r) => [`${r.day}/${r.channel}`, r]));
    const channels = channel ? [channel] : CHANNELS;
    const daily: DayFiguresDto[] = [];
    const byChannel = channels.map((c) => ({ channel: c, ...zero() }));
    const totals = zero();
    for (let i = 0; i < days; i++) {
      const date = isoDay(today - (days - 1 - i) * DAY_MS);
      channels.forEach((c, k) => {
        const row = found.get(`${date}/${c}`);
        const figures = row ? add(zero(), row) : zero();
        daily.push({ date, channel: c, ...figures });
        add(byChannel[k]!, figures);
        add(totals, figures);
      });
    }
    return { days, from, to: isoDay(today), timeZone, channel: channel ?? null, daily, byChannel, totals };
  },
});

export interface FunnelDto extends Figures {
  /** Recipients it was sent to (one per address and channel), after suppression. */
  audience: number;
  /** Addresses left out at launch: a contact with them unsubscribed from the channel. */
  suppressed: number;
  /** Addresses left out at launch: they had reached their channel's frequency cap. */
  capped: number;
  byChannel: (Figures & { channel: Channel; audience: number })[];
  /** Recipients settled over time, its runs' included. */
  timeline: { bucketMinutes: number; points: { at: string; sent: number; failed: number }[] };
}

/** About how many buckets a campaign's timeline has, however long it ran. */
const TIMELINE_POINTS = 60;

/**
 * A channel's funnel from its own figures and its runs'. A recurring or automated campaign's runs
 * are its sends: everything adds up. A one-off campaign's runs are resends to its failed recipients
 * (as its analytics count them, `campaigns/service.ts` `runTotals`): they add no audience, and
 * what they sent moves from failed to sent, so each recipient counts once.
 */
function combined(inRuns: boolean, own: Figures & { audience: number }, runs: Figures & { audience: number }): Figures & { audience: number } {
  if (inRuns) return { ...add(add(zero(), own), runs), audience: own.audience + runs.audience };
  const sum = add(add(zero(), own), runs);
  return { ...sum, failed: own.failed - runs.sent, audience: own.audience };
}

/**
 * `GET /campaigns/:id/funnel` and `Campaign.funnel`: a campaign from its audience to its clicks,
 * per channel and in all, with its cost and its sends over time. Not for a run (a run is part of its
 * campaign's), nor another organization's campaign: 404.
 */
export const funnel = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<FunnelDto> {
    const orgId = ctx.caller.orgId;
    const [campaign] = isUuid(id) ? await run(ctx.db, funnelCampaign, { orgId, campaignId: id }) : [];
    if (!campaign || campaign.parent_id) throw notFound();
    const inRuns = campaign.type === 'recurring' || campaign.type === 'automated';
    const [rows, timeline] = await Promise.all([
      run(ctx.db, funnelFigures, { orgId, campaignId: id }),
      run(ctx.db, funnelTimeline, { orgId, campaignId: id, points: TIMELINE_POINTS }),
    ]);
    const empty = () => ({ ...zero(), audience: 0 });
    const byChannel = CHANNELS.flatMap((channel) => {
      const of = (own: boolean) => {
        const row = rows.find((r) => r.channel === channel && r.own === own);
        return row ? { ...add(zero(), row), audience: Number(row.audience) } : empty();
      };
      const own = of(true);
      const runs = of(false);
      if (!rows.some((r) => r.channel === channel)) return [];
      return [{ channel, ...combined(inRuns, own, runs) }];
    });
    const totals = byChannel.reduce((sum, c) => ({ ...add(sum, c), audience: sum.audience + c.audience }), empty());
    return {
      ...totals,
      suppressed: Number(campaign.suppressed) + (inRuns ? Number(campaign.runs_suppressed) : 0),
      capped: Number(campaign.capped) + (inRuns ? Number(campaign.runs_capped) : 0),
      byChannel,
      timeline: {
        bucketMinutes: timeline[0]?.minutes ?? 1,
        points: timeline.map((p) => ({ at: p.at.toISOString(), sent: Number(p.sent), failed: Number(p.failed) })),
      },
    };
  },
});

/** Organizations folded per sweep, and changes per statement. */
const FOLD_ORGANIZATIONS = 1000;
const FOLD_LIMIT = 10_000;

/**
 * Folds the rollup's changes into its days and campaigns, organization by organization; answers how
 * many changes it folded. The reads add the changes not folded, so their figures are the same
 * before and after: folding keeps what they read small.
 */
export async function foldStats(db: Db): Promise<number> {
  let count = 0;
  for (const { organization_id: orgId } of await run(db, organizationsWithChanges, { limit: FOLD_ORGANIZATIONS })) {
    for (;;) {
      const [row] = await run(db, foldChanges, { orgId, limit: FOLD_LIMIT });
      count += row?.folded ?? 0;
      if ((row?.folded ?? 0) < FOLD_LIMIT) break;
    }
  }
  return count;
}
