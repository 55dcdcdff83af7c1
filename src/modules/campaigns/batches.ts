import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { HttpError } from '../../lib/errors.js';
import { jsonRows, run } from '../../db/statements.js';
import { unitCost } from '../../delivery/cost.js';
import { INSUFFICIENT_CREDITS, logTextOf, PersonalLogText, tally, type LogText } from '../../delivery/tally.js';
import * as credits from '../../delivery/credits.js';
import { round2 } from '../../delivery/credits.js';
import { handOverLease, wake, type SettledLogColumns } from '../../delivery/outbox.js';
import { settledRecipients } from '../../delivery/log-recipients.js';
import { bouncesOf, type BoundChannel, type Delivery, type SenderRow } from '../../delivery/registry.js';
import type { Lane } from '../../delivery/pace.js';
import { enqueue, type QueuedWork, type Served, type Turn } from '../../delivery/scheduler.js';
import { THROTTLED_FOR_MS } from '../../delivery/engine.js';
import {
  batchesPerChannel,
  claimBatches,
  dueLaterByEmail,
  dueLaterByPhone,
  holdMore,
  holdRecipients,
  lockCampaign,
  contactZones,
  nextDue,
  zonesOpen,
  interruptedBatches,
  renewBatchLease,
  settleBatches,
  stalledBatches,
} from '../../delivery/sql/batches.js';
import { contactsFor, contactsOfEveryone, Personaliser, type MessageTexts } from '../../delivery/personalise.js';
import { LogTarget, type Channel, type DeliveryResult, type OutboundMessage } from '../../delivery/types.js';
import { countSettled } from '../../lib/metrics.js';
import { TemplateRenderError } from '../../lib/templates.js';
import { batchLogId } from './batch-log.js';
import { clockNow } from './runs.js';
import { timingOf, type Timing } from './timing.js';
import type { CampaignMessages, CampaignRow } from './dto.js';

export interface BatchDeps {
  config: Config;
  db: Db;
  log: Logger;
  delivery: Delivery;
  /** The campaigns' clock (`Deps.clock`), which sending hours and local send times are read on. */
  clock?: () => Date;
}

/** A campaign's (or run's) channel: what a turn serves. */
export interface CampaignChannel {
  orgId: string;
  campaignId: string;
  channel: Channel;
}

/** A batch this worker has claimed. */
interface Claimed {
  batch_no: number;
  addresses: string[];
  /** The credits it holds. */
  reserved: number;
  logId: string;
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

/** A personalised batch's log when none of its recipients rendered. */
const NOTHING_SHOWN: LogText = { preview: '', length: 0, unit: 0 };

const INSUFFICIENT = INSUFFICIENT_CREDITS;
const INTERRUPTED = 'Delivery interrupted';


/**
 * Serves one turn of a campaign's channel (`delivery/scheduler.ts`): sends its next batches, at most
 * `maxBatches`, exactly once per recipient, and answers how many it claimed (none: the channel is
 * done, or in other workers' hands). Batches are claimed in one transaction that also reserves
 * their credits: a batch is claimable while `pending`, or while `sending` under a lease
 * (`claimed_at`) that has run out (its worker died; the credits it holds are kept, only the rest
 * reserved). Rows another worker is claiming are skipped, so of two workers (or a duplicated
 * job) only one claims a batch. Personalised messages are then rendered per recipient from the
 * template compiled once for the chunk, with the contacts of all its addresses read in one query;
 * a batch whose renders cost more than it holds reserves the difference first. After the provider
 * answers, one transaction settles the batches still `sending`, writes their logs, counts the
 * campaign (completing it) and releases what was not spent.
 */
export async function serveTurn(deps: BatchDeps, turn: Turn): Promise<Served> {
  const ref: CampaignChannel = { orgId: turn.orgId, campaignId: turn.campaignId, channel: turn.channel };
  const { db, config } = deps;
  // The campaign and its organization (whose name email comes from) in one read.
  // A run keeps its campaign's sending hours; both follow their organization's unless they have their own.
  const row = (await db('campaigns as c')
    .join('organizations as o', 'o.id', 'c.organization_id')
    .leftJoin('campaigns as p', (j) => j.on('p.organization_id', 'c.organization_id').andOn('p.id', 'c.parent_id'))
    .where({ 'c.organization_id': ref.orgId, 'c.id': ref.campaignId })
    .first(
      'o.name',
      'o.email_from_name',
      'o.time_zone',
      'c.status',
      'c.messages',
      'c.created_by',
      'c.name as campaign_name',
      'c.recipient_type',
      'c.type',
      'c.local_send_at',
      db.raw('coalesce(c.sending_hours, p.sending_hours, o.sending_hours) AS sending_hours'),
    )) as
    | (SenderRow &
        Pick<CampaignRow, 'status' | 'messages' | 'created_by' | 'recipient_type' | 'type'> & {
          campaign_name: string;
          time_zone: string;
          local_send_at: string | null;
          sending_hours: string | null;
        })
    | undefined;
  const content = row?.messages[ref.channel];
  if (!row || row.status !== 'active' || !content) return { batches: 0 };
  const subject = 'subject' in content ? content.subject : undefined;
  const personaliser = new Personaliser(config, ref.channel, { subject, body: content.content }, {
    orgId: ref.orgId,
    organizationName: row.name,
    campaignName: row.campaign_name,
    campaignId: ref.campaignId,
    bulk: true,
  });
  const shared = sharedMessage(personaliser);
  const sharedLog = logTextOf('error' in shared ? content.content : shared.body, 'error' in shared ? 0 : personaliser.costOf(shared.body));

  const from = turn.from ?? 0;
  const now = clockNow(deps);
  const lease = { seconds: config.campaignLeaseSeconds, now };
  let { claimed, short } = await claim(db, ref, sharedLog.unit, lease, turn.maxBatches, from);
  let unpaid: Claimed[] = [];
  if (short) {
    // The balance no longer covers the batches that need more than they hold: they fail, uncharged
    // (credits held by a batch taken over are given back). Claimed at no cost, they move no credits.
    unpaid = (await claim(db, ref, 0, lease, turn.maxBatches, from)).claimed;
    if (unpaid.length) await settle(db, ref, row.created_by, unpaid.map((batch) => unsent(batch, sharedLog, INSUFFICIENT)), []);
  }
  if (!claimed.length && !unpaid.length) {
    // Nothing due: the work waits for the first batch that comes due, if any.
    const [first] = await run(db, nextDue, { ...keyOf(ref), now });
    return first?.due ? { batches: 0, waitMs: Math.max(0, first.due.getTime() - now.getTime()) } : { batches: 0 };
  }
  if (!claimed.length) return { batches: unpaid.length, next: nextOf(unpaid, from) };
  const timing = timingOf(row, row, now);
  if (timing) {
    const sendable = await holdUntilDue(db, ref, claimed, timing);
    if (!sendable.length) return { batches: claimed.length + unpaid.length, next: nextOf([...claimed, ...unpaid], from) };
    claimed = sendable;
  }

  let prepared: Prepared[];
  if ('error' in shared) prepared = claimed.map((batch) => unsent(batch, sharedLog, shared.error));
  else if (personaliser.personal) prepared = await holdWhatRendersCost(db, ref, await personalise(deps, ref, personaliser, claimed, row));
  else prepared = claimed.map((batch) => sendable(batch, sharedLog, batch.addresses.map((recipient, i) => new LogTarget(recipient, batch.logId, i + 1))));

  const targets = prepared.flatMap((p) => p.targets.filter((t): t is LogTarget => t !== null));
  let channel: BoundChannel | { error: string };
  try {
    channel = await deps.delivery.bind(ref.orgId, row, ref.channel);
  } catch (err) {
    // No provider can send (credentials missing): the recipients fail with the reason. Anything
    // else (the database) leaves the batches to be served again.
    if (!(err instanceof HttpError)) throw err;
    channel = { error: err.message };
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
      results = await channel.send(message, targets, { lane: turn.lane, park: turn.park, throttledForMs: turn.throttledForMs });
    } finally {
      clearInterval(renewal);
    }
  }
  await settle(db, ref, row.created_by, prepared, results);
  await deps.delivery.bounced(ref.orgId, bouncesOf(targets, results));
  return { batches: claimed.length + unpaid.length, next: nextOf([...claimed, ...unpaid], from) };
}

/**
 * Holds claimed batches to their recipients' times (`lib/sending-hours.ts`): recipients not due yet
 * are moved into batches due when they are, with the credits they hold; answers the claimed batches
 * as they are left, to send now. Reading who is due is one statement, and usually finds nobody; the
 * move is one more, in a transaction under the campaign's row lock.
 */
async function holdUntilDue(db: Db, ref: CampaignChannel, claimed: Claimed[], timing: Timing): Promise<Claimed[]> {
  if (!timing.localAt && timing.hours && (await allOpen(db, ref, timing, timing.hours))) return claimed;
  const due = ref.channel === 'email' ? dueLaterByEmail : dueLaterByPhone;
  const later = await run(db, due, { ...keyOf(ref), batchNos: claimed.map((b) => b.batch_no), ...timing });
  if (!later.length) return claimed;
  const left = await db.transaction(async (trx) => {
    await run(trx, lockCampaign, { orgId: ref.orgId, campaignId: ref.campaignId });
    return run(trx, holdRecipients, { ...keyOf(ref), held: JSON.stringify(later) });
  });
  const moved = new Map<number, Set<number>>();
  for (const r of later) moved.set(r.batch_no, (moved.get(r.batch_no) ?? new Set()).add(r.pos));
  const after = new Map(left.map((r) => [r.batch_no, r]));
  return claimed.flatMap((batch) => {
    const positions = moved.get(batch.batch_no);
    if (!positions) return [batch];
    const kept = after.get(batch.batch_no);
    if (!kept?.kept) return [];
    return [{ ...batch, reserved: Number(kept.reserved), addresses: batch.addresses.filter((_, i) => !positions.has(i + 1)) }];
  });
}

/**
 * Per campaign, in this process: the zones of its organization's contacts when it was first served
 * (its audience's among them, fixed at launch; a contact's zone changed later is still read per
 * recipient whenever some zone is closed).
 */
const ZONES = new Map<string, Promise<string[]>>();

/**
 * Whether the sending hours are open now in every zone the campaign's recipients can be in (its
 * contacts', and its organization's for the others): then none is held, and nobody is read one by
 * one. Two small statements, the first once per campaign and process.
 */
async function allOpen(db: Db, ref: CampaignChannel, timing: Timing, hours: string): Promise<boolean> {
  let zones = ZONES.get(ref.campaignId);
  if (!zones) {
    if (ZONES.size >= 10_000) ZONES.clear();
    zones = run(db, contactZones, { orgId: ref.orgId }).then(([row]) => row?.zones ?? []);
    zones.catch(() => ZONES.delete(ref.campaignId));
    ZONES.set(ref.campaignId, zones);
  }
  const [row] = await run(db, zonesOpen, { zones: [...(await zones), timing.orgZone], now: timing.now, hours });
  return row!.open;
}

/** Where the next turn looks for batches: after the last one claimed. */
const nextOf = (claimed: Claimed[], from: number) => claimed.reduce((n, b) => Math.max(n, b.batch_no + 1), from);

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
  ref: CampaignChannel,
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
    const prepared: Prepared = { batch, targets: [], failures: [], costs: [], log: NOTHING_SHOWN };
    const log = new PersonalLogText();
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
        log.add(body, cost);
      } catch (err) {
        if (!(err instanceof TemplateRenderError)) throw err;
        prepared.targets.push(null);
        prepared.failures.push(err.message);
        prepared.costs.push(0);
      }
    });
    prepared.log = log.result() ?? NOTHING_SHOWN;
    return prepared;
  });
}

/**
 * Batches whose rendered messages cost more than they hold (launch reserved the longest render it
 * could know, a scheduled start only what the shared text costs) reserve the difference before
 * anything is sent, in one transaction; when the balance does not cover it, those batches fail
 * unsent and uncharged instead.
 */
async function holdWhatRendersCost(db: Db, ref: CampaignChannel, prepared: Prepared[]): Promise<Prepared[]> {
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

const keyOf = (ref: CampaignChannel) => ({ orgId: ref.orgId, campaignId: ref.campaignId, channel: ref.channel });

/** A recipient no provider was asked about because none can send (credentials missing): worth another try once they are set. */
const failure = (recipient: string, error: string): DeliveryResult => ({ recipient, ok: false, error, providerFault: true, network: 'herald' });

/**
 * Claims the channel's next claimable batches (at most `limit`) and reserves what they cost beyond what they already hold.
 * Launch reserved every batch's cost, so a claim usually moves no credits: those batches are claimed
 * in one statement on its own. Batches that need more (a scheduled start the balance did not cover)
 * are claimed and reserved in one transaction, rolled back when the balance does not cover them:
 * `short` says so, and they are left claimable.
 */
async function claim(
  db: Db,
  ref: CampaignChannel,
  unitCost: number,
  lease: Lease,
  limit: number,
  from: number,
): Promise<{ claimed: Claimed[]; short: boolean }> {
  const found = await claimFrom(db, ref, unitCost, lease, limit, from);
  // Nothing after `from`: batches before it may have been left by a worker that died.
  return from > 0 && !found.claimed.length && !found.short ? claimFrom(db, ref, unitCost, lease, limit, 0) : found;
}

/** A claim's lease, and the campaigns' clock that says which batches are due. */
interface Lease {
  seconds: number;
  now: Date;
}

async function claimFrom(db: Db, ref: CampaignChannel, unitCost: number, lease: Lease, limit: number, from: number): Promise<{ claimed: Claimed[]; short: boolean }> {
  const key = { ...keyOf(ref), leaseSeconds: lease.seconds, now: lease.now, unitCost, limit, from };
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
async function settle(db: Db, ref: CampaignChannel, senderUserId: string | null, prepared: Prepared[], results: DeliveryResult[]) {
  const next = { next: 0 };
  const logs = new Map<string, SettledLogColumns>();
  const batches = prepared.map(({ batch, failures, costs, log }) => {
    const size = batch.addresses.length;
    const { sent, cost, network, providerIds, carriers, finals, errors } = tally(size, (i) => failures[i], (i) => costs[i]!, results, next);
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
      cost,
      network,
      provider_ids: providerIds,
      carriers,
      final_failures: finals,
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

/** The longest a launch request waits for a small campaign's credential's rate: a campaign slower than that to send is left to the workers. */
const INLINE_PACED_SECONDS = 2;

/**
 * Sends a small campaign's batches in the caller's process, at once (launch, within
 * `CAMPAIGN_INLINE_LIMIT`): the same turns as the dispatchers serve, as many as it takes, in its
 * lane. A channel whose rate would hold the request longer than `INLINE_PACED_SECONDS` for its
 * `recipients` is queued for the workers instead. Recipients the provider throttles are tried again
 * for as long as a send answered in its request would be.
 */
export async function sendNow(deps: BatchDeps, campaign: Pick<CampaignRow, 'organization_id' | 'id' | 'type'>, recipients: number): Promise<void> {
  const park = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const slow: QueuedWork[] = [];
  for (const work of await openWork(deps.db, campaign)) {
    const rate = await rateOf(deps, work);
    if (rate !== null && recipients / rate > INLINE_PACED_SECONDS) {
      slow.push(work);
      continue;
    }
    let served: Served;
    do served = await serveTurn(deps, { ...work, maxBatches: 64, park, throttledForMs: THROTTLED_FOR_MS.transactional });
    while (served.batches > 0);
    // Recipients that wait for their time are left to the workers.
    if (served.waitMs !== undefined) slow.push(work);
  }
  await enqueue(deps.db, slow);
}

/** A campaign channel's rate as set (null: unpaced, or a channel that cannot be bound: it is sent at once, and fails as it would). */
async function rateOf(deps: BatchDeps, work: QueuedWork): Promise<number | null> {
  try {
    return (await deps.delivery.channelFor(work.orgId, work.channel)).pace.configured;
  } catch {
    return null;
  }
}

/** The lane a campaign's batches are sent in: an automated campaign's messages are transactional, the others bulk. */
export const laneOf = (campaign: Pick<CampaignRow, 'type'>): Lane => (campaign.type === 'automated' ? 'transactional' : 'bulk');

/** A campaign's (or run's) channels that still have batches to send, as the send queue takes them. */
export async function openWork(db: Db | Knex.Transaction, campaign: Pick<CampaignRow, 'organization_id' | 'id' | 'type'>): Promise<QueuedWork[]> {
  const rows = await run(db, batchesPerChannel, { orgId: campaign.organization_id, campaignId: campaign.id });
  return rows
    .filter((r) => r.open?.length)
    .map((r) => ({ orgId: campaign.organization_id, campaignId: campaign.id, channel: r.channel as Channel, lane: laneOf(campaign) }));
}

/**
 * Channels of active campaigns with batches still unsettled a lease after they were made (never
 * claimed: their queue row was lost with a process that died before queueing it) or claimed (by a
 * worker that died): the sweeper queues them again. Claiming decides who sends, so work queued
 * twice is still sent once, and a batch under a live lease is left alone.
 */
export async function stalledWork(db: Db, leaseSeconds: number, limit = 5000): Promise<QueuedWork[]> {
  const rows = await run(db, stalledBatches, { leaseSeconds, limit });
  return rows.map((r) => ({ orgId: r.organization_id, campaignId: r.campaign_id, channel: r.channel as Channel, lane: laneOf(r) }));
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
    const ref: CampaignChannel = { orgId: row.organization_id, campaignId: row.campaign_id, channel };
    const text = (row.messages as CampaignMessages)[channel]?.content ?? '';
    const batch: Claimed = { batch_no: row.batch_no, addresses: row.addresses, reserved: Number(row.reserved), logId: batchLogId(row.campaign_id, channel, row.batch_no) };
    await settle(db, ref, row.created_by, [unsent(batch, logTextOf(text, unitCost(config, channel, text)), INTERRUPTED)], []);
  }
  return rows.length;
}
