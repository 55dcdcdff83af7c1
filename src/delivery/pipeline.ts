import { randomUUID } from 'node:crypto';
import pMap from 'p-map';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { jsonRows, run } from '../db/statements.js';
import { characterCount, preview, unitCost } from './cost.js';
import * as credits from './credits.js';
import { round2 } from './credits.js';
import { MAX_LOG_RECIPIENTS, pendingRecipientsJson, settledRecipientsJson } from './log-recipients.js';
import type { BoundChannel } from './registry.js';
import { sendWithRetries } from './retries.js';
import { abandonedLogOrganizations, insertPendingLogs, settleAbandonedLogs, settleLogs } from './sql/logs.js';
import { LogTarget, type Attachment, type Channel, type DeliveryResult, type OutboundMessage } from './types.js';

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
  reserved: number;
}

export interface PipelineDeps {
  config: Config;
  db: Db;
  log: Logger;
}

/**
 * Sends one message to many recipients: reserves the credits and writes the logs (recipients
 * pending) in one statement, calls the provider batch by batch with bounded concurrency, and settles
 * the finished batches (recipient results, cost, refund of the unused reservation) as they come in,
 * several logs per statement, while the next batches are with the provider.
 */
export async function deliver(deps: PipelineDeps, req: SendRequest): Promise<RecipientOutcome[]> {
  const unit = unitCost(deps.config, req.channel, req.body);
  const batches: Batch[] = [];
  for (let i = 0; i < req.recipients.length; i += MAX_LOG_RECIPIENTS) {
    const logId = randomUUID();
    const recipients = req.recipients.slice(i, i + MAX_LOG_RECIPIENTS);
    const targets: LogTarget[] = [];
    recipients.forEach((r, position) => {
      if (!r.invalid) targets.push(new LogTarget(r.recipient, logId, position + 1));
    });
    batches.push({ logId, recipients, targets, reserved: round2(unit * targets.length) });
  }
  const total = round2(batches.reduce((sum, b) => sum + b.reserved, 0));

  // The reservation and the pending logs commit together: the logs are written only when the
  // balance covered the whole send, and the reservation's row lock makes concurrent sends queue.
  const reserved = await deps.db.transaction(async (trx) => {
    if (!(await credits.reserve(trx, req.orgId, total))) return false;
    await run(trx, insertPendingLogs, {
      orgId: req.orgId,
      channel: req.channel,
      senderUserId: req.senderUserId,
      senderApiKeyId: req.senderApiKeyId,
      campaignId: req.campaignId ?? null,
      preview: preview(req.body),
      length: characterCount(req.body),
      unitCost: unit,
      logs: jsonRows(
        batches.map((b) => ({
          id: b.logId,
          recipients: pendingRecipientsJson(b.recipients),
          pending_count: b.targets.length,
          failed_count: b.recipients.length - b.targets.length,
          reserved: b.reserved,
        })),
        'recipients',
      ),
    });
    return true;
  });
  if (!reserved) throw await credits.shortfall(deps.db, req.orgId, total, 'send');

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

interface Settlement {
  id: string;
  /** JSON text, as stored. */
  recipients: string;
  success_count: number;
  failed_count: number;
  cost: number;
  network: string | null;
  /** What the log holds (not written: it tells whether the settle releases anything). */
  held: number;
}

/** Logs written per settle statement: bounds the statement's size when many batches finish at once. */
const SETTLE_CHUNK = 25;

/**
 * Writes the results of one send's batches, one transaction at a time and several logs per
 * transaction. Each is atomic on its own: it settles only logs still unsettled (one the sweeper already
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
      held: batch.reserved,
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

  private async write(chunk: Settlement[]) {
    const input = { orgId: this.orgId, logs: jsonRows(chunk.map(({ held: _held, ...log }) => log), 'recipients') };
    // Every recipient delivered spends exactly what its log held: nothing to release, so the settle
    // is one statement on its own; a transaction only when something goes back.
    if (round2(chunk.reduce((sum, c) => sum + c.held - c.cost, 0)) <= 0) {
      await run(this.db, settleLogs, input);
      return;
    }
    await this.db.transaction(async (trx) => {
      const settled = await run(trx, settleLogs, input);
      await credits.release(trx, this.orgId, settled.reduce((sum, s) => sum + Number(s.refund), 0));
    });
  }
}

/**
 * Settles ad hoc sends whose process died between reserving and settling: their still-pending
 * recipients are marked failed (never charged) and the reservation is released, so logs and credits
 * agree again. Campaign logs are left to the campaign sweeper, which sends them again.
 */
export async function settleAbandoned(db: Db, olderThanSeconds: number, limit = 1000): Promise<number> {
  const orgs = await run(db, abandonedLogOrganizations, { olderThanSeconds, limit });
  let count = 0;
  for (const { organization_id: orgId } of orgs) {
    count += await db.transaction(async (trx) => {
      const settled = await run(trx, settleAbandonedLogs, { orgId, olderThanSeconds, error: 'Delivery interrupted', limit });
      await credits.release(trx, orgId, settled.reduce((sum, s) => sum + Number(s.refund), 0));
      return settled.length;
    });
  }
  return count;
}
