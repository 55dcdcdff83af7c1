import type { Knex } from 'knex';

/**
 * The rollup the dashboard and campaign funnels read (`src/delivery/sql/stats.ts` keeps it):
 *
 * - `message_stats_changes`: what each settle or receipt statement added, one narrow row per bucket,
 *   channel and campaign it touched, inserted in the statement itself. Insert-only, so concurrent
 *   sends and receipts never wait on each other's row here; the sweep folds them into the two tables
 *   below and deletes them in one statement.
 * - `message_stats_buckets`: per quarter of an hour (UTC, from the hour) and channel. Every time
 *   zone's offset from UTC is whole quarters of an hour, so the days of any zone are whole sets of
 *   buckets: a reader asks for days in its own zone, and each is summed from 96 (or 92 or 100) rows.
 * - `message_stats_campaigns`: per campaign (a run is a campaign of its own) and channel.
 *
 * Each bucket counts the recipients of the messages sent in it (a log's `created_at`): sent,
 * failed and credits from the settled log, delivered, opened, clicked, bounced and complained from
 * their receipts whenever those arrive. `unsubscribed` counts contacts that left a channel through
 * a message's unsubscribe link, when they left. `backfill` counts what the database already holds.
 */
const COUNTERS = `sent bigint NOT NULL DEFAULT 0, failed bigint NOT NULL DEFAULT 0, delivered bigint NOT NULL DEFAULT 0,
  opened bigint NOT NULL DEFAULT 0, clicked bigint NOT NULL DEFAULT 0, bounced bigint NOT NULL DEFAULT 0,
  complained bigint NOT NULL DEFAULT 0, unsubscribed bigint NOT NULL DEFAULT 0, credits numeric(16, 2) NOT NULL DEFAULT 0`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE message_stats_changes (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      bucket timestamptz NOT NULL,
      channel text NOT NULL,
      campaign_id uuid,
      ${COUNTERS},
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw(`
    CREATE TABLE message_stats_buckets (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      bucket timestamptz NOT NULL,
      channel text NOT NULL,
      ${COUNTERS},
      PRIMARY KEY (organization_id, bucket, channel)
    )`);
  await knex.raw(`
    CREATE TABLE message_stats_campaigns (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL,
      channel text NOT NULL,
      ${COUNTERS},
      PRIMARY KEY (organization_id, campaign_id, channel)
    )`);
  await backfill(knex);
}

/** SQL: the quarter of an hour of the instant `at`, as `delivery/sql/stats.ts` buckets it. */
const bucketOf = (at: string) => `date_bin('15 minutes', ${at}, TIMESTAMPTZ '2000-01-01 00:00:00+00')`;

/**
 * The rollup of the logs and receipts already stored, as the statements would have counted them:
 * a settled log's recipients and cost in the quarter of an hour it was written, each receipt's
 * firsts in its log's, a campaign's test sends in the bucket but not in the campaign.
 */
export async function backfill(knex: Knex): Promise<void> {
  const counted = `
    SELECT m.organization_id, ${bucketOf('m.created_at')} AS bucket, m.channel,
           CASE WHEN m.test THEN NULL ELSE m.campaign_id END AS campaign_id,
           m.success_count AS sent, m.failed_count AS failed, 0 AS delivered, 0 AS opened, 0 AS clicked, 0 AS bounced, 0 AS complained, 0 AS unsubscribed, m.cost AS credits
    FROM message_logs m WHERE m.settled_at IS NOT NULL
    UNION ALL
    SELECT r.organization_id, ${bucketOf('m.created_at')}, m.channel, r.campaign_id, 0, 0,
           (r.delivered_at IS NOT NULL)::int, (r.opened_at IS NOT NULL OR r.read_at IS NOT NULL)::int, (r.clicked_at IS NOT NULL)::int,
           (r.bounced_at IS NOT NULL)::int, (r.complained_at IS NOT NULL)::int, 0, 0
    FROM recipient_receipts r JOIN message_logs m ON m.organization_id = r.organization_id AND m.id = r.log_id`;
  const sums = `sum(sent), sum(failed), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(unsubscribed), sum(credits)`;
  const columns = 'sent, failed, delivered, opened, clicked, bounced, complained, unsubscribed, credits';
  await knex.raw(`
    INSERT INTO message_stats_buckets (organization_id, bucket, channel, ${columns})
    SELECT organization_id, bucket, channel, ${sums} FROM (${counted}) c GROUP BY organization_id, bucket, channel`);
  await knex.raw(`
    INSERT INTO message_stats_campaigns (organization_id, campaign_id, channel, ${columns})
    SELECT organization_id, campaign_id, channel, ${sums} FROM (${counted}) c WHERE campaign_id IS NOT NULL GROUP BY organization_id, campaign_id, channel`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE message_stats_campaigns');
  await knex.raw('DROP TABLE message_stats_buckets');
  await knex.raw('DROP TABLE message_stats_changes');
}
