import { randomUUID } from 'node:crypto';
import pMap from 'p-map';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { jsonRows, run } from '../db/statements.js';
import { countSettled } from '../lib/metrics.js';
import { TemplateRenderError } from '../lib/templates.js';
import { unitCost } from './cost.js';
import { logTextOf, PersonalLogText, tally, type LogText } from './tally.js';
import * as credits from './credits.js';
import { round2 } from './credits.js';
import { MAX_LOG_RECIPIENTS, pendingRecipientsJson, settledRecipientsJson } from './log-recipients.js';
import { bouncesOf, type BoundChannel, type Delivery, type SyncBounce } from './registry.js';
import type { Lane } from './pace.js';
import { wake } from './outbox.js';
import { abandonedLogOrganizations, insertPendingLogs, settleAbandonedLogs, settleLogs } from './sql/logs.js';
import { LogTarget, type Attachment, type Channel, type DeliveryResult, type OutboundMessage, type TargetContent } from './types.js';

export interface RecipientInput {
  recipient: string;
  /** Set when the address could not be used (or its message rendered): the recipient is logged as failed and not charged. */
  invalid?: string;
  /** The recipient's own message, when the send is personalised; without it, the send's shared message. */
  own?: OwnMessage;
}

/** A recipient's own message (platform.md, "Personalised messages"), rendered when the send was priced. */
export interface OwnMessage {
  /** Credits it costs: its rendered text's. */
  cost: number;
  /** Its rendered text's first 100 characters and length, for its log. */
  preview: string;
  length: number;
  /**
   * What it is sent, once its log and position are known (`at`: a tracked email's links name
   * them). A message not held since pricing is rendered again here; it throws
   * `TemplateRenderError` when that render fails, and the recipient fails, uncharged.
   */
  content(at: { logId: string; position: number }): TargetContent;
}

export interface SendRequest {
  orgId: string;
  fromName: string;
  senderUserId: string | null;
  senderApiKeyId: string | null;
  channel: Channel;
  /** The message recipients without their own are sent (a personalised send's texts as written). */
  body: string;
  subject?: string;
  attachments?: Attachment[];
  recipients: RecipientInput[];
  campaignId?: string | null;
  /** A campaign's test send (`POST /campaigns/:id/test`): its logs say so, and its campaign never counts them. */
  test?: boolean;
  /** The channel bound to the organization's credentials (see `Delivery.channelFor`). */
  via: BoundChannel;
  /** Transactional (given recipients, a test send) or bulk (every contact). */
  lane: Lane;
}

export interface RecipientOutcome {
  recipient: string;
  status: 'success' | 'failed';
  error?: string;
}

interface Batch {
  logId: string;
  recipients: RecipientInput[];
  /** What its valid recipients cost together: what its log holds. */
  reserved: number;
  /** The message its log shows. */
  text: LogText;
}

export interface PipelineDeps {
  config: Config;
  db: Db;
  log: Logger;
  delivery: Pick<Delivery, 'bounced'>;
}

/** What a send costs, as it reserves it. */
export interface SendPrice {
  /** Credits a recipient of the shared message costs. */
  unit: number;
  /** The recipients by log (at most `MAX_LOG_RECIPIENTS` each), with what each log's valid recipients cost together. */
  logs: { recipients: RecipientInput[]; reserved: number }[];
  /** What the send reserves: every log's. */
  total: number;
}

/**
 * Prices a send: each valid recipient its own message (`own.cost`) or the shared one, a recipient
 * that cannot be sent nothing. A send and its estimate (`POST /notifications/estimate`) both read it,
 * so the estimate is what the send reserves.
 */
export function priceOf(config: Config, channel: Channel, body: string, recipients: RecipientInput[]): SendPrice {
  const unit = unitCost(config, channel, body);
  const logs: SendPrice['logs'] = [];
  for (let i = 0; i < recipients.length; i += MAX_LOG_RECIPIENTS) {
    const part = recipients.slice(i, i + MAX_LOG_RECIPIENTS);
    logs.push({ recipients: part, reserved: round2(part.reduce((sum, r) => (r.invalid ? sum : sum + (r.own?.cost ?? unit)), 0)) });
  }
  return { unit, logs, total: round2(logs.reduce((sum, l) => sum + l.reserved, 0)) };
}

/**
 * Sends one message to many recipients: reserves the credits and writes the logs (recipients
 * pending) in one statement, calls the provider batch by batch with bounded concurrency, and settles
 * the finished batches (recipient results, cost, refund of the unused reservation) as they come in,
 * several logs per statement, while the next batches are with the provider. A personalised
 * recipient (`own`) is sent and charged its own message; the others share the send's.
 */
export async function deliver(deps: PipelineDeps, req: SendRequest): Promise<RecipientOutcome[]> {
  const { unit, logs, total } = priceOf(deps.config, req.channel, req.body, req.recipients);
  const shared = logTextOf(req.body, unit);
  const batches: Batch[] = logs.map((l) => ({ logId: randomUUID(), ...l, text: logText(l.recipients, shared) }));

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
      test: req.test ?? false,
      logs: jsonRows(
        batches.map((b) => {
          const pending = b.recipients.filter((r) => !r.invalid).length;
          return {
            id: b.logId,
            recipients: pendingRecipientsJson(b.recipients),
            pending_count: pending,
            failed_count: b.recipients.length - pending,
            reserved: b.reserved,
            preview: b.text.preview,
            length: b.text.length,
            unit_cost: b.text.unit,
          };
        }),
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
  const settler = new Settler(deps.db, req.orgId, req.channel, req.test ? 'test' : req.campaignId ? 'campaign' : 'adhoc');
  let settled: RecipientOutcome[][];
  const bounces: SyncBounce[] = [];
  try {
    settled = await pMap(
      batches,
      async (batch) => {
        settler.throwIfFailed();
        const { targets, unsent } = targetsOf(batch);
        const results = await req.via.send(message, targets, { lane: req.lane });
        bounces.push(...bouncesOf(targets, results));
        return settler.add(batch, unit, unsent, results);
      },
      { concurrency: Math.max(1, Math.ceil(deps.config.sendConcurrency / 2)) },
    );
  } finally {
    // Also after a failed send: the batches that did go out are settled before the error surfaces.
    await settler.idle();
  }
  settler.throwIfFailed();
  // Refusals at the send are bounces, recorded against the logs just written.
  await deps.delivery.bounced(req.orgId, bounces);
  return settled.flat();
}

/**
 * The message a log shows: the send's shared one, or, for a log of personalised recipients, its
 * first recipient's text, its longest text's length and its dearest recipient's cost (as a campaign
 * batch's log does). A log none of whose recipients has its own message shows the shared one.
 */
function logText(recipients: RecipientInput[], shared: LogText): LogText {
  const own = new PersonalLogText();
  for (const r of recipients) if (r.own && !r.invalid) own.addMeasured(r.own);
  return own.result() ?? shared;
}

/**
 * What a batch gives the provider: a target per valid recipient, in order, with its own content when
 * it has one; and, by position, the recipients whose message could not be rendered now (see
 * `OwnMessage.content`), which are not sent.
 */
function targetsOf(batch: Batch): { targets: LogTarget[]; unsent: Map<number, string> } {
  const targets: LogTarget[] = [];
  const unsent = new Map<number, string>();
  batch.recipients.forEach((r, i) => {
    if (r.invalid) return;
    if (!r.own) {
      targets.push(new LogTarget(r.recipient, batch.logId, i + 1));
      return;
    }
    try {
      targets.push(new LogTarget(r.recipient, batch.logId, i + 1, r.own.content({ logId: batch.logId, position: i + 1 })));
    } catch (err) {
      if (!(err instanceof TemplateRenderError)) throw err;
      unsent.set(i, err.message);
    }
  });
  return { targets, unsent };
}

interface Settlement {
  id: string;
  /** JSON text, as stored. */
  recipients: string;
  success_count: number;
  failed_count: number;
  cost: number;
  network: string | null;
  /** Each recipient's provider message id, by position; null when the provider gave none. */
  provider_ids: (string | null)[] | null;
  /** Who carried the recipients (`Tally.carriers`). */
  carriers: (string | null)[] | null;
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
    /** What the metrics count its recipients under. */
    private readonly channel: Channel,
    private readonly kind: 'adhoc' | 'campaign' | 'test',
  ) {}

  /**
   * Queues a batch's results for writing and returns its recipients' outcomes. Each success is
   * charged what it costs: its own message's price, else the shared `unit`.
   */
  add(batch: Batch, unit: number, unsent: ReadonlyMap<number, string>, results: DeliveryResult[]): RecipientOutcome[] {
    const { recipients } = batch;
    const t = tally(
      recipients.length,
      (i) => recipients[i]!.invalid ?? unsent.get(i),
      (i) => recipients[i]!.own?.cost ?? unit,
      results,
      { next: 0 },
    );
    const outcomes: RecipientOutcome[] = recipients.map((r, i) => {
      const error = t.errors?.get(i);
      return error === undefined ? { recipient: r.recipient, status: 'success' } : { recipient: r.recipient, status: 'failed', error };
    });
    this.queue.push({
      id: batch.logId,
      recipients: settledRecipientsJson(outcomes),
      success_count: t.sent,
      failed_count: outcomes.length - t.sent,
      cost: t.cost,
      network: t.network,
      provider_ids: t.providerIds,
      carriers: t.carriers,
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
    const settled =
      round2(chunk.reduce((sum, c) => sum + c.held - c.cost, 0)) <= 0
        ? await run(this.db, settleLogs, input)
        : await this.db.transaction(async (trx) => {
            const rows = await run(trx, settleLogs, input);
            await credits.release(trx, this.orgId, rows.reduce((sum, s) => sum + Number(s.refund), 0));
            return rows;
          });
    countSettled(
      this.channel,
      this.kind,
      settled.reduce((sum, s) => sum + s.success_count, 0),
      settled.reduce((sum, s) => sum + s.failed_count, 0),
    );
    await wake(this.db, this.orgId, settled[0]?.webhook_endpoints);
  }
}

/**
 * Settles ad hoc sends whose process died between reserving and settling: their still-pending
 * recipients are marked failed (never charged) and the reservation is released, so logs and credits
 * agree again. Campaign logs are left to the campaign sweeper, which sends them again (a campaign's
 * test send is this pipeline's, and settled here).
 */
export async function settleAbandoned(db: Db, olderThanSeconds: number, limit = 1000): Promise<number> {
  const orgs = await run(db, abandonedLogOrganizations, { olderThanSeconds, limit });
  let count = 0;
  for (const { organization_id: orgId } of orgs) {
    const settled = await db.transaction(async (trx) => {
      const rows = await run(trx, settleAbandonedLogs, { orgId, olderThanSeconds, error: 'Delivery interrupted', limit });
      await credits.release(trx, orgId, rows.reduce((sum, s) => sum + Number(s.refund), 0));
      return rows;
    });
    await wake(db, orgId, settled[0]?.webhook_endpoints);
    count += settled.length;
  }
  return count;
}
