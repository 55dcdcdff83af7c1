import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { jsonRows, run } from '../../db/statements.js';
import { characterCount, preview, unitCost } from '../../delivery/cost.js';
import * as credits from '../../delivery/credits.js';
import { round2 } from '../../delivery/credits.js';
import { handOverLease, wake, type SettledLogColumns } from '../../delivery/outbox.js';
import { settledRecipients } from '../../delivery/log-recipients.js';
import type { Delivery, SenderRow } from '../../delivery/registry.js';
import { sendWithRetries } from '../../delivery/retries.js';
import {
  batchesPerChannel,
  claimBatches,
  holdMore,
  interruptedBatches,
  renewBatchLease,
  settleBatches,
  stalledBatches,
} from '../../delivery/sql/batches.js';
import { contactsFor, contactsOfEveryone, Personaliser, type MessageTexts } from '../../delivery/personalise.js';
import { LogTarget, type Channel, type DeliveryResult, type OutboundMessage } from '../../delivery/types.js';
import { countSettled } from '../../lib/metrics.js';
import { TemplateRenderError } from '../../lib/templates.js';
import { batchLogId, batchRange, chunksOf, type ChunkRef } from './chunks.js';
import type { CampaignMessages, CampaignRow } from './dto.js';

export interface BatchDeps {
  config: Config;
  db: Db;
  log: Logger;
  delivery: Delivery;
}

/** A batch this worker has claimed. */
interface Claimed {
  batch_no: number;
  addresses: string[];
  /** The credits it holds. */
  reserved: number;
  logId: string;
}

/** The message a batch's log shows: the shared one, or for a personalised batch its first recipient's. */
interface LogText {
  preview: string;
  length: number;
  unit: number;
}

/**
 * A claimed batch ready to send: per recipient, its target (what goes to the provider) or why it
 * fails unsent (a render over its limits, no credits), and what it costs when sent.
 */
interface Prepared {
  batch: Claimed;
  targets: (LogTarget | null)[];
  failures: (string | null)[];
  costs: number[];
  log: LogText;
}

const INSUFFICIENT = 'Insufficient credits';
const INTERRUPTED = 'Delivery interrupted';

const logText = (text: string, unit: number): LogText => ({ preview: preview(text), length: characterCount(text), unit });

/**
 * Sends one chunk of a campaign exactly once per recipient. Batches are claimed in one transaction
 * that also reserves their credits: a batch is claimable while `pending`, or while `sending` under a
 * lease (`claimed_at`) that has run out (its worker died; the credits it holds are kept, only the
 * rest reserved). Rows another worker is claiming are skipped, so of two workers (or a duplicated
 * job) only one claims a batch. Personalised messages are then rendered per recipient from the
 * template compiled once for the chunk, with the contacts of all its addresses read in one query;
 * a batch whose renders cost more than it holds reserves the difference first. After the provider
 * answers, one transaction settles the batches still `sending`, writes their logs, counts the
 * campaign (completing it) and releases what was not spent.
 */
export async function processChunk(deps: BatchDeps, ref: ChunkRef): Promise<number> {
  const { db, config } = deps;
  // The campaign and its organization (whose credentials the channel is bound to) in one read.
  const row = (await db('campaigns as c')
    .join('organizations as o', 'o.id', 'c.organization_id')
    .where({ 'c.organization_id': ref.orgId, 'c.id': ref.campaignId })
    .first('o.name', 'o.email_from_name', 'o.credentials', 'c.status', 'c.messages', 'c.created_by', 'c.name as campaign_name', 'c.recipient_type')) as
    | (SenderRow & Pick<CampaignRow, 'status' | 'messages' | 'created_by' | 'recipient_type'> & { campaign_name: string })
    | undefined;
  const content = row?.messages[ref.channel];
  if (!row || row.status !== 'active' || !content) return 0;
  const subject = 'subject' in content ? content.subject : undefined;
  const personaliser = new Personaliser(config, ref.channel, { subject, body: content.content }, {
    orgId: ref.orgId,
    organizationName: row.name,
    campaignName: row.campaign_name,
    bulk: true,
  });
  const shared = sharedMessage(personaliser);
  const sharedLog = logText('error' in shared ? content.content : shared.body, 'error' in shared ? 0 : personaliser.costOf(shared.body));

  const { claimed, short } = await claim(db, ref, sharedLog.unit, config.campaignLeaseSeconds);
  if (short) {
    // The balance no longer covers the batches that need more than they hold: they fail, uncharged
    // (credits held by a batch taken over are given back). Claimed at no cost, they move no credits.
    const unpaid = (await claim(db, ref, 0, config.campaignLeaseSeconds)).claimed;
    if (unpaid.length) await settle(db, ref, row.created_by, unpaid.map((batch) => unsent(batch, sharedLog, INSUFFICIENT)), []);
  }
  if (!claimed.length) return 0;

  let prepared: Prepared[];
  if ('error' in shared) prepared = claimed.map((batch) => unsent(batch, sharedLog, shared.error));
  else if (personaliser.personal) prepared = await holdWhatRendersCost(db, ref, await personalise(deps, ref, personaliser, claimed, row));
  else prepared = claimed.map((batch) => sendable(batch, sharedLog, batch.addresses.map((recipient, i) => new LogTarget(recipient, batch.logId, i + 1))));

  const targets = prepared.flatMap((p) => p.targets.filter((t): t is LogTarget => t !== null));
  let channel: ReturnType<Delivery['bind']> | { error: string };
  try {
    channel = deps.delivery.bind(row, ref.channel);
  } catch (err) {
    channel = { error: (err as Error).message };
  }
  let results: DeliveryResult[];
  if ('error' in channel) {
    results = targets.map((t) => failure(t.recipient, channel.error));
  } else {
    const texts = 'error' in shared ? { body: content.content, subject } : shared;
    const message: OutboundMessage = { channel: ref.channel, orgId: ref.orgId, fromName: channel.fromName, subject: texts.subject, body: texts.body };
    // A send that outlasted the lease would have its batches handed to another worker and sent
    // again: while it runs, the lease is renewed every third of its length. A worker that dies
    // stops renewing, and its batches are taken over once the lease runs out, as before.
    const batchNos = claimed.map((b) => b.batch_no);
    const renewal = setInterval(() => {
      run(db, renewBatchLease, { ...keyOf(ref), batchNos }).catch((err: unknown) =>
        deps.log.warn({ err, campaignId: ref.campaignId }, 'campaign lease renewal failed'),
      );
    }, (config.campaignLeaseSeconds * 1000) / 3);
    renewal.unref();
    try {
      results = await sendWithRetries((some) => channel.send(message, some), targets);
    } finally {
      clearInterval(renewal);
    }
  }
  await settle(db, ref, row.created_by, prepared, results);
  return claimed.reduce((sum, b) => sum + b.addresses.length, 0);
}

/** The message every recipient shares, rendered once, or why it cannot be (every recipient then fails with it). */
function sharedMessage(personaliser: Personaliser): MessageTexts | { error: string } {
  try {
    return personaliser.shared();
  } catch (err) {
    if (err instanceof TemplateRenderError) return { error: err.message };
    throw err;
  }
}

const sendable = (batch: Claimed, log: LogText, targets: LogTarget[]): Prepared => ({
  batch,
  targets,
  failures: targets.map(() => null),
  costs: targets.map(() => log.unit),
  log,
});

/** A batch none of whose recipients is sent: each fails with `error`, uncharged. */
const unsent = (batch: Claimed, log: LogText, error: string): Prepared => ({
  batch,
  targets: batch.addresses.map(() => null),
  failures: batch.addresses.map(() => error),
  costs: batch.addresses.map(() => 0),
  log,
});

/**
 * Renders each recipient's own message, with the contacts behind the chunk's addresses read at once:
 * for a campaign to all contacts, as one range of the address index (`contactsOfEveryone`).
 */
async function personalise(
  deps: BatchDeps,
  ref: ChunkRef,
  personaliser: Personaliser,
  claimed: Claimed[],
  campaign: Pick<CampaignRow, 'recipient_type'>,
): Promise<Prepared[]> {
  const addresses = claimed.flatMap((b) => b.addresses);
  const contacts =
    campaign.recipient_type === 'all'
      ? await contactsOfEveryone(deps.db, ref.orgId, ref.channel, addresses, personaliser.contactRead)
      : await contactsFor(deps.db, ref.orgId, ref.channel, addresses, personaliser.contactRead);
  return claimed.map((batch) => {
    const prepared: Prepared = { batch, targets: [], failures: [], costs: [], log: { preview: '', length: 0, unit: 0 } };
    let first: string | null = null;
    batch.addresses.forEach((recipient, i) => {
      try {
        const content = personaliser.forRecipient(recipient, contacts.get(recipient) ?? null);
        const body = content.body!;
        const cost = personaliser.costOf(body);
        // Priced and shown in the log as written; sent with the recipient's tracking links.
        const sent = personaliser.tracked ? personaliser.track(content, { logId: batch.logId, position: i + 1 }) : content;
        prepared.targets.push(new LogTarget(recipient, batch.logId, i + 1, sent));
        prepared.failures.push(null);
        prepared.costs.push(cost);
        first ??= body;
        // A text has at most as many characters as code units: only a longer one can be the longest.
        if (body.length > prepared.log.length) prepared.log.length = Math.max(prepared.log.length, characterCount(body));
        prepared.log.unit = Math.max(prepared.log.unit, cost);
      } catch (err) {
        if (!(err instanceof TemplateRenderError)) throw err;
        prepared.targets.push(null);
        prepared.failures.push(err.message);
        prepared.costs.push(0);
      }
    });
    prepared.log.preview = preview(first ?? '');
    return prepared;
  });
}

/**
 * Batches whose rendered messages cost more than they hold (launch reserved the longest render it
 * could know, a scheduled start only what the shared text costs) reserve the difference before
 * anything is sent, in one transaction; when the balance does not cover it, those batches fail
 * unsent and uncharged instead.
 */
async function holdWhatRendersCost(db: Db, ref: ChunkRef, prepared: Prepared[]): Promise<Prepared[]> {
  const needing = prepared
    .map((p) => ({ p, extra: round2(p.costs.reduce((a, b) => a + b, 0) - p.batch.reserved) }))
    .filter(({ extra }) => extra > 0);
  if (!needing.length) return prepared;
  const total = round2(needing.reduce((sum, n) => sum + n.extra, 0));
  const held = await db.transaction(async (trx) => {
    if (!(await credits.reserve(trx, ref.orgId, total))) return false;
    await run(trx, holdMore, { ...keyOf(ref), batches: jsonRows(needing.map(({ p, extra }) => ({ batch_no: p.batch.batch_no, extra }))) });
    return true;
  });
  if (held) {
    for (const { p, extra } of needing) p.batch.reserved = round2(p.batch.reserved + extra);
    return prepared;
  }
  const short = new Set(needing.map(({ p }) => p));
  return prepared.map((p) => (short.has(p) ? unsent(p.batch, p.log, INSUFFICIENT) : p));
}

const keyOf = (ref: ChunkRef) => ({ orgId: ref.orgId, campaignId: ref.campaignId, channel: ref.channel });

const failure = (recipient: string, error: string): DeliveryResult => ({ recipient, ok: false, error, network: 'herald' });

/**
 * Claims the chunk's claimable batches and reserves what they cost beyond what they already hold.
 * Launch reserved every batch's cost, so a claim usually moves no credits: those batches are claimed
 * in one statement on its own. Batches that need more (a scheduled start the balance did not cover)
 * are claimed and reserved in one transaction, rolled back when the balance does not cover them:
 * `short` says so, and they are left claimable.
 */
async function claim(db: Db, ref: ChunkRef, unitCost: number, leaseSeconds: number): Promise<{ claimed: Claimed[]; short: boolean }> {
  const [first, last] = batchRange(ref);
  const key = { ...keyOf(ref), first, last, leaseSeconds, unitCost };
  const held = await run(db, claimBatches, { ...key, heldOnly: true });
  const rows = held.filter((r) => r.batch_no !== null);
  let short = false;
  if (held[0]!.needing > 0) {
    const balanceShort = new Error('short');
    try {
      rows.push(
        ...(await db.transaction(async (trx) => {
          const more = (await run(trx, claimBatches, { ...key, heldOnly: false })).filter((r) => r.batch_no !== null);
          if (!(await credits.reserve(trx, ref.orgId, more.reduce((sum, b) => sum + Number(b.extra), 0)))) throw balanceShort;
          return more;
        })),
      );
    } catch (err) {
      if (err !== balanceShort) throw err;
      short = true;
    }
  }
  const claimed = rows
    .sort((a, b) => a.batch_no! - b.batch_no!)
    .map((r) => ({
      batch_no: r.batch_no!,
      addresses: JSON.parse(r.addresses) as string[],
      reserved: Number(r.reserved),
      logId: batchLogId(ref.campaignId, ref.channel, r.batch_no!),
    }));
  return { claimed, short };
}

/** A batch's recipients as settled: failed with their reason at the positions in `errors`, the rest succeeded. */
const outcomesOf = (addresses: string[], errors: Map<number, string>) =>
  addresses.map((recipient, i) => {
    const error = errors.get(i);
    return error === undefined ? { recipient, status: 'success' } : { recipient, status: 'failed', error };
  });

/**
 * Settles prepared batches in one transaction: the batches still `sending`, their logs and the
 * campaign's counters, announced to the API processes (one statement), then the release of what
 * they held and did not spend. `results` are the provider's answers for the batches' targets, in order.
 */
async function settle(db: Db, ref: ChunkRef, senderUserId: string | null, prepared: Prepared[], results: DeliveryResult[]) {
  let next = 0;
  const logs = new Map<string, SettledLogColumns>();
  const batches = prepared.map(({ batch, failures, costs, log }) => {
    // One pass over the batch's recipients: successes, what they cost, and the network of the first
    // success (else of the first recipient: `herald` for one that was never sent).
    const size = batch.addresses.length;
    let sent = 0;
    let cost = 0;
    let firstNetwork: string | null = null;
    let sentNetwork: string | null = null;
    let providerIds: (string | null)[] | null = null;
    // Why each recipient failed, by position: made at the first failure, so that a batch sent whole
    // (the common case) builds no per-recipient outcome at all.
    let errors: Map<number, string> | null = null;
    for (let i = 0; i < size; i++) {
      const error = failures[i];
      if (error) {
        firstNetwork ??= 'herald';
        (errors ??= new Map()).set(i, error);
        continue;
      }
      const r = results[next++]!;
      firstNetwork ??= r.network;
      if (r.providerMessageId) (providerIds ??= batch.addresses.map(() => null))[i] = r.providerMessageId;
      if (!r.ok) {
        (errors ??= new Map()).set(i, r.error ?? 'Delivery failed');
        continue;
      }
      sent++;
      sentNetwork ??= r.network;
      cost += costs[i]!;
    }
    const network = sentNetwork ?? firstNetwork;
    // The log as it is stored, for the message events this process posts itself (`wake`).
    const stored = errors === null ? batch.addresses : settledRecipients(outcomesOf(batch.addresses, errors));
    logs.set(batch.logId, { settled_recipients: stored, settled_provider_ids: providerIds });
    return {
      batch_no: batch.batch_no,
      log_id: batch.logId,
      // All succeeded: the statement writes the batch's addresses as they are (their stored form).
      recipients: errors === null ? null : JSON.stringify(stored),
      sent,
      failed: size - sent,
      cost: round2(cost),
      network,
      provider_ids: providerIds,
      preview: log.preview,
      length: log.length,
      unit_cost: log.unit,
    };
  });
  const batchNos = batches.map((b) => b.batch_no);
  const input = {
    ...keyOf(ref),
    first: Math.min(...batchNos),
    last: Math.max(...batchNos),
    senderUserId,
    batches: jsonRows(batches, 'recipients'),
    handOverSeconds: handOverLease(db),
  };
  // Every recipient sent spends exactly what its batch held: nothing to release, so the settle is
  // one statement on its own. Otherwise what was not spent is released in the same transaction.
  const unspent = prepared.reduce((sum, p, i) => sum + p.batch.reserved - batches[i]!.cost, 0);
  const settled =
    round2(unspent) <= 0
      ? (await run(db, settleBatches, input))[0]!
      : await db.transaction(async (trx) => {
          const [row] = await run(trx, settleBatches, input);
          await credits.release(trx, ref.orgId, Number(row!.refund));
          return row!;
        });
  countSettled(ref.channel, 'campaign', settled.sent, settled.failed);
  await wake(db, ref.orgId, settled.webhook_endpoints, { handed: settled.handed, logs });
}

/** The chunks of a campaign that still have batches to send, sized by the campaign's batches per channel. */
export async function openChunks(db: Db | Knex.Transaction, orgId: string, campaignId: string): Promise<ChunkRef[]> {
  const rows = await run(db, batchesPerChannel, { orgId, campaignId });
  return rows.flatMap(({ channel, batches, open }) => chunksOf({ orgId, campaignId, channel: channel as Channel }, batches, open ?? []));
}

/**
 * Chunks of active campaigns with batches still unsettled a lease after they were made (never
 * claimed: their job was lost) or claimed (by a worker that died), sized as launch sized them: the
 * sweeper queues them again. Claiming decides who sends, so a chunk queued twice is still sent once,
 * and a batch under a live lease is left alone.
 */
export async function stalledChunks(db: Db, leaseSeconds: number, limit = 5000): Promise<ChunkRef[]> {
  const rows = await run(db, stalledBatches, { leaseSeconds, limit });
  return rows.flatMap((r) => chunksOf({ orgId: r.organization_id, campaignId: r.campaign_id, channel: r.channel as Channel }, r.batches, r.stalled));
}

/**
 * Batches of campaigns canceled while a worker that then died was sending them: nobody takes them
 * over (the campaign is no longer active), so once their lease has run out they are settled as
 * failed (`Delivery interrupted`, never charged) and their credits given back, as abandoned ad hoc
 * sends are. A recipient interrupted this way may have been delivered uncharged, never twice charged.
 */
export async function settleInterruptedBatches(deps: Pick<BatchDeps, 'db' | 'config'>, limit = 1000): Promise<number> {
  const { db, config } = deps;
  const rows = await run(db, interruptedBatches, { leaseSeconds: config.campaignLeaseSeconds, limit });
  for (const row of rows) {
    const channel = row.channel as Channel;
    // Only the organization, campaign and channel of the ref matter to `settle`.
    const ref: ChunkRef = { orgId: row.organization_id, campaignId: row.campaign_id, channel, chunkNo: 0, size: 1 };
    const text = (row.messages as CampaignMessages)[channel]?.content ?? '';
    const batch: Claimed = { batch_no: row.batch_no, addresses: row.addresses, reserved: Number(row.reserved), logId: batchLogId(row.campaign_id, channel, row.batch_no) };
    await settle(db, ref, row.created_by, [unsent(batch, logText(text, unitCost(config, channel, text)), INTERRUPTED)], []);
  }
  return rows.length;
}
