import { statement } from '../../db/statements.js';

/**
 * The rollup of what an organization sent (the dashboard's days, a campaign's funnel): the one home
 * of what counts, on which day, and how it gets into `message_stats_daily` (per day and channel) and
 * `message_stats_campaigns` (per campaign and channel). `modules/stats` reads them.
 *
 * Every statement that settles logs or changes receipts adds what it changed as rows of
 * `message_stats_changes`, in a step of its own (`countSettledLogs`, `countReceiptChanges`), and
 * the sweep folds those rows into the two tables (`foldChanges`); a read adds the rows not folded
 * yet. Why this, and not an upsert of the day's row in those statements, nor a job reading the logs:
 * - the count commits or rolls back with the change it counts, so the figures equal the logs';
 * - an insert waits on no other transaction. An upsert would make every settle and receipt of an
 *   organization queue on its day's row until their commits (an ad hoc send that spends what it
 *   held settles in one statement holding no shared row), and a statement would lock that row and
 *   its campaign's in an order of its own: settles and receipts would deadlock;
 * - a job reading logs and receipts since a watermark misses what a transaction still open wrote
 *   before the watermark passed it, and receipts change their rows in place;
 * - folding deletes the rows it adds up in the same statement, so each is counted once however
 *   many sweeps run, and a read sees any row either folded or not, never both.
 *
 * A day is UTC: organizations keep no time zone. Each day counts the recipients of the messages
 * sent that day (a log's `created_at`): sent, failed and credits once the log settles, delivered,
 * opened, clicked, bounced and complained as their receipts arrive, so every share of a day is of
 * that day's sends. A campaign's test send counts in the day, not in its campaign.
 */

/** The zone days are counted in. */
export const STATS_TIME_ZONE = 'UTC';

/** SQL: the day of the instant `at` (a timestamptz expression). */
export const dayOf = (at: string) => `(${at} AT TIME ZONE '${STATS_TIME_ZONE}')::date`;

/** The counters of every table of the rollup, in this order. */
export const STATS_COUNTERS = ['sent', 'failed', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'credits'] as const;
const COUNTERS = STATS_COUNTERS.join(', ');

/**
 * SQL: the body of a step counting the logs a statement settled, `logs` being the step that
 * settled them, returning each one's `channel`, `campaign_id`, `test`, `success_count`,
 * `failed_count`, `cost` and `created_at` as they are now.
 */
export const countSettledLogs = (logs: string) => `
  INSERT INTO message_stats_changes (organization_id, day, channel, campaign_id, sent, failed, credits)
  SELECT :orgId, ${dayOf('l.created_at')}, l.channel, CASE WHEN l.test THEN NULL ELSE l.campaign_id END,
         sum(l.success_count), sum(l.failed_count), sum(l.cost)
  FROM ${logs} l
  GROUP BY 2, 3, 4`;

/**
 * SQL: the body of a step counting the receipts a statement changed, `changed` being the step with
 * each recipient's `log_id`, `campaign_id` (its campaign's counters' own) and how its `delivered`,
 * `opened`, `clicked`, `bounced` and `complained` moved (0 or 1 each). The day and channel are its
 * log's (one read by primary key per recipient that moved).
 */
export const countReceiptChanges = (changed: string) => `
  INSERT INTO message_stats_changes (organization_id, day, channel, campaign_id, delivered, opened, clicked, bounced, complained)
  SELECT :orgId, ${dayOf('m.created_at')}, m.channel, ch.campaign_id,
         sum(ch.delivered), sum(ch.opened), sum(ch.clicked), sum(ch.bounced), sum(ch.complained)
  FROM ${changed} ch
  JOIN message_logs m ON m.organization_id = :orgId AND m.id = ch.log_id
  WHERE ch.delivered + ch.opened + ch.clicked + ch.bounced + ch.complained > 0
  GROUP BY 2, 3, 4`;

const sums = (table: string) => STATS_COUNTERS.map((c) => `${c} = ${table}.${c} + EXCLUDED.${c}`).join(', ');
const summed = STATS_COUNTERS.map((c) => `sum(${c})`).join(', ');

/**
 * Folds up to `:limit` of the organization's changes into its days and campaigns, deleting them in
 * the same statement; answers how many. Rows another fold is deleting are waited for and skipped.
 * Grouped rows are upserted in key order, so two folds lock the rollup's rows in the same order.
 */
export const foldChanges = statement<{ orgId: string; limit: number }, { folded: number }>(
  'herald_stats_fold',
  `WITH folded AS (
     DELETE FROM message_stats_changes
     WHERE organization_id = :orgId AND id IN (SELECT id FROM message_stats_changes WHERE organization_id = :orgId LIMIT :limit)
     RETURNING day, channel, campaign_id, ${COUNTERS}),
   daily AS (
     INSERT INTO message_stats_daily AS d (organization_id, day, channel, ${COUNTERS})
     SELECT :orgId, day, channel, ${summed} FROM folded GROUP BY day, channel ORDER BY day, channel
     ON CONFLICT (organization_id, day, channel) DO UPDATE SET ${sums('d')}),
   campaigns AS (
     INSERT INTO message_stats_campaigns AS c (organization_id, campaign_id, channel, ${COUNTERS})
     SELECT :orgId, campaign_id, channel, ${summed} FROM folded WHERE campaign_id IS NOT NULL GROUP BY campaign_id, channel ORDER BY campaign_id, channel
     ON CONFLICT (organization_id, campaign_id, channel) DO UPDATE SET ${sums('c')})
   SELECT count(*)::int AS folded FROM folded`,
);

/** Organizations with changes to fold: a read across organizations, each then folded on its own (on Citus, its own shard). */
export const organizationsWithChanges = statement<{ limit: number }, { organization_id: string }>(
  'herald_stats_organizations_with_changes',
  'SELECT DISTINCT organization_id FROM message_stats_changes LIMIT :limit',
);
