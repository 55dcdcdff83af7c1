import { statement } from '../../db/statements.js';

/**
 * The rollup of what an organization sent (the dashboard's days, a campaign's funnel): the one home
 * of what counts, in which quarter of an hour, and how it gets into `message_stats_buckets` (per
 * bucket and channel) and `message_stats_campaigns` (per campaign and channel). `modules/stats`
 * reads them.
 *
 * Every statement that settles logs or changes receipts adds what it changed as rows of
 * `message_stats_changes`, in a step of its own (`countSettledLogs`, `countReceiptChanges`), and
 * the sweep folds those rows into the two tables (`foldChanges`); a read adds the rows not folded
 * yet. Why this, and not an upsert of the bucket's row in those statements, nor a job reading the
 * logs:
 * - the count commits or rolls back with the change it counts, so the figures equal the logs';
 * - an insert waits on no other transaction. An upsert would make every settle and receipt of an
 *   organization queue on its bucket's row until their commits (an ad hoc send that spends what it
 *   held settles in one statement holding no shared row), and a statement would lock that row and
 *   its campaign's in an order of its own: settles and receipts would deadlock;
 * - a job reading logs and receipts since a watermark misses what a transaction still open wrote
 *   before the watermark passed it, and receipts change their rows in place;
 * - folding deletes the rows it adds up in the same statement, so each is counted once however
 *   many sweeps run, and a read sees any row either folded or not, never both.
 *
 * Figures are counted per quarter of an hour (UTC, from the hour), in `message_stats_buckets`:
 * every time zone's offset from UTC is whole quarters of an hour, so a day of any zone is a whole set
 * of buckets and a reader asks for days in its own zone (`modules/stats`). Each bucket counts the
 * recipients of the messages sent in it (a log's `created_at`): sent, failed and credits once the
 * log settles, delivered, opened, clicked, bounced and complained as their receipts arrive, so
 * every share of a day is of that day's sends. `unsubscribed` counts contacts that left a channel
 * through a message's unsubscribe link, in the bucket they left in (`countUnsubscribe`). A
 * campaign's test send counts in the bucket, not in its campaign.
 */

/** The length of a bucket, and SQL for the bucket of the instant `at` (a timestamptz expression). */
export const BUCKET_MINUTES = 15;
export const bucketOf = (at: string) => `date_bin('${BUCKET_MINUTES} minutes', ${at}, TIMESTAMPTZ '2000-01-01 00:00:00+00')`;

/** The counters of every table of the rollup, in this order. */
export const STATS_COUNTERS = ['sent', 'failed', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'credits'] as const;
const COUNTERS = STATS_COUNTERS.join(', ');

/**
 * SQL: the body of a step counting the logs a statement settled, `logs` being the step that
 * settled them, returning each one's `channel`, `campaign_id`, `test`, `success_count`,
 * `failed_count`, `cost` and `created_at` as they are now.
 */
export const countSettledLogs = (logs: string) => `
  INSERT INTO message_stats_changes (organization_id, bucket, channel, campaign_id, sent, failed, credits)
  SELECT :orgId, ${bucketOf('l.created_at')}, l.channel, CASE WHEN l.test THEN NULL ELSE l.campaign_id END,
         sum(l.success_count), sum(l.failed_count), sum(l.cost)
  FROM ${logs} l
  GROUP BY 2, 3, 4`;

/**
 * SQL: the body of a step counting the receipts a statement changed, `changed` being the step with
 * each recipient's `log_id`, `campaign_id` (its campaign's counters' own) and how its `delivered`,
 * `opened`, `clicked`, `bounced` and `complained` moved (0 or 1 each). The bucket and channel are its
 * log's (one read by primary key per recipient that moved).
 */
export const countReceiptChanges = (changed: string) => `
  INSERT INTO message_stats_changes (organization_id, bucket, channel, campaign_id, delivered, opened, clicked, bounced, complained)
  SELECT :orgId, ${bucketOf('m.created_at')}, m.channel, ch.campaign_id,
         sum(ch.delivered), sum(ch.opened), sum(ch.clicked), sum(ch.bounced), sum(ch.complained)
  FROM ${changed} ch
  JOIN message_logs m ON m.organization_id = :orgId AND m.id = ch.log_id
  WHERE ch.delivered + ch.opened + ch.clicked + ch.bounced + ch.complained > 0
  GROUP BY 2, 3, 4`;

const sums = (table: string) => STATS_COUNTERS.map((c) => `${c} = ${table}.${c} + EXCLUDED.${c}`).join(', ');
const summed = STATS_COUNTERS.map((c) => `sum(${c})`).join(', ');

/**
 * Folds up to `:limit` of the organization's changes into its buckets and campaigns, deleting them in
 * the same statement; answers how many. Rows another fold is deleting are waited for and skipped.
 * Grouped rows are upserted in key order, so two folds lock the rollup's rows in the same order.
 */
export const foldChanges = statement<{ orgId: string; limit: number }, { folded: number }>(
  'herald_stats_fold',
  `WITH folded AS (
     DELETE FROM message_stats_changes
     WHERE organization_id = :orgId AND id IN (SELECT id FROM message_stats_changes WHERE organization_id = :orgId LIMIT :limit)
     RETURNING bucket, channel, campaign_id, ${COUNTERS}),
   buckets AS (
     INSERT INTO message_stats_buckets AS b (organization_id, bucket, channel, ${COUNTERS})
     SELECT :orgId, bucket, channel, ${summed} FROM folded GROUP BY bucket, channel ORDER BY bucket, channel
     ON CONFLICT (organization_id, bucket, channel) DO UPDATE SET ${sums('b')}),
   campaigns AS (
     INSERT INTO message_stats_campaigns AS c (organization_id, campaign_id, channel, ${COUNTERS})
     SELECT :orgId, campaign_id, channel, ${summed} FROM folded WHERE campaign_id IS NOT NULL GROUP BY campaign_id, channel ORDER BY campaign_id, channel
     ON CONFLICT (organization_id, campaign_id, channel) DO UPDATE SET ${sums('c')})
   SELECT count(*)::int AS folded FROM folded`,
);

/**
 * A contact of `:orgId` left `:channel` through the unsubscribe link of a message of campaign
 * `:campaignId`, now: one more `unsubscribed` for the campaign and the bucket it left in.
 */
export const countUnsubscribe = statement<{ orgId: string; channel: string; campaignId: string }>(
  'herald_stats_count_unsubscribe',
  `INSERT INTO message_stats_changes (organization_id, bucket, channel, campaign_id, unsubscribed)
   VALUES (:orgId, ${bucketOf('now()')}, :channel, :campaignId::uuid, 1)`,
);

/** Organizations with changes to fold: a read across organizations, each then folded on its own (on Citus, its own shard). */
export const organizationsWithChanges = statement<{ limit: number }, { organization_id: string }>(
  'herald_stats_organizations_with_changes',
  'SELECT DISTINCT organization_id FROM message_stats_changes LIMIT :limit',
);
