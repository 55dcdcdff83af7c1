import { randomUUID } from 'node:crypto';
import pMap from 'p-map';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { paymentRequired } from '../lib/errors.js';
import { characterCount, preview, unitCost } from './cost.js';
import { settledRecipientsJson } from './log-recipients.js';
import type { Quotas } from '../modules/quotas/quotas.js';
import type { BoundChannel } from './registry.js';
import { LogTarget, type Attachment, type Channel, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from './types.js';

export const LOG_BATCH = 100;
const AD_HOC_ATTEMPTS = 3;

export interface RecipientInput {
  recipient: string;
  /** Set when the address could not be used: the recipient is logged as failed and not charged. */
  invalid?: string;
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

interface Batch {
  logId: string;
  recipients: RecipientInput[];
  /** The valid recipients, in order: what goes to the provider. */
  targets: LogTarget[];
  pendingJson: string;
  reserved: number;
}

/**
 * `ARRAY[?, ?, ...]::text[]` for n JSON texts bound one parameter each: a text[] parameter would
 * have node-postgres escape every quote of every document into an array literal, and Postgres parse
 * it back, which cost more than the rest of the statement for a large send.
 */
const textArray = (n: number) => (n ? `ARRAY[${Array.from({ length: n }, () => '?').join(',')}]::text[]` : `'{}'::text[]`);

export interface PipelineDeps {
  config: Config;
  db: Db;
  log: Logger;
  quotas: Quotas;
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Sends one message to many recipients: reserves the credits and writes the logs (recipients
 * pending) in one statement, calls the provider batch by batch with bounded concurrency, and settles
 * the finished batches (recipient results, cost, refund of the unused reservation) as they come in,
 * several logs per statement, while the next batches are with the provider.
 */
export async function deliver(deps: PipelineDeps, req: SendRequest): Promise<RecipientOutcome[]> {
  const unit = unitCost(deps.config, req.channel, req.body);
  const batches: Batch[] = [];
  let valid = 0;
  for (let i = 0; i < req.recipients.length; i += LOG_BATCH) {
    const batch: Batch = { logId: randomUUID(), recipients: req.recipients.slice(i, i + LOG_BATCH), targets: [], pendingJson: '', reserved: 0 };
    // The pending log as JSON text (see log-recipients.ts: a pending recipient is its bare address),
    // written piece by piece while the targets are made.
    let json = '';
    batch.recipients.forEach((r, position) => {
      if (json) json += ',';
      if (r.invalid) json += JSON.stringify({ recipient: r.recipient, status: 'failed', error: r.invalid });
      else {
        json += JSON.stringify(r.recipient);
        batch.targets.push(new LogTarget(r.recipient, batch.logId, position + 1));
      }
    });
    batch.pendingJson = `[${json}]`;
    batch.reserved = round2(unit * batch.targets.length);
    valid += batch.targets.length;
    batches.push(batch);
  }
  const total = round2(batches.reduce((sum, b) => sum + b.reserved, 0));
  await deps.quotas.sendMessages(req.orgId, valid);

  // Reservation and logs in one statement (so one transaction): the logs are written only when the
  // balance covered the whole send, and the update's row lock makes concurrent sends queue on it.
  const written = await deps.db.raw(
    `WITH reserve AS (
       UPDATE organizations SET credits = credits - ?::numeric WHERE id = ? AND ?::numeric > 0 AND credits >= ?::numeric RETURNING id
     )
     INSERT INTO message_logs (organization_id, id, channel, sender_user_id, sender_api_key_id, campaign_id, recipients,
                               pending_count, failed_count, message_preview, message_length, unit_cost, reserved)
     SELECT ?, b.id, ?, ?::uuid, ?::uuid, ?::uuid, b.recipients::json, b.pending_count, b.failed_count, ?, ?::int, ?::numeric, b.reserved
     FROM unnest(?::uuid[], ${textArray(batches.length)}, ?::int[], ?::int[], ?::numeric[]) AS b(id, recipients, pending_count, failed_count, reserved)
     WHERE ?::numeric <= 0 OR EXISTS (SELECT 1 FROM reserve)`,
    [
      total, req.orgId, total, total,
      req.orgId, req.channel, req.senderUserId, req.senderApiKeyId, req.campaignId ?? null, preview(req.body), characterCount(req.body), unit,
      batches.map((b) => b.logId), ...batches.map((b) => b.pendingJson), batches.map((b) => b.targets.length),
      batches.map((b) => b.recipients.length - b.targets.length), batches.map((b) => b.reserved),
      total,
    ],
  );
  if (written.rowCount !== batches.length) {
    const org = await deps.db('organizations').where({ id: req.orgId }).first('credits');
    throw paymentRequired(`Insufficient credits: this send needs ${total} credits and the balance is ${Number(org?.credits ?? 0)}`);
  }

  const message: OutboundMessage = {
    channel: req.channel,
    orgId: req.orgId,
    fromName: req.fromName,
    subject: req.subject,
    body: req.body,
    attachments: req.attachments,
  };
  // The settle writes run beside the sends, not inside a send slot: batch n is written while
  // batch n+1 is with the provider, and batches that finish together are written together.
  const settler = new Settler(deps.db, req.orgId);
  let settled: RecipientOutcome[][];
  try {
    settled = await pMap(
      batches,
      async (batch) => {
        settler.throwIfFailed();
        const results = await sendWithRetries((some) => req.via(message, some), batch.targets);
        return settler.add(batch, unit, results);
      },
      { concurrency: Math.max(1, Math.ceil(deps.config.sendConcurrency / 2)) },
    );
  } finally {
    // Also after a failed send: the batches that did go out are settled before the error surfaces.
    await settler.idle();
  }
  settler.throwIfFailed();
  return settled.flat();
}

/**
 * Retries the retryable failures of an ad hoc send a few times, with exponential backoff and jitter.
 * Results come back in the order of `targets` (tracked by position, so a large send builds no map).
 */
export async function sendWithRetries(call: (targets: DeliveryTarget[]) => Promise<DeliveryResult[]>, targets: DeliveryTarget[]) {
  const final: DeliveryResult[] = new Array(targets.length);
  if (!targets.length) return final;
  let pending: number[] | null = null; // positions still to send; null: all of them
  for (let attempt = 1; ; attempt++) {
    const results = await call(pending ? pending.map((i) => targets[i]!) : targets);
    const retry: number[] = [];
    results.forEach((r, j) => {
      const i = pending ? pending[j]! : j;
      if (!r.ok && r.retryable && attempt < AD_HOC_ATTEMPTS) retry.push(i);
      else final[i] = r;
    });
    if (!retry.length) return final;
    pending = retry;
    await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1) * (0.5 + Math.random())));
  }
}

interface Settlement {
  id: string;
  /** JSON text, as stored. */
  recipients: string;
  success_count: number;
  failed_count: number;
  cost: number;
  network: string | null;
}

/** Logs written per settle statement: bounds the statement's size when many batches finish at once. */
const SETTLE_CHUNK = 25;

/**
 * Writes the results of one send's batches, one statement at a time and several logs per statement.
 * Each statement is atomic on its own: it settles only logs still unsettled (one the sweeper already
 * settled as abandoned keeps that outcome and its refund) and releases exactly their unused
 * reservation. A failed write stops the send; its unsettled logs are left to `settleAbandoned`.
 */
class Settler {
  private queue: Settlement[] = [];
  private running: Promise<void> | null = null;
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly db: Db,
    private readonly orgId: string,
  ) {}

  /** Queues a batch's results for writing and returns its recipients' outcomes. */
  add(batch: Batch, unit: number, results: DeliveryResult[]): RecipientOutcome[] {
    let next = 0;
    let successes = 0;
    const outcomes: RecipientOutcome[] = batch.recipients.map((r) => {
      if (r.invalid) return { recipient: r.recipient, status: 'failed', error: r.invalid };
      const res = results[next++]!;
      if (res.ok) successes++;
      return res.ok ? { recipient: r.recipient, status: 'success' } : { recipient: r.recipient, status: 'failed', error: res.error ?? 'Delivery failed' };
    });
    this.queue.push({
      id: batch.logId,
      recipients: settledRecipientsJson(outcomes),
      success_count: successes,
      failed_count: outcomes.length - successes,
      cost: round2(unit * successes),
      network: results.find((r) => r.ok)?.network ?? results[0]?.network ?? null,
    });
    this.running ??= this.drain();
    return outcomes;
  }

  throwIfFailed() {
    if (this.failure) throw this.failure.error;
  }

  /** Resolves once every queued batch is written (or the writing failed). */
  async idle() {
    while (this.running) await this.running;
  }

  private async drain() {
    while (this.queue.length && !this.failure) {
      const chunk = this.queue.splice(0, SETTLE_CHUNK);
      try {
        await this.write(chunk);
      } catch (error) {
        this.failure = { error };
      }
    }
    this.running = null;
  }

  private write(chunk: Settlement[]) {
    return this.db.raw(
      `WITH input AS (
         SELECT * FROM unnest(?::uuid[], ${textArray(chunk.length)}, ?::int[], ?::int[], ?::numeric[], ?::text[])
           AS i(id, recipients, success_count, failed_count, cost, network)
       ), settled AS (
         UPDATE message_logs m
         SET recipients = i.recipients::json, pending_count = 0, success_count = i.success_count,
             failed_count = i.failed_count, cost = i.cost, network = i.network,
             settled_at = now(), updated_at = date_trunc('milliseconds', now())
         FROM input i
         WHERE m.organization_id = ? AND m.id = i.id AND m.settled_at IS NULL
         RETURNING m.reserved - i.cost AS refund
       )
       UPDATE organizations o SET credits = o.credits + r.refund
       FROM (SELECT sum(refund) AS refund FROM settled) r
       WHERE o.id = ? AND r.refund > 0`,
      [
        chunk.map((c) => c.id), ...chunk.map((c) => c.recipients), chunk.map((c) => c.success_count), chunk.map((c) => c.failed_count),
        chunk.map((c) => c.cost), chunk.map((c) => c.network) as string[], this.orgId, this.orgId,
      ],
    );
  }
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
             -- A pending recipient is a bare address (or, in logs written before that, a pending object).
             SELECT json_agg(CASE WHEN json_typeof(r) = 'string'
                                  THEN json_build_object('recipient', r #>> '{}', 'status', 'failed', 'error', 'Delivery interrupted')
                                  WHEN r->>'status' = 'pending'
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
