import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { pMapIterable } from 'p-map';
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
import { expandRecipients, MAX_LOG_RECIPIENTS, pendingRecipientsJson, settledRecipientsJson, type LogRecipient, type StoredRecipient } from './log-recipients.js';
import { bouncesOf, type BoundChannel, type Delivery, type SyncBounce } from './registry.js';
import type { Lane } from './pace.js';
import { wake } from './outbox.js';
import { abandonedLogOrganizations, insertPendingLogs, logsById, settleAbandonedLogs, settleLogs } from './sql/logs.js';
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

/** Who sends what on which channel: what every log and batch of one send share. */
export interface SendHeader {
  orgId: string;
  fromName: string;
  senderUserId: string | null;
  senderApiKeyId: string | null;
  channel: Channel;
  /** The message recipients without their own are sent (a personalised send's texts as written). */
  body: string;
  subject?: string;
  attachments?: Attachment[];
  campaignId?: string | null;
  /** A campaign's test send (`POST /campaigns/:id/test`): its logs say so, and its campaign never counts them. */
  test?: boolean;
  /** The channel bound to the organization's credentials (see `Delivery.channelFor`). */
  via: BoundChannel;
  /** Transactional (given recipients, a test send) or bulk (every contact). */
  lane: Lane;
}

export interface SendRequest extends SendHeader {
  recipients: RecipientInput[];
}

export interface RecipientOutcome {
  recipient: string;
  status: 'success' | 'failed';
  error?: string;
}

/** A recipient as its batch sends it: failed before sending (`invalid`), or sent its own message (`own`) or the shared one. */
export interface BatchRecipient {
  recipient: string;
  invalid?: string;
  own?: Pick<OwnMessage, 'cost' | 'content'>;
}

/** One log's recipients, as the engine sends and settles them. */
export interface Batch {
  logId: string;
  recipients: BatchRecipient[];
  /** What its log holds: what its valid recipients cost together when it was written. */
  reserved: number;
  /** Set for a log settled before its turn came (the sweeper's, see `settleAbandoned`): its outcomes as they stand, nothing sent. */
  settled?: RecipientOutcome[];
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
  logs: PricedLog[];
  /** What the send reserves: every log's. */
  total: number;
}

/** A log's recipients, with what its valid ones cost together. */
export interface PricedLog {
  recipients: RecipientInput[];
  reserved: number;
}

/**
 * Prices a send: each valid recipient its own message (`own.cost`) or the shared one, a recipient
 * that cannot be sent nothing. A send and its estimate (`POST /notifications/estimate`) both read it,
 * so the estimate is what the send reserves.
 */
export function priceOf(config: Config, channel: Channel, body: string, recipients: RecipientInput[]): SendPrice {
  const unit = unitCost(config, channel, body);
  const logs: PricedLog[] = [];
  for (let i = 0; i < recipients.length; i += MAX_LOG_RECIPIENTS) {
    const part = recipients.slice(i, i + MAX_LOG_RECIPIENTS);
    logs.push({ recipients: part, reserved: round2(part.reduce((sum, r) => (r.invalid ? sum : sum + (r.own?.cost ?? unit)), 0)) });
  }
  return { unit, logs, total: round2(logs.reduce((sum, l) => sum + l.reserved, 0)) };
}

/**
 * Writes a send's logs, recipients pending (those that cannot be sent failed already), each showing
 * its message (`logText`; the shared one costs `unit`). In the caller's transaction: the one that
 * reserves what they hold.
 */
export async function writePendingLogs(trx: Knex.Transaction, header: SendHeader, unit: number, logs: readonly (PricedLog & { logId: string })[]): Promise<void> {
  if (!logs.length) return;
  const shared = logTextOf(header.body, unit);
  await run(trx, insertPendingLogs, {
    orgId: header.orgId,
    channel: header.channel,
    senderUserId: header.senderUserId,
    senderApiKeyId: header.senderApiKeyId,
    campaignId: header.campaignId ?? null,
    test: header.test ?? false,
    logs: jsonRows(
      logs.map((l) => {
        const pending = l.recipients.filter((r) => !r.invalid).length;
        const text = logText(l.recipients, shared);
        return {
          id: l.logId,
          recipients: pendingRecipientsJson(l.recipients),
          pending_count: pending,
          failed_count: l.recipients.length - pending,
          reserved: l.reserved,
          preview: text.preview,
          length: text.length,
          unit_cost: text.unit,
        };
      }),
      'recipients',
    ),
  });
}

/**
 * Sends one message to many recipients: reserves the credits and writes the logs (recipients
 * pending) in one transaction, then sends and settles them through the engine (`sendBatches`). A
 * personalised recipient (`own`) is sent and charged its own message; the others share the send's.
 */
export async function deliver(deps: PipelineDeps, req: SendRequest): Promise<RecipientOutcome[]> {
  const { unit, logs, total } = priceOf(deps.config, req.channel, req.body, req.recipients);
  const batches = logs.map((l) => ({ logId: randomUUID(), ...l }));

  // The reservation and the pending logs commit together: the logs are written only when the
  // balance covered the whole send, and the reservation's row lock makes concurrent sends queue.
  const reserved = await deps.db.transaction(async (trx) => {
    if (!(await credits.reserve(trx, req.orgId, total))) return false;
    await writePendingLogs(trx, req, unit, batches);
    return true;
  });
  if (!reserved) throw await credits.shortfall(deps.db, req.orgId, total, 'send');

  const outcomes: RecipientOutcome[] = [];
  for await (const settled of sendBatches(deps, req, unit, batches)) outcomes.push(...settled);
  return outcomes;
}

/**
 * Logs read back per statement: a few batches. Each is held from its read until it is sent, and
 * what outlives a couple of young-generation collections waits for a full one: reading more at a
 * time grows the heap, not the pace.
 */
const LOGS_PER_READ = 2;

/** The logs `ids` names, read `LOGS_PER_READ` at a time, in the order of `ids`, their recipients parsed. */
async function* logsInOrder(db: Db, orgId: string, ids: readonly string[]) {
  for (let i = 0; i < ids.length; i += LOGS_PER_READ) {
    const part = ids.slice(i, i + LOGS_PER_READ);
    const rows = new Map((await run(db, logsById, { orgId, ids: part })).map((r) => [r.id, r]));
    for (const id of part) {
      const row = rows.get(id);
      // A log gone since (the organization closed, or its logs passed their retention) answers nothing.
      if (row) yield { id, reserved: Number(row.reserved), settled: row.settled, recipients: JSON.parse(row.recipients) as StoredRecipient[] };
    }
  }
}

/** A settled log's recipient as a send answers it. */
const outcomeOf = (r: LogRecipient): RecipientOutcome =>
  r.status === 'success' ? { recipient: r.recipient, status: 'success' } : { recipient: r.recipient, status: 'failed', error: r.error };

/**
 * The batches of logs written earlier (`writePendingLogs`) to be sent now, in the order of `logIds`,
 * read from the database a few at a time as the engine asks for them: a send to every contact writes
 * its logs page by page, reserves, then sends them, holding nothing per recipient meanwhile. A
 * pending recipient is sent the shared message unless `personalise` gives it its own (it is handed
 * the batches of each read, the first being the `first`th of `logIds`); one that failed before
 * sending stays failed. A log settled before its turn (the sweeper's) is answered as it stands.
 */
export async function* writtenBatches(
  db: Db,
  orgId: string,
  logIds: readonly string[],
  personalise?: (batches: Batch[], first: number) => Promise<void>,
): AsyncGenerator<Batch> {
  let read: Batch[] = [];
  let first = 0;
  const flush = async () => {
    if (personalise && read.some((b) => !b.settled)) await personalise(read, first);
    first += read.length;
    const out = read;
    read = [];
    return out;
  };
  for await (const log of logsInOrder(db, orgId, logIds)) {
    const recipients: BatchRecipient[] = log.recipients.map((r) =>
      typeof r === 'string' ? { recipient: r } : r.status === 'pending' ? { recipient: r.recipient } : { recipient: r.recipient, invalid: r.error ?? 'Delivery failed' },
    );
    read.push(log.settled ? { logId: log.id, recipients, reserved: log.reserved, settled: expandRecipients(log.recipients, true).map(outcomeOf) } : { logId: log.id, recipients, reserved: log.reserved });
    if (read.length === LOGS_PER_READ) yield* await flush();
  }
  if (read.length) yield* await flush();
}

/** The outcomes of a finished send's logs (named by `logIds`, in order), read from the logs themselves: what answers it again. */
export async function* settledOutcomes(db: Db, orgId: string, logIds: readonly string[]): AsyncGenerator<RecipientOutcome[]> {
  for await (const log of logsInOrder(db, orgId, logIds)) yield expandRecipients(log.recipients, log.settled).map(outcomeOf);
}

/** Batches' bounces held before they are recorded together (`Delivery.bounced`). */
const BOUNCES_HELD = 1000;

/**
 * The engine of every ad hoc send (given recipients, every contact, a campaign's test send): sends
 * `batches`, whose logs are written and paid for, with bounded concurrency, settles each through
 * one `Settler` as its provider answers, and yields each batch's outcomes in the order of `batches`
 * once its settle is written. The settle writes run beside the sends, not in a send slot: batch n
 * is written while batch n+1 is with the provider, and batches that finish together are written
 * together. `batches` is read only a few ahead of what was yielded, so a consumer that takes its
 * time holds the send back, and a source read from the database is read as it is sent. Refusals at
 * the send are bounces, recorded once their logs are settled. A failure (a send that throws, a
 * settle that cannot be written) ends the iteration once the batches that did go out are settled;
 * the logs never sent are left to `settleAbandoned`.
 */
export async function* sendBatches(deps: PipelineDeps, header: SendHeader, unit: number, batches: Iterable<Batch> | AsyncIterable<Batch>): AsyncGenerator<RecipientOutcome[]> {
  const message: OutboundMessage = {
    channel: header.channel,
    orgId: header.orgId,
    fromName: header.fromName,
    subject: header.subject,
    body: header.body,
    attachments: header.attachments,
  };
  const settler = new Settler(deps.db, header.orgId, header.channel, header.test ? 'test' : header.campaignId ? 'campaign' : 'adhoc');
  const concurrency = Math.max(1, Math.ceil(deps.config.sendConcurrency / 2));
  const sent = pMapIterable(
    batches,
    async (batch): Promise<Sent> => {
      if (batch.settled) return { outcomes: batch.settled, written: Promise.resolve(), bounces: [] };
      settler.throwIfFailed();
      const { targets, unsent } = targetsOf(batch);
      const results = await header.via.send(message, targets, { lane: header.lane });
      return { ...settler.add(batch, unit, unsent, results), bounces: bouncesOf(targets, results) };
    },
    // Batches read, sent, or waiting for their settle together: a couple more than are sent at once.
    { concurrency, backpressure: concurrency + 2 },
  );
  let bounces: SyncBounce[] = [];
  try {
    for await (const { outcomes, written, bounces: refused } of sent) {
      await written;
      settler.throwIfFailed();
      bounces.push(...refused);
      if (bounces.length >= BOUNCES_HELD) {
        await deps.delivery.bounced(header.orgId, bounces);
        bounces = [];
      }
      yield outcomes;
    }
  } finally {
    // Also after a failed send: the batches that did go out are settled before the error surfaces.
    await settler.idle();
  }
  settler.throwIfFailed();
  await deps.delivery.bounced(header.orgId, bounces);
}

/** A batch sent: its outcomes, once `written` (its settle, which never rejects: see `Settler.throwIfFailed`), and its refusals. */
interface Sent {
  outcomes: RecipientOutcome[];
  written: Promise<void>;
  bounces: SyncBounce[];
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

/** A log's settle, as `settleLogs` writes it. */
interface SettledLog {
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
}

interface Settlement {
  log: SettledLog;
  /** What the log holds (not written: it tells whether the settle releases anything). */
  held: number;
  /** Called once the write that holds it is done, or failed. */
  written: () => void;
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
   * Queues a batch's results for writing and returns its recipients' outcomes, and `written`, which
   * resolves once the write that holds them is done (or failed: `throwIfFailed` says). Each success
   * is charged what it costs: its own message's price, else the shared `unit`.
   */
  add(batch: Batch, unit: number, unsent: ReadonlyMap<number, string>, results: DeliveryResult[]): { outcomes: RecipientOutcome[]; written: Promise<void> } {
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
    let written!: () => void;
    const done = new Promise<void>((resolve) => (written = resolve));
    this.queue.push({
      log: {
        id: batch.logId,
        recipients: settledRecipientsJson(outcomes),
        success_count: t.sent,
        failed_count: outcomes.length - t.sent,
        cost: t.cost,
        network: t.network,
        provider_ids: t.providerIds,
        carriers: t.carriers,
      },
      held: batch.reserved,
      written,
    });
    // Cleared in a callback, never inside `drain`: a drain with nothing to write ends before it is assigned.
    this.running ??= this.drain().finally(() => (this.running = null));
    return { outcomes, written: done };
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
      for (const c of chunk) c.written();
    }
    // After a failed write, what was queued behind it is never written.
    for (const c of this.queue.splice(0)) c.written();
  }

  private async write(chunk: Settlement[]) {
    const input = { orgId: this.orgId, logs: jsonRows(chunk.map((c) => c.log), 'recipients') };
    // Every recipient delivered spends exactly what its log held: nothing to release, so the settle
    // is one statement on its own; a transaction only when something goes back.
    const settled =
      round2(chunk.reduce((sum, c) => sum + c.held - c.log.cost, 0)) <= 0
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
