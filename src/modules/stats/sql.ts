import { statement } from '../../db/statements.js';
import { STATS_COUNTERS } from '../../delivery/sql/stats.js';

/**
 * The reads of the rollup `delivery/sql/stats.ts` keeps. A figure is its folded row plus the
 * changes not folded yet, read in one statement (one snapshot: a fold moves rows from one to the
 * other atomically). Each is one organization's, filtered by it in every table it reads (on Citus,
 * one shard).
 */

/** The counters as a statement answers them (bigint and numeric sums arrive as numbers, see `db/database.ts`). */
export type Figures = Record<(typeof STATS_COUNTERS)[number], number>;

const COUNTERS = STATS_COUNTERS.join(', ');
const SUMMED = STATS_COUNTERS.map((c) => `sum(${c})::${c === 'credits' ? 'numeric' : 'bigint'} AS ${c}`).join(', ');

/**
 * Each day from `:from` (a date) in the time zone `:timeZone` and channel that has any figure,
 * oldest first; one channel or all (`:channel` null). A range of the buckets' primary key from the
 * day's first instant in the zone, beside the changes not folded, each bucket then counted in the
 * zone's day it starts in (a bucket never spans two: offsets are whole quarters of an hour).
 */
export const dailyFigures = statement<{ orgId: string; from: string; timeZone: string; channel: string | null }, Figures & { day: string; channel: string }>(
  'herald_stats_daily',
  `SELECT to_char(d.day, 'YYYY-MM-DD') AS day, d.channel, ${COUNTERS}
   FROM (SELECT (s.bucket AT TIME ZONE :timeZone::text)::date AS day, s.channel, ${SUMMED}
         FROM (SELECT bucket, channel, ${COUNTERS} FROM message_stats_buckets WHERE organization_id = :orgId AND bucket >= (:from::date)::timestamp AT TIME ZONE :timeZone::text
               UNION ALL
               SELECT bucket, channel, ${COUNTERS} FROM message_stats_changes WHERE organization_id = :orgId AND bucket >= (:from::date)::timestamp AT TIME ZONE :timeZone::text) s
         WHERE :channel::text IS NULL OR s.channel = :channel::text
         GROUP BY 1, 2) d
   ORDER BY d.day, d.channel`,
);

/** A campaign and its runs (`own` false), by their own index. */
const MEMBERS = `SELECT :campaignId::uuid AS id, true AS own
                 UNION ALL
                 SELECT r.id, false FROM campaigns r WHERE r.organization_id = :orgId AND r.parent_id = :campaignId::uuid`;

/** A campaign as its funnel needs it, with what its runs left out at their launches. */
export const funnelCampaign = statement<
  { orgId: string; campaignId: string },
  { type: string; status: string; parent_id: string | null; suppressed: number; runs_suppressed: number; capped: number; runs_capped: number }
>(
  'herald_stats_funnel_campaign',
  `SELECT c.type, c.status, c.parent_id, c.suppressed, c.capped, r.suppressed AS runs_suppressed, r.capped AS runs_capped
   FROM campaigns c
   CROSS JOIN LATERAL (SELECT coalesce(sum(r.suppressed), 0)::bigint AS suppressed, coalesce(sum(r.capped), 0)::bigint AS capped
                       FROM campaigns r WHERE r.organization_id = :orgId AND r.parent_id = c.id) r
   WHERE c.organization_id = :orgId AND c.id = :campaignId::uuid`,
);

/**
 * A campaign's figures per channel, its own (`own`) apart from its runs': its audience (the
 * recipients of its batches, as its progress counts them) and the rollup's counters.
 */
export const funnelFigures = statement<{ orgId: string; campaignId: string }, Figures & { channel: string; own: boolean; audience: number }>(
  'herald_stats_funnel',
  `WITH members AS (${MEMBERS}),
        rows AS (
          SELECT campaign_id, channel, 0 AS audience, ${COUNTERS} FROM message_stats_campaigns
          WHERE organization_id = :orgId AND campaign_id IN (SELECT id FROM members)
          UNION ALL
          SELECT campaign_id, channel, 0, ${COUNTERS} FROM message_stats_changes
          WHERE organization_id = :orgId AND campaign_id IN (SELECT id FROM members)
          UNION ALL
          -- Summed before the union: a campaign of 1,000,000 has 10,000 batches.
          SELECT campaign_id, channel, sum(recipient_count), ${STATS_COUNTERS.map(() => '0').join(', ')} FROM campaign_batches
          WHERE organization_id = :orgId AND campaign_id IN (SELECT id FROM members)
          GROUP BY campaign_id, channel)
   SELECT r.channel, m.own, sum(r.audience)::bigint AS audience, ${SUMMED}
   FROM rows r JOIN members m ON m.id = r.campaign_id
   GROUP BY r.channel, m.own`,
);

/**
 * A campaign's recipients sent and failed over time (its runs' included, its test sends not), from
 * its logs through their (organization, campaign) index: in buckets of whole minutes from its first
 * log, as few minutes as keep them to about `:points`, each bucket's start and counts, the buckets
 * with none left out.
 */
export const funnelTimeline = statement<{ orgId: string; campaignId: string; points: number }, { minutes: number; at: Date; sent: number; failed: number }>(
  'herald_stats_funnel_timeline',
  `WITH logs AS (
     SELECT created_at, success_count, failed_count FROM message_logs
     WHERE organization_id = :orgId AND campaign_id = ANY(ARRAY(SELECT id FROM (${MEMBERS}) m)) AND NOT test AND settled_at IS NOT NULL),
   span AS (
     SELECT min(created_at) AS first, greatest(1, ceil(extract(epoch FROM max(created_at) - min(created_at)) / 60 / :points::int))::int AS minutes FROM logs)
   SELECT span.minutes, date_bin(make_interval(mins => span.minutes), l.created_at, span.first) AS at,
          sum(l.success_count)::bigint AS sent, sum(l.failed_count)::bigint AS failed
   FROM logs l CROSS JOIN span
   GROUP BY span.minutes, 2
   ORDER BY 2`,
);
