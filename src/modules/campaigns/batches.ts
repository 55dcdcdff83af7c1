import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { characterCount, preview, unitCost } from '../../delivery/cost.js';
import { round2, sendWithRetries } from '../../delivery/pipeline.js';
import type { Delivery } from '../../delivery/registry.js';
import type { Channel, DeliveryResult, OutboundMessage } from '../../delivery/types.js';
import { BATCH_SIZE } from './audience.js';
import type { CampaignRow } from './dto.js';

/** Batches (of 100 recipients, one log each) handled by one job: fewer jobs, locks and round trips. */
export const BATCHES_PER_CHUNK = 10;

export interface BatchDeps {
  config: Config;
  db: Db;
  log: Logger;
  delivery: Delivery;
}

/** One job's worth of a campaign: batches `chunkNo * 10` to `chunkNo * 10 + 9` of one channel. */
export interface ChunkRef {
  orgId: string;
  campaignId: string;
  channel: Channel;
  chunkNo: number;
}

/** A recipient of a batch this worker has claimed, with its batch's log. */
interface Claimed {
  id: string;
  address: string;
  batch_no: number;
  log_id: string;
  /** What the log held before this claim (a batch reclaimed after a crash keeps its reservation). */
  held: number;
  inserted: boolean;
}

const INSUFFICIENT = 'Insufficient credits';

/**
 * The log of one campaign batch has an id derived from the batch, so a batch retried after a crash
 * rewrites its own log instead of adding a second one: each recipient ends with exactly one entry.
 */
export function batchLogId(campaignId: string, channel: Channel, batchNo: number): string {
  const h = createHash('sha1').update(`campaign-batch:${campaignId}:${channel}:${batchNo}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const chunkOf = (batchNo: number) => Math.floor(batchNo / BATCHES_PER_CHUNK);

function byLog<T extends { log_id: string }>(rows: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    const list = out.get(row.log_id);
    if (list) list.push(row);
    else out.set(row.log_id, [row]);
  }
  return out;
}

/**
 * Sends one chunk of a campaign exactly once per recipient. A batch is claimed by writing its log
 * (recipients pending): the log's id is the batch's, so of two workers only one inserts it, and a
 * log left unsettled by a dead worker is taken over once its lease (`updated_at`) has expired.
 * Credits are reserved in the claiming transaction. After the provider answers, one statement
 * settles the logs still unsettled, the recipients, the credits and the campaign's counters (which
 * complete it). A duplicate or retried job finds nothing to claim.
 */
export async function processChunk(deps: BatchDeps, ref: ChunkRef): Promise<number> {
  const { db, config } = deps;
  const campaign = (await db('campaigns').where({ organization_id: ref.orgId, id: ref.campaignId }).first('status', 'messages', 'created_by')) as
    | Pick<CampaignRow, 'status' | 'messages' | 'created_by'>
    | undefined;
  const content = campaign?.messages[ref.channel];
  if (!campaign || campaign.status !== 'active' || !content) return 0;
  const body = content.content;
  const subject = 'subject' in content ? content.subject : undefined;
  const unit = unitCost(config, ref.channel, body);
  const first = ref.chunkNo * BATCHES_PER_CHUNK;
  const batchNos = Array.from({ length: BATCHES_PER_CHUNK }, (_, i) => first + i);

  const claimed = await db.transaction(async (trx) => {
    const rows = (
      await trx.raw(
        `WITH b AS (SELECT * FROM unnest(?::int[], ?::uuid[]) AS b(batch_no, log_id)),
              r AS (
                SELECT cr.id, cr.address, cr.batch_no FROM campaign_recipients cr
                WHERE cr.organization_id = ? AND cr.campaign_id = ? AND cr.channel = ? AND cr.batch_no BETWEEN ? AND ?
                  AND cr.status IN ('pending', 'sending')
                  AND EXISTS (SELECT 1 FROM campaigns WHERE organization_id = ? AND id = ? AND status = 'active')),
              ins AS (
                INSERT INTO message_logs AS m (organization_id, id, channel, sender_user_id, campaign_id, recipients, pending_count,
                                               message_preview, message_length, unit_cost, reserved)
                SELECT ?, b.log_id, ?, ?, ?, json_agg(json_build_object('recipient', r.address, 'status', 'pending') ORDER BY r.address),
                       count(*), ?, ?, ?, round(?::numeric * count(*), 2)
                FROM r JOIN b USING (batch_no) GROUP BY b.log_id
                ON CONFLICT (organization_id, id) DO UPDATE
                  SET recipients = EXCLUDED.recipients, pending_count = EXCLUDED.pending_count, success_count = 0, failed_count = 0,
                      updated_at = date_trunc('milliseconds', now())
                  WHERE m.settled_at IS NULL AND m.updated_at < now() - make_interval(secs => ?)
                RETURNING m.id, m.reserved, m.xmax = 0 AS inserted)
         SELECT r.id, r.address, r.batch_no, ins.id AS log_id, CASE WHEN ins.inserted THEN 0 ELSE ins.reserved END::float AS held, ins.inserted
         FROM ins JOIN b ON b.log_id = ins.id JOIN r USING (batch_no)
         ORDER BY r.batch_no, r.address`,
        [
          batchNos, batchNos.map((n) => batchLogId(ref.campaignId, ref.channel, n)),
          ref.orgId, ref.campaignId, ref.channel, first, first + BATCHES_PER_CHUNK - 1, ref.orgId, ref.campaignId,
          ref.orgId, ref.channel, campaign.created_by, ref.campaignId, preview(body), characterCount(body), unit, unit,
          config.campaignLeaseSeconds,
        ],
      )
    ).rows as Claimed[];
    if (!rows.length) return { rows, reserved: new Map<string, number>() };
    // A batch taken over after a crash already holds its reservation in its log; reserve only the rest.
    const logs = [...byLog(rows)].map(([id, list]) => ({ id, held: list[0]!.held, inserted: list[0]!.inserted, full: round2(unit * list.length) }));
    const extra = round2(logs.reduce((sum, l) => sum + Math.max(0, l.full - l.held), 0));
    const ok =
      extra <= 0 ||
      (await trx('organizations').where({ id: ref.orgId }).andWhere('credits', '>=', extra).decrement('credits', extra).returning('id')).length > 0;
    if (!ok) {
      await settle(trx, ref, unit, rows, new Map(logs.map((l) => [l.id, l.held])), rows.map((r) => ({ recipient: r.address, ok: false, error: INSUFFICIENT, network: 'herald' })));
      return { rows: [], reserved: new Map<string, number>() };
    }
    for (const l of logs.filter((l) => !l.inserted && l.full > l.held)) {
      await trx('message_logs').where({ organization_id: ref.orgId, id: l.id }).update({ reserved: l.full });
    }
    return { rows, reserved: new Map(logs.map((l) => [l.id, Math.max(l.full, l.held)])) };
  });
  if (!claimed.rows.length) return 0;

  const channel = await deps.delivery.channelFor(ref.orgId, ref.channel).catch((err: Error) => ({ error: err.message }));
  let results: DeliveryResult[];
  if ('error' in channel) {
    results = claimed.rows.map((r) => ({ recipient: r.address, ok: false, error: channel.error, network: 'herald' }));
  } else {
    const message: OutboundMessage = { channel: ref.channel, orgId: ref.orgId, fromName: channel.fromName, subject, body };
    const targets = claimed.rows.map((r) => ({ recipient: r.address, clientId: r.id }));
    results = await sendWithRetries((some) => channel.send(message, some), targets);
  }
  await settle(db, ref, unit, claimed.rows, claimed.reserved, results);
  return claimed.rows.length;
}

/**
 * Settles claimed batches in one statement (so in one transaction, and one round trip): the logs
 * still unsettled (a batch settled meanwhile by a worker that took it over is left alone, and so are
 * its recipients and counters), their recipients, the refund of what was reserved and not spent,
 * and the campaign's counters, completing it when every recipient is settled. Row locks are taken
 * logs, then recipients, then the campaign row, so the campaign row is held only until the commit
 * (`cancel`, which locks the campaign row first, skips recipients locked here instead of waiting).
 */
async function settle(
  db: Knex | Knex.Transaction,
  ref: ChunkRef,
  unit: number,
  claimed: Claimed[],
  reserved: Map<string, number>,
  results: DeliveryResult[],
) {
  const rows = claimed.map((c, i) => ({ ...c, result: results[i]! }));
  const logs = [...byLog(rows)].map(([id, list]) => {
    const sent = list.filter((r) => r.result.ok).length;
    return {
      id,
      batchNo: list[0]!.batch_no,
      recipients: JSON.stringify(
        list.map(({ address, result }) =>
          result.ok ? { recipient: address, status: 'success' } : { recipient: address, status: 'failed', error: result.error ?? 'Delivery failed' },
        ),
      ),
      sent,
      failed: list.length - sent,
      cost: round2(unit * sent),
      network: list.find((r) => r.result.ok)?.result.network ?? list[0]!.result.network ?? null,
      reserved: reserved.get(id) ?? 0,
    };
  });
  const failures = JSON.stringify(Object.fromEntries(rows.filter((r) => !r.result.ok).map((r) => [r.id, r.result.error ?? 'Delivery failed'])));
  await db.raw(
    `WITH v AS (SELECT * FROM unnest(?::uuid[], ?::int[], ?::text[], ?::int[], ?::int[], ?::numeric[], ?::text[], ?::numeric[])
                  AS t(id, batch_no, recipients, sent, failed, cost, network, reserved)),
          logs AS (
            UPDATE message_logs m SET recipients = v.recipients::json, pending_count = 0, success_count = v.sent, failed_count = v.failed,
                   cost = v.cost, reserved = v.cost, network = v.network, settled_at = now(), updated_at = date_trunc('milliseconds', now())
            FROM v WHERE m.organization_id = ? AND m.id = ANY(?::uuid[]) AND m.id = v.id AND m.settled_at IS NULL
            RETURNING m.id, v.batch_no, v.reserved - v.cost AS refund),
          -- Looked up by primary key (= ANY), whatever the table's statistics say; failures by id in a JSON object.
          settled AS (
            UPDATE campaign_recipients cr
            SET status = CASE WHEN ?::jsonb ->> cr.id::text IS NULL THEN 'sent' ELSE 'failed' END, error = ?::jsonb ->> cr.id::text, updated_at = now()
            WHERE cr.organization_id = ? AND cr.campaign_id = ? AND cr.id = ANY(?::uuid[])
              AND cr.batch_no = ANY(ARRAY(SELECT batch_no FROM logs))
            RETURNING cr.status),
          n AS (SELECT count(*) FILTER (WHERE status = 'sent') AS sent, count(*) FILTER (WHERE status = 'failed') AS failed FROM settled),
          counted AS (
            UPDATE campaigns c SET sent = c.sent + n.sent, failed = c.failed + n.failed,
                   status = CASE WHEN c.status = 'active' AND c.sent + n.sent + c.failed + n.failed >= c.total_recipients THEN 'completed' ELSE c.status END,
                   completed_at = CASE WHEN c.status = 'active' AND c.sent + n.sent + c.failed + n.failed >= c.total_recipients THEN now() ELSE c.completed_at END,
                   updated_at = date_trunc('milliseconds', now())
            FROM n WHERE c.organization_id = ? AND c.id = ? AND n.sent + n.failed > 0
            RETURNING c.id),
          refunded AS (
            UPDATE organizations o SET credits = o.credits + x.refund
            FROM (SELECT sum(refund) AS refund FROM logs) x WHERE o.id = ? AND x.refund > 0
            RETURNING o.id)
     SELECT (SELECT count(*) FROM counted) + (SELECT count(*) FROM refunded) AS n`,
    [
      logs.map((l) => l.id), logs.map((l) => l.batchNo), logs.map((l) => l.recipients), logs.map((l) => l.sent), logs.map((l) => l.failed),
      logs.map((l) => l.cost), logs.map((l) => l.network) as string[], logs.map((l) => l.reserved),
      ref.orgId, logs.map((l) => l.id),
      failures, failures, ref.orgId, ref.campaignId, rows.map((r) => r.id),
      ref.orgId, ref.campaignId, ref.orgId,
    ],
  );
}

/** The chunks of a campaign that still have recipients to send. */
export async function openChunks(db: Knex | Knex.Transaction, orgId: string, campaignId: string): Promise<ChunkRef[]> {
  const rows = (await db('campaign_recipients')
    .where({ organization_id: orgId, campaign_id: campaignId })
    .whereIn('status', ['pending', 'sending'])
    .distinct('channel', db.raw('batch_no / ? AS chunk_no', [BATCHES_PER_CHUNK]))
    .orderBy(['channel', 'chunk_no'])) as { channel: Channel; chunk_no: number }[];
  return rows.map((r) => ({ orgId, campaignId, channel: r.channel, chunkNo: Number(r.chunk_no) }));
}

/**
 * Chunks of active campaigns with recipients still unsettled a lease after the audience was made
 * (never claimed, or claimed by a worker that died): the sweeper queues them again. Claiming decides
 * who sends, so a chunk queued twice is still sent once, and a batch under a live lease is left alone.
 */
export async function stalledChunks(db: Db, leaseSeconds: number, limit = 5000): Promise<ChunkRef[]> {
  const rows = await db.raw(
    // Per active campaign (status is not indexed, so never a scan of every campaign's recipients).
    `SELECT DISTINCT c.organization_id AS "orgId", c.id AS "campaignId", cr.channel, cr.batch_no / ? AS "chunkNo"
     FROM campaigns c
     CROSS JOIN LATERAL (
       SELECT channel, batch_no FROM campaign_recipients
       WHERE organization_id = c.organization_id AND campaign_id = c.id
         AND status IN ('pending', 'sending') AND updated_at < now() - make_interval(secs => ?)) cr
     WHERE c.status = 'active'
     LIMIT ?`,
    [BATCHES_PER_CHUNK, leaseSeconds, limit],
  );
  return (rows.rows as ChunkRef[]).map((r) => ({ ...r, chunkNo: Number(r.chunkNo) }));
}

export { BATCH_SIZE };
