import { statement } from '../../db/statements.js';
import { pendingFailedSql } from '../log-recipients.js';
import { logEventsSql, outboxWrites, WEBHOOK_ENDPOINTS, WOKEN, type Woken } from '../outbox.js';
import { countSettledLogs } from './stats.js';

/**
 * The statements of ad hoc sends' message logs. Credits move in `../credits.ts`, in the same
 * transaction as these.
 */

/**
 * One send's logs, written pending (recipients in their stored form, see `../log-recipients.ts`).
 * Each log names its own message (preview, length, unit cost): a personalised send's logs each show
 * their first recipient's text, so they differ.
 */
export const insertPendingLogs = statement<{
  orgId: string;
  channel: string;
  senderUserId: string | null;
  senderApiKeyId: string | null;
  campaignId: string | null;
  /** A campaign's test send: never counted in its analytics. */
  test: boolean;
  /** `jsonRows` of `{ id, recipients (JSON text), pending_count, failed_count, reserved, preview, length, unit_cost }`. */
  logs: string;
}>(
  'herald_logs_insert_pending',
  `INSERT INTO message_logs (organization_id, id, channel, sender_user_id, sender_api_key_id, campaign_id, test, recipients,
                             pending_count, failed_count, message_preview, message_length, unit_cost, reserved)
   SELECT :orgId, l.id, :channel, :senderUserId::uuid, :senderApiKeyId::uuid, :campaignId::uuid, :test::boolean, l.recipients,
          l.pending_count, l.failed_count, l.preview, l.length, l.unit_cost, l.reserved
   FROM json_to_recordset(:logs::json)
     AS l(id uuid, recipients json, pending_count int, failed_count int, reserved numeric, preview text, length int, unit_cost numeric)`,
);

/**
 * Logs of one organization by id, in no order (the caller orders them): their recipients as stored
 * (JSON text, see `../log-recipients.ts`), what they hold, and whether they are settled. What a send
 * written before it is sent reads back a few logs at a time, and what answers it again.
 */
export const logsById = statement<{ orgId: string; ids: readonly string[] }, { id: string; recipients: string; reserved: string; settled: boolean }>(
  'herald_logs_by_id',
  `SELECT id, recipients::text AS recipients, reserved, settled_at IS NOT NULL AS settled
   FROM message_logs WHERE organization_id = :orgId AND id = ANY(:ids::uuid[])`,
);

/**
 * Marks a send's logs still pending as alive (`updated_at`): a send that lasts longer than the
 * sweeper waits for (`settleAbandonedLogs`), one to every contact, tells it so while it sends them.
 */
export const touchPendingLogs = statement<{ orgId: string; ids: readonly string[] }>(
  'herald_logs_touch_pending',
  `UPDATE message_logs SET updated_at = date_trunc('milliseconds', now())
   WHERE organization_id = :orgId AND id = ANY(:ids::uuid[]) AND settled_at IS NULL`,
);

/**
 * Writes the results of a send's logs that are still unsettled (one the sweeper settled as abandoned
 * keeps that outcome and its refund) and answers, per log settled here, what its reservation did not
 * spend and its recipients' outcomes.
 */
export const settleLogs = statement<
  {
    orgId: string;
    /** `jsonRows` of `{ id, recipients (JSON text), success_count, failed_count, cost, network, provider_ids, carriers }`. */
    logs: string;
  },
  { refund: number; success_count: number; failed_count: number } & Woken
>(
  'herald_logs_settle',
  `WITH ${WEBHOOK_ENDPOINTS},
        settled AS (
          UPDATE message_logs m
          SET recipients = i.recipients, pending_count = 0, success_count = i.success_count, failed_count = i.failed_count,
              cost = i.cost, network = i.network, provider_ids = i.provider_ids, carriers = i.carriers, settled_at = now(), updated_at = date_trunc('milliseconds', now())
          FROM json_to_recordset(:logs::json) AS i(id uuid, recipients json, success_count int, failed_count int, cost numeric, network text, provider_ids text[], carriers uuid[])
          WHERE m.organization_id = :orgId AND m.id = i.id AND m.settled_at IS NULL
          RETURNING m.reserved - i.cost AS refund, m.id, m.campaign_id, m.channel, m.test, m.success_count, m.failed_count, m.settled_at, m.cost, m.created_at),
        -- The daily rollup counts them in this statement (see \`./stats.ts\` for why here).
        stats AS (${countSettledLogs('settled')}),
        ${outboxWrites(logEventsSql('settled'), 's.settled_log_id')}
   SELECT settled.refund, settled.success_count, settled.failed_count, ${WOKEN} FROM settled`,
);

/**
 * Organizations with ad hoc logs left unsettled longer than `olderThanSeconds` (their process died
 * between reserving and settling), unsettled and untouched for that long: a send still going marks
 * its pending logs (`touchPendingLogs`). A campaign's test send is written by the same pipeline, so it
 * counts as ad hoc here; a campaign's own logs are its sweeper's. A read across organizations, without locks: each is then settled
 * on its own (`settleAbandonedLogs`), where its rows can be locked (on Citus, on its own shard).
 */
export const abandonedLogOrganizations = statement<{ olderThanSeconds: number; limit: number }, { organization_id: string }>(
  'herald_logs_abandoned_organizations',
  `SELECT DISTINCT organization_id FROM message_logs
   WHERE settled_at IS NULL AND (campaign_id IS NULL OR test) AND created_at < now() - make_interval(secs => :olderThanSeconds)
     AND updated_at < now() - make_interval(secs => :olderThanSeconds)
   LIMIT :limit`,
);

/**
 * One organization's abandoned ad hoc logs (see `abandonedLogOrganizations`): pending recipients fail
 * with `error`, never charged; answers each log's reservation it no longer holds. The failed
 * recipients are worked out in the locking read, so the update only copies columns (Citus runs no
 * function of a row's columns in an UPDATE's SET).
 */
export const settleAbandonedLogs = statement<{ orgId: string; olderThanSeconds: number; error: string; limit: number }, { refund: number } & Woken>(
  'herald_logs_settle_abandoned',
  `WITH ${WEBHOOK_ENDPOINTS},
        stale AS (
     SELECT id, reserved, cost, ${pendingFailedSql('recipients', ':error::text')} AS recipients
     FROM message_logs
     WHERE organization_id = :orgId AND settled_at IS NULL AND (campaign_id IS NULL OR test)
       AND created_at < now() - make_interval(secs => :olderThanSeconds) AND updated_at < now() - make_interval(secs => :olderThanSeconds)
     LIMIT :limit
     FOR UPDATE SKIP LOCKED)
   , settled AS (
     UPDATE message_logs m
     SET recipients = stale.recipients, failed_count = m.failed_count + m.pending_count, pending_count = 0, reserved = m.cost,
         settled_at = now(), updated_at = date_trunc('milliseconds', now())
     FROM stale WHERE m.organization_id = :orgId AND m.id = stale.id
     RETURNING stale.reserved - stale.cost AS refund, m.id, m.campaign_id, m.channel, m.test, m.success_count, m.failed_count, m.settled_at, m.cost, m.created_at),
     stats AS (${countSettledLogs('settled')}),
     ${outboxWrites(logEventsSql('settled'), 's.settled_log_id')}
   SELECT settled.refund, ${WOKEN} FROM settled`,
);
