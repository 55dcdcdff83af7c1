import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { jsonRows, run } from '../../db/statements.js';
import { characterCount, preview, unitCost } from '../../delivery/cost.js';
import * as credits from '../../delivery/credits.js';
import { round2 } from '../../delivery/credits.js';
import { settledRecipientsJson } from '../../delivery/log-recipients.js';
import type { Delivery, SenderRow } from '../../delivery/registry.js';
import { sendWithRetries } from '../../delivery/retries.js';
import {
  batchesPerChannel,
  claimBatches,
  interruptedBatches,
  renewBatchLease,
  settleBatches,
  stalledBatches,
} from '../../delivery/sql/batches.js';
import { LogTarget, type Channel, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from '../../delivery/types.js';
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

/** What a settled batch's log says: the campaign's message, and who sent it. */
interface LogInfo {
  senderUserId: string | null;
  preview: string;
  length: number;
  unit: number;
}

const INSUFFICIENT = 'Insufficient credits';
const INTERRUPTED = 'Delivery interrupted';

const logInfo = (config: Config, channel: Channel, messages: CampaignMessages, createdBy: string | null): LogInfo | null => {
  const content = messages[channel];
  if (!content) return null;
  return { senderUserId: createdBy, preview: preview(content.content), length: characterCount(content.content), unit: unitCost(config, channel, content.content) };
};

/**
 * Sends one chunk of a campaign exactly once per recipient. Batches are claimed in one transaction
 * that also reserves their credits: a batch is claimable while `pending`, or while `sending` under a
 * lease (`claimed_at`) that has run out (its worker died; the credits it holds are kept, only the
 * rest reserved). Rows another worker is claiming are skipped, so of two workers (or a duplicated
 * job) only one claims a batch. After the provider answers, one transaction settles the batches still
 * `sending`, writes their logs, counts the campaign (completing it) and releases what was not spent.
 */
export async function processChunk(deps: BatchDeps, ref: ChunkRef): Promise<number> {
  const { db, config } = deps;
  // The campaign and its organization (whose credentials the channel is bound to) in one read.
  const row = (await db('campaigns as c')
    .join('organizations as o', 'o.id', 'c.organization_id')
    .where({ 'c.organization_id': ref.orgId, 'c.id': ref.campaignId })
    .first('o.name', 'o.email_from_name', 'o.credentials', 'c.status', 'c.messages', 'c.created_by')) as
    | (SenderRow & Pick<CampaignRow, 'status' | 'messages' | 'created_by'>)
    | undefined;
  const content = row?.messages[ref.channel];
  if (!row || row.status !== 'active' || !content) return 0;
  const info = logInfo(config, ref.channel, row.messages, row.created_by)!;

  const { claimed, short } = await claim(db, ref, info.unit, config.campaignLeaseSeconds);
  if (short) {
    // The balance no longer covers the batches that need more than they hold: they fail, uncharged
    // (credits held by a batch taken over are given back). Claimed at no cost, they move no credits.
    const unpaid = (await claim(db, ref, 0, config.campaignLeaseSeconds)).claimed;
    if (unpaid.length) await settle(db, ref, info, unpaid, unpaid.flatMap((b) => b.addresses.map((recipient) => failure(recipient, INSUFFICIENT))));
  }
  if (!claimed.length) return 0;

  const targets: DeliveryTarget[] = [];
  for (const batch of claimed) {
    batch.addresses.forEach((recipient, i) => targets.push(new LogTarget(recipient, batch.logId, i + 1)));
  }
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
    const subject = 'subject' in content ? content.subject : undefined;
    const message: OutboundMessage = { channel: ref.channel, orgId: ref.orgId, fromName: channel.fromName, subject, body: content.content };
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
  await settle(db, ref, info, claimed, results);
  return targets.length;
}

const keyOf = (ref: ChunkRef) => ({ orgId: ref.orgId, campaignId: ref.campaignId, channel: ref.channel });

const outcomeOf = (recipient: string, r: DeliveryResult) =>
  r.ok ? { recipient, status: 'success' } : { recipient, status: 'failed', error: r.error ?? 'Delivery failed' };

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

/**
 * Settles claimed batches in one transaction: the batches still `sending`, their logs and the
 * campaign's counters (one statement), then the release of what they held and did not spend.
 */
async function settle(db: Db, ref: ChunkRef, info: LogInfo, claimed: Claimed[], results: DeliveryResult[]) {
  let from = 0;
  const batches = claimed.map((batch) => {
    // One pass over the batch's results: successes, and the network of the first success (else of the first result).
    const size = batch.addresses.length;
    let sent = 0;
    let network: string | null = results[from]?.network ?? null;
    for (let i = from; i < from + size; i++) {
      const r = results[i]!;
      if (r.ok && !sent++) network = r.network;
    }
    const settled = {
      batch_no: batch.batch_no,
      log_id: batch.logId,
      // All succeeded: the statement writes the batch's addresses as they are (their stored form).
      recipients: sent === size ? null : settledRecipientsJson(batch.addresses.map((recipient, i) => outcomeOf(recipient, results[from + i]!))),
      sent,
      failed: size - sent,
      cost: round2(info.unit * sent),
      network,
    };
    from += size;
    return settled;
  });
  const input = {
    ...keyOf(ref),
    senderUserId: info.senderUserId,
    preview: info.preview,
    length: info.length,
    unitCost: info.unit,
    batches: jsonRows(batches, 'recipients'),
  };
  // Every recipient sent spends exactly what its batch held: nothing to release, so the settle is
  // one statement on its own. Otherwise what was not spent is released in the same transaction.
  const unspent = claimed.reduce((sum, b, i) => sum + b.reserved - batches[i]!.cost, 0);
  if (round2(unspent) <= 0) {
    await run(db, settleBatches, input);
    return;
  }
  await db.transaction(async (trx) => {
    const [{ refund }] = (await run(trx, settleBatches, input)) as [{ refund: number }];
    await credits.release(trx, ref.orgId, Number(refund));
  });
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
    const info = logInfo(config, channel, row.messages as CampaignMessages, row.created_by) ?? { senderUserId: row.created_by, preview: '', length: 0, unit: 0 };
    const batch: Claimed = { batch_no: row.batch_no, addresses: row.addresses, reserved: Number(row.reserved), logId: batchLogId(row.campaign_id, channel, row.batch_no) };
    await settle(db, ref, info, [batch], row.addresses.map((recipient) => failure(recipient, INTERRUPTED)));
  }
  return rows.length;
}
