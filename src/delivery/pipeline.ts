import { randomUUID } from 'node:crypto';
import pMap from 'p-map';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { paymentRequired } from '../lib/errors.js';
import { characterCount, preview, unitCost } from './cost.js';
import type { Quotas } from '../modules/quotas/quotas.js';
import type { BoundChannel } from './registry.js';
import type { Attachment, Channel, DeliveryResult, DeliveryTarget, OutboundMessage } from './types.js';

export const LOG_BATCH = 100;
const AD_HOC_ATTEMPTS = 3;

export interface RecipientInput {
  recipient: string;
  /** Set when the address could not be used: the recipient is logged as failed and not charged. */
  invalid?: string;
  clientId?: string;
}

export interface SendRequest {
  orgId: string;
  fromName: string;
  senderUserId: string | null;
  senderApiKeyId: string | null;
  channel: Channel;
  body: string;
  subject?: string;
  attachments?: Attachment[];
  recipients: RecipientInput[];
  campaignId?: string | null;
  /** The channel bound to the organization's credentials (see `Delivery.channelFor`). */
  via: BoundChannel;
}

export interface RecipientOutcome {
  recipient: string;
  status: 'success' | 'failed';
  error?: string;
}

interface LogRecipient {
  recipient: string;
  status: 'pending' | 'success' | 'failed';
  error?: string;
}

interface Batch {
  logId: string;
  recipients: RecipientInput[];
  reserved: number;
}

export interface PipelineDeps {
  config: Config;
  db: Db;
  log: Logger;
  quotas: Quotas;
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Sends one message to many recipients: reserves the credits and writes the logs (recipients
 * pending) in one transaction, calls the provider batch by batch with bounded concurrency, then
 * settles each batch (recipient results, cost, refund of the unused reservation) in one transaction.
 */
export async function deliver(deps: PipelineDeps, req: SendRequest): Promise<RecipientOutcome[]> {
  const unit = unitCost(deps.config, req.channel, req.body);
  const batches: Batch[] = [];
  for (let i = 0; i < req.recipients.length; i += LOG_BATCH) {
    const recipients = req.recipients.slice(i, i + LOG_BATCH).map((r) => ({ ...r, clientId: r.clientId ?? randomUUID() }));
    const valid = recipients.filter((r) => !r.invalid).length;
    batches.push({ logId: randomUUID(), recipients, reserved: round2(unit * valid) });
  }
  const total = round2(batches.reduce((sum, b) => sum + b.reserved, 0));
  await deps.quotas.sendMessages(req.orgId, req.recipients.filter((r) => !r.invalid).length);

  await deps.db.transaction(async (trx) => {
    if (total > 0) {
      const updated = await trx('organizations')
        .where({ id: req.orgId })
        .andWhere('credits', '>=', total)
        .decrement('credits', total)
        .returning('credits');
      if (!updated.length) {
        const org = await trx('organizations').where({ id: req.orgId }).first('credits');
        throw paymentRequired(`Insufficient credits: this send needs ${total} credits and the balance is ${Number(org?.credits ?? 0)}`);
      }
    }
    await trx('message_logs').insert(
      batches.map((b) => {
        const recipients: LogRecipient[] = b.recipients.map((r) =>
          r.invalid ? { recipient: r.recipient, status: 'failed', error: r.invalid } : { recipient: r.recipient, status: 'pending' },
        );
        const failed = recipients.filter((r) => r.status === 'failed').length;
        return {
          organization_id: req.orgId,
          id: b.logId,
          channel: req.channel,
          sender_user_id: req.senderUserId,
          sender_api_key_id: req.senderApiKeyId,
          campaign_id: req.campaignId ?? null,
          recipients: JSON.stringify(recipients),
          pending_count: recipients.length - failed,
          failed_count: failed,
          message_preview: preview(req.body),
          message_length: characterCount(req.body),
          unit_cost: unit,
          reserved: b.reserved,
        };
      }),
    );
  });

  const message: OutboundMessage = {
    channel: req.channel,
    orgId: req.orgId,
    fromName: req.fromName,
    subject: req.subject,
    body: req.body,
    attachments: req.attachments,
  };
  const settled = await pMap(
    batches,
    async (batch) => {
      const targets = batch.recipients.filter((r) => !r.invalid) as DeliveryTarget[];
      const results = await sendWithRetries((some) => req.via(message, some), targets);
      return settle(deps, req.orgId, batch, unit, results);
    },
    { concurrency: Math.max(1, Math.ceil(deps.config.sendConcurrency / 2)) },
  );
  return settled.flat();
}

/** Retries the retryable failures of an ad hoc send a few times, with exponential backoff and jitter. */
export async function sendWithRetries(call: (targets: DeliveryTarget[]) => Promise<DeliveryResult[]>, targets: DeliveryTarget[]) {
  const final = new Map<string, DeliveryResult>();
  let pending = targets;
  for (let attempt = 1; pending.length; attempt++) {
    const results = await call(pending);
    const retry: DeliveryTarget[] = [];
    results.forEach((r, i) => {
      if (!r.ok && r.retryable && attempt < AD_HOC_ATTEMPTS) retry.push(pending[i]!);
      else final.set(pending[i]!.clientId, r);
    });
    pending = retry;
    if (pending.length) await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1) * (0.5 + Math.random())));
  }
  return targets.map((t) => final.get(t.clientId)!);
}

async function settle(deps: PipelineDeps, orgId: string, batch: Batch, unit: number, results: DeliveryResult[]): Promise<RecipientOutcome[]> {
  const byClient = new Map<string, DeliveryResult>();
  batch.recipients
    .filter((r) => !r.invalid)
    .forEach((r, i) => byClient.set(r.clientId!, results[i]!));
  const outcomes: RecipientOutcome[] = batch.recipients.map((r) => {
    if (r.invalid) return { recipient: r.recipient, status: 'failed', error: r.invalid };
    const res = byClient.get(r.clientId!)!;
    return res.ok ? { recipient: r.recipient, status: 'success' } : { recipient: r.recipient, status: 'failed', error: res.error ?? 'Delivery failed' };
  });
  const successes = outcomes.filter((o) => o.status === 'success').length;
  const cost = round2(unit * successes);
  const network = results.find((r) => r.ok)?.network ?? results[0]?.network ?? null;
  await deps.db.transaction(async (trx) => {
    // A log the sweeper already settled as abandoned keeps that outcome and its refund.
    const updated = await trx('message_logs')
      .where({ organization_id: orgId, id: batch.logId })
      .whereNull('settled_at')
      .update({
        recipients: JSON.stringify(outcomes),
        pending_count: 0,
        success_count: successes,
        failed_count: outcomes.length - successes,
        cost,
        network,
        settled_at: trx.raw('now()'),
        updated_at: trx.raw("date_trunc('milliseconds', now())"),
      });
    const refund = round2(batch.reserved - cost);
    if (updated && refund > 0) await trx('organizations').where({ id: orgId }).increment('credits', refund);
  });
  return outcomes;
}

/**
 * Settles ad hoc sends whose process died between reserving and settling: their still-pending
 * recipients are marked failed (never charged) and the reservation is released, so logs and credits
 * agree again. Campaign logs are left to the campaign sweeper, which sends them again.
 */
export async function settleAbandoned(db: Db, olderThanSeconds: number): Promise<number> {
  const result = await db.raw(
    `WITH stale AS (
       SELECT organization_id, id, reserved, cost FROM message_logs
       WHERE settled_at IS NULL AND campaign_id IS NULL AND created_at < now() - make_interval(secs => ?)
       FOR UPDATE SKIP LOCKED
     ), settled AS (
       UPDATE message_logs m
       SET recipients = (
             SELECT json_agg(CASE WHEN r->>'status' = 'pending'
                                  THEN json_build_object('recipient', r->>'recipient', 'status', 'failed', 'error', 'Delivery interrupted')
                                  ELSE r::json END)
             FROM json_array_elements(m.recipients) AS r),
           failed_count = m.failed_count + m.pending_count, pending_count = 0, reserved = m.cost,
           settled_at = now(), updated_at = date_trunc('milliseconds', now())
       FROM stale WHERE m.organization_id = stale.organization_id AND m.id = stale.id
       RETURNING m.organization_id, stale.reserved - stale.cost AS refund
     ), refunds AS (
       UPDATE organizations o SET credits = o.credits + r.refund
       FROM (SELECT organization_id, sum(refund) AS refund FROM settled GROUP BY organization_id) r
       WHERE o.id = r.organization_id AND r.refund > 0
       RETURNING o.id
     )
     SELECT (SELECT count(*) FROM settled)::int AS n`,
    [olderThanSeconds],
  );
  return result.rows[0].n;
}
