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

interface Claimed {
  id: string;
  address: string;
  batch_no: number;
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

function byBatch<T extends { batch_no: number }>(rows: T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const row of rows) out.set(row.batch_no, [...(out.get(row.batch_no) ?? []), row]);
  return out;
}

/**
 * Sends one chunk of a campaign exactly once per recipient: recipients are claimed in the database
 * (pending, or sending with an expired lease after a crash), credits reserved and the batches' logs
 * written in the same transaction; after the provider answers, the logs, the credits, the recipients
 * and the campaign's analytics are settled together. A duplicate or retried job finds nothing to claim.
 */
export async function processChunk(deps: BatchDeps, ref: ChunkRef): Promise<number> {
  const { db, config } = deps;
  const campaign = (await db('campaigns').where({ organization_id: ref.orgId, id: ref.campaignId }).first()) as CampaignRow | undefined;
  const content = campaign?.messages[ref.channel];
  if (!campaign || campaign.status !== 'active' || !content) return 0;
  const body = content.content;
  const subject = 'subject' in content ? content.subject : undefined;
  const unit = unitCost(config, ref.channel, body);
  const first = ref.chunkNo * BATCHES_PER_CHUNK;

  const claimed = await db.transaction(async (trx) => {
    const rows = (
      await trx.raw(
        `UPDATE campaign_recipients SET status = 'sending', claimed_at = now(), attempts = attempts + 1, updated_at = now()
         WHERE organization_id = ? AND campaign_id = ? AND channel = ? AND batch_no BETWEEN ? AND ?
           AND (status = 'pending' OR (status = 'sending' AND claimed_at < now() - make_interval(secs => ?)))
           AND EXISTS (SELECT 1 FROM campaigns WHERE organization_id = ? AND id = ? AND status = 'active')
         RETURNING id, address, batch_no`,
        [ref.orgId, ref.campaignId, ref.channel, first, first + BATCHES_PER_CHUNK - 1, config.campaignLeaseSeconds, ref.orgId, ref.campaignId],
      )
    ).rows as Claimed[];
    if (!rows.length) return rows;
    const batches = byBatch(rows);
    const logIds = [...batches.keys()].map((b) => batchLogId(ref.campaignId, ref.channel, b));
    // A batch retried after a crash already holds a reservation in its log; reserve only the rest.
    const held = new Map<string, number>(
      (await trx('message_logs').where({ organization_id: ref.orgId }).whereIn('id', logIds).forUpdate().select('id', 'reserved')).map(
        (l: { id: string; reserved: number }) => [l.id, Number(l.reserved)],
      ),
    );
    const heldTotal = [...held.values()].reduce((a, b) => a + b, 0);
    const extra = round2(unit * rows.length - heldTotal);
    const reserved =
      extra <= 0 ||
      (await trx('organizations').where({ id: ref.orgId }).andWhere('credits', '>=', extra).decrement('credits', extra).returning('id')).length > 0;
    const values = [...batches].map(([batchNo, list]) => {
      const id = batchLogId(ref.campaignId, ref.channel, batchNo);
      return [
        ref.orgId, id, ref.channel, campaign.created_by, ref.campaignId,
        JSON.stringify(list.map((r) => ({ recipient: r.address, status: 'pending' }))),
        list.length, preview(body), characterCount(body), unit, reserved ? Math.max(held.get(id) ?? 0, round2(unit * list.length)) : (held.get(id) ?? 0),
      ];
    });
    await trx.raw(
      `INSERT INTO message_logs (organization_id, id, channel, sender_user_id, campaign_id, recipients, pending_count,
                                 message_preview, message_length, unit_cost, reserved)
       VALUES ${values.map(() => '(?, ?, ?, ?, ?, ?::json, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT (organization_id, id) DO UPDATE
         SET recipients = EXCLUDED.recipients, pending_count = EXCLUDED.pending_count, success_count = 0, failed_count = 0,
             reserved = EXCLUDED.reserved, settled_at = NULL, updated_at = date_trunc('milliseconds', now())`,
      values.flat(),
    );
    if (!reserved) {
      await settle(trx, ref, unit, rows, rows.map((r) => ({ recipient: r.address, ok: false, error: INSUFFICIENT, network: 'herald' })));
      return [];
    }
    return rows;
  });
  if (!claimed.length) return 0;

  const channel = await deps.delivery.channelFor(ref.orgId, ref.channel).catch((err: Error) => ({ error: err.message }));
  let results: DeliveryResult[];
  if ('error' in channel) {
    results = claimed.map((r) => ({ recipient: r.address, ok: false, error: channel.error, network: 'herald' }));
  } else {
    const message: OutboundMessage = { channel: ref.channel, orgId: ref.orgId, fromName: channel.fromName, subject, body };
    const targets = claimed.map((r) => ({ recipient: r.address, clientId: r.id }));
    results = await sendWithRetries((some) => channel.send(message, some), targets);
  }
  await db.transaction((trx) => settle(trx, ref, unit, claimed, results));
  return claimed.length;
}

async function settle(trx: Knex.Transaction, ref: ChunkRef, unit: number, claimed: Claimed[], results: DeliveryResult[]) {
  // Serialise the settling of a campaign's chunks, so the last one sees every other and completes it.
  await trx('campaigns').where({ organization_id: ref.orgId, id: ref.campaignId }).forUpdate().first('id');
  const rows = claimed.map((c, i) => ({ ...c, result: results[i]! }));
  const logs = [...byBatch(rows)].map(([batchNo, list]) => {
    const sent = list.filter((r) => r.result.ok).length;
    return {
      id: batchLogId(ref.campaignId, ref.channel, batchNo),
      recipients: JSON.stringify(
        list.map(({ address, result }) =>
          result.ok ? { recipient: address, status: 'success' } : { recipient: address, status: 'failed', error: result.error ?? 'Delivery failed' },
        ),
      ),
      sent,
      failed: list.length - sent,
      cost: round2(unit * sent),
      network: list.find((r) => r.result.ok)?.result.network ?? list[0]!.result.network ?? null,
    };
  });
  const refunded = await trx.raw(
    `WITH v AS (SELECT * FROM unnest(?::uuid[], ?::text[], ?::int[], ?::int[], ?::numeric[], ?::text[]) AS t(id, recipients, sent, failed, cost, network)),
          old AS (SELECT m.id, m.reserved FROM message_logs m JOIN v ON v.id = m.id WHERE m.organization_id = ?),
          upd AS (
            UPDATE message_logs m SET recipients = v.recipients::json, pending_count = 0, success_count = v.sent, failed_count = v.failed,
                   cost = v.cost, reserved = v.cost, network = v.network, settled_at = now(), updated_at = date_trunc('milliseconds', now())
            FROM v WHERE m.organization_id = ? AND m.id = v.id RETURNING m.id)
     SELECT coalesce(sum(old.reserved - v.cost), 0)::float AS refund FROM old JOIN v ON v.id = old.id`,
    [logs.map((l) => l.id), logs.map((l) => l.recipients), logs.map((l) => l.sent), logs.map((l) => l.failed), logs.map((l) => l.cost), logs.map((l) => l.network) as string[], ref.orgId, ref.orgId],
  );
  const refund = round2(refunded.rows[0].refund);
  if (refund > 0) await trx('organizations').where({ id: ref.orgId }).increment('credits', refund);
  await trx.raw(
    `UPDATE campaign_recipients AS cr SET status = v.status, error = v.error, updated_at = now()
     FROM (SELECT * FROM unnest(?::uuid[], ?::text[], ?::text[]) AS t(id, status, error)) AS v
     WHERE cr.organization_id = ? AND cr.campaign_id = ? AND cr.id = v.id`,
    [rows.map((r) => r.id), rows.map((r) => (r.result.ok ? 'sent' : 'failed')), rows.map((r) => (r.result.ok ? null : (r.result.error ?? 'Delivery failed'))) as string[], ref.orgId, ref.campaignId],
  );
  const sent = rows.filter((r) => r.result.ok).length;
  await trx('campaigns')
    .where({ organization_id: ref.orgId, id: ref.campaignId })
    .update({ sent: trx.raw('sent + ?', [sent]), failed: trx.raw('failed + ?', [rows.length - sent]), updated_at: trx.raw("date_trunc('milliseconds', now())") });
  await completeIfDone(trx, ref.orgId, ref.campaignId);
}

/** `active` -> `completed` once no recipient is pending or being sent. */
export async function completeIfDone(trx: Knex | Knex.Transaction, orgId: string, campaignId: string): Promise<boolean> {
  const updated = await trx.raw(
    `UPDATE campaigns SET status = 'completed', completed_at = now(), updated_at = date_trunc('milliseconds', now())
     WHERE organization_id = ? AND id = ? AND status = 'active'
       AND NOT EXISTS (SELECT 1 FROM campaign_recipients
                       WHERE organization_id = ? AND campaign_id = ? AND status IN ('pending', 'sending'))
     RETURNING id`,
    [orgId, campaignId, orgId, campaignId],
  );
  return updated.rows.length > 0;
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
 * Chunks that stalled (never claimed, or claimed by a worker that died) for longer than the lease,
 * in campaigns still active: the sweeper queues them again. Claiming decides who sends, so a chunk
 * queued twice is still sent once.
 */
export async function stalledChunks(db: Db, leaseSeconds: number, limit = 5000): Promise<ChunkRef[]> {
  const rows = await db.raw(
    `SELECT DISTINCT cr.organization_id AS "orgId", cr.campaign_id AS "campaignId", cr.channel, cr.batch_no / ? AS "chunkNo"
     FROM campaign_recipients cr
     JOIN campaigns c ON c.organization_id = cr.organization_id AND c.id = cr.campaign_id AND c.status = 'active'
     WHERE cr.status IN ('pending', 'sending') AND cr.updated_at < now() - make_interval(secs => ?)
     LIMIT ?`,
    [BATCHES_PER_CHUNK, leaseSeconds, limit],
  );
  return (rows.rows as ChunkRef[]).map((r) => ({ ...r, chunkNo: Number(r.chunkNo) }));
}

export { BATCH_SIZE };
