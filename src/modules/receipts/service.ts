import type { Db } from '../../db/database.js';
import { run } from '../../db/statements.js';
import { wake } from '../../delivery/outbox.js';
import { firstReceipts, lockReceipt, logByPrefix, logByProviderId, uncountedEvent, updateReceipts, type CounterMoves, type ExistingReceipt, type ReceiptEvent, type ReceiptRow, type ReceiptState } from './sql.js';

/**
 * Receipts and engagement (platform.md): the one place a recipient's state after its send changes.
 * Provider webhooks, the tracking links, the bounce listener and the sandbox all call `record` with
 * the recipient (its log and position) and what happened; it sets each of the recipient's timestamps
 * once, records an event for each change, and counts the recipient in its campaign's `delivered`,
 * `opened`, `clicked`, `bounced` and `complained` in the same statement (which announces the campaign's change to its live subscribers),
 * so a receipt delivered twice, late, out of order or fifty times at once counts once. Implied changes are made with the event that implies them: a WhatsApp
 * `read` is a delivery, a click an open. An open or click recognised as a scanner's changes nothing
 * and is recorded uncounted.
 */

export type ReceiptKind = 'delivered' | 'read' | 'failed' | 'opened' | 'clicked' | 'bounced' | 'complained';

/** A recipient: the message log that sent it and its position there (1 is the first). */
export interface RecipientRef {
  logId: string;
  position: number;
}

export interface Receipt {
  kind: ReceiptKind;
  /** When it happened (the provider's time when it gives one). */
  at: Date;
  /** `failed`: the provider's reason; `bounced`: the mail server's. */
  error?: string;
  /** `bounced`: permanent (`hard`) or temporary (`soft`). */
  bounceType?: 'hard' | 'soft';
  /** An open or click by a known scanner or prefetcher: recorded, never counted. */
  scanner?: boolean;
  /** Kept with the event: a click's URL, a provider's status. */
  data?: Record<string, unknown>;
  /**
   * Only for a recipient whose message log was written (its send began) before this time: for any
   * other the receipt changes nothing and its recipient is `unknown` (a click too soon after its
   * send is a scanner's, see `tracking-routes.ts`).
   */
  sentBefore?: Date;
}

/** What a receipt did: changed the recipient, changed nothing (a duplicate, a scanner's), or named no recipient Herald has. */
export type Outcome = 'changed' | 'unchanged' | 'unknown';

/** The webhook event type of each change (platform.md, "Outbound webhooks"); a WhatsApp read is its open. */
const EVENT_TYPE: Record<ReceiptKind, string> = {
  delivered: 'message.delivered',
  read: 'message.opened',
  opened: 'message.opened',
  clicked: 'message.clicked',
  failed: 'message.failed',
  bounced: 'message.bounced',
  complained: 'message.complained',
};

const EMPTY: ReceiptState = {
  deliveredAt: null,
  readAt: null,
  openedAt: null,
  clickedAt: null,
  failedAt: null,
  error: null,
  bouncedAt: null,
  bounceType: null,
  bounceReason: null,
  complainedAt: null,
};

/** A recipient's state after a receipt, and the changes it made (the receipt's own first, then those it implies). */
function apply<S extends ReceiptState>(before: S, receipt: Receipt): { after: S; changes: ReceiptKind[] } {
  const after = { ...before };
  const changes: ReceiptKind[] = [];
  const set = (kind: ReceiptKind, field: 'deliveredAt' | 'readAt' | 'openedAt' | 'clickedAt' | 'complainedAt') => {
    if (after[field] !== null) return;
    after[field] = receipt.at;
    changes.push(kind);
  };
  switch (receipt.kind) {
    case 'delivered':
      set('delivered', 'deliveredAt');
      break;
    case 'read':
      set('read', 'readAt');
      set('delivered', 'deliveredAt');
      break;
    case 'opened':
      set('opened', 'openedAt');
      break;
    case 'clicked':
      set('clicked', 'clickedAt');
      set('opened', 'openedAt');
      break;
    case 'failed':
      // A recipient already delivered was delivered: a late failure changes nothing.
      if (after.deliveredAt === null && after.failedAt === null) {
        after.failedAt = receipt.at;
        after.error = receipt.error ?? 'Not delivered';
        changes.push('failed');
      }
      break;
    case 'bounced': {
      // The first bounce is the recipient's; a permanent one after a temporary one replaces it.
      const type = receipt.bounceType ?? 'hard';
      if (after.bouncedAt === null || (after.bounceType === 'soft' && type === 'hard')) {
        after.bouncedAt ??= receipt.at;
        after.bounceType = type;
        after.bounceReason = receipt.error ?? null;
        changes.push('bounced');
      }
      break;
    }
    case 'complained':
      set('complained', 'complainedAt');
      break;
  }
  return { after, changes };
}

/** How each campaign counter moves between two states: a recipient counts once in each. */
function counts(before: ReceiptState, after: ReceiptState): CounterMoves {
  const opened = (s: ReceiptState) => s.openedAt !== null || s.readAt !== null;
  return {
    delivered: before.deliveredAt === null && after.deliveredAt !== null ? 1 : 0,
    opened: !opened(before) && opened(after) ? 1 : 0,
    clicked: before.clickedAt === null && after.clickedAt !== null ? 1 : 0,
    bounced: before.bouncedAt === null && after.bouncedAt !== null ? 1 : 0,
    complained: before.complainedAt === null && after.complainedAt !== null ? 1 : 0,
  };
}

function eventsOf(receipt: Receipt, changes: ReceiptKind[], counted: boolean): ReceiptEvent[] {
  return changes.map((kind, i) => ({
    type: EVENT_TYPE[kind],
    counted,
    data: {
      ...(i === 0 ? receipt.data : { impliedBy: receipt.kind }),
      ...(kind === 'read' && { read: true }),
      ...(kind === 'failed' && { error: receipt.error }),
      ...(kind === 'bounced' && { bounceType: receipt.bounceType ?? 'hard', reason: receipt.error ?? null }),
    },
  }));
}

/** A receipt of one recipient. */
export interface RecipientReceipt {
  ref: RecipientRef;
  receipt: Receipt;
}

/** Records what happened to one recipient of organization `orgId`'s message log. */
export async function record(db: Db, orgId: string, ref: RecipientRef, receipt: Receipt): Promise<Outcome> {
  if (receipt.scanner) {
    const [row] = await run(db, uncountedEvent, { orgId, ...ref, at: receipt.at, events: JSON.stringify(eventsOf(receipt, [receipt.kind], false)) });
    return row!.known ? 'unchanged' : 'unknown';
  }
  return (await recordMany(db, orgId, [{ ref, receipt }]))[0]!;
}

/** Records the same receipt for several recipients of one log (a provider's batch, the sandbox's simulated deliveries), by position. */
export async function recordAll(db: Db, orgId: string, logId: string, positions: number[], receipt: Receipt): Promise<Map<number, Outcome>> {
  const wanted = [...new Set(positions)];
  const outcomes = await recordMany(db, orgId, wanted.map((position) => ({ ref: { logId, position }, receipt })));
  return new Map(wanted.map((position, i) => [position, outcomes[i]!]));
}

/**
 * Records receipts (none a scanner's) of recipients of organization `orgId`'s logs, answering each
 * one's outcome in order. Their first receipts are written together in one statement (most
 * recipients have one receipt, or a first one), which also reads the rows of the others; those then
 * change together from the states read there in one more statement, and a recipient another receipt
 * changed in between changes under its lock, so concurrent receipts of one recipient take turns. A
 * receipt that changes nothing in the state read changes nothing in any later one (a time once set
 * stays), so a duplicate writes nothing. Receipts of the same recipient in one call are recorded
 * one after the other, in order.
 */
export async function recordMany(db: Db, orgId: string, receipts: readonly RecipientReceipt[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array(receipts.length);
  const woken = new Set<string>();
  // Rounds of receipts of distinct recipients: a statement writes a recipient at most once.
  let pending = receipts.map((_, i) => i);
  while (pending.length) {
    const seen = new Set<string>();
    const round: number[] = [];
    const later: number[] = [];
    for (const i of pending) {
      const key = `${receipts[i]!.ref.logId}:${receipts[i]!.ref.position}`;
      (seen.has(key) ? later : round).push(i);
      seen.add(key);
    }
    await recordRound(db, orgId, receipts, round, outcomes, woken);
    pending = later;
  }
  await wake(db, orgId, [...woken]);
  return outcomes;
}

/** One round of `recordMany`: the receipts `indexes` of `receipts`, each of a recipient of its own. */
async function recordRound(db: Db, orgId: string, receipts: readonly RecipientReceipt[], indexes: number[], outcomes: Outcome[], woken: Set<string>): Promise<void> {
  const firsts = indexes.map((i) => {
    const { ref, receipt } = receipts[i]!;
    const { after, changes } = apply(EMPTY, receipt);
    return { i, ref, receipt, changes, row: rowOf(i, ref, receipt, after, EMPTY, changes, { sent_before: receipt.sentBefore ?? null }) };
  });
  const [first] = await retried(() => run(db, firstReceipts, { orgId, rows: JSON.stringify(firsts.map((f) => f.row)) }));
  for (const id of first!.webhook_endpoints ?? []) woken.add(id);
  const known = new Set(first!.known);
  const inserted = new Set(first!.inserted);
  const existing = new Map((first!.existing ?? []).map((r) => [r.i, r]));
  const updates: ReceiptRow[] = [];
  const contested: number[] = [];
  for (const { i, changes } of firsts) {
    if (!known.has(i)) outcomes[i] = 'unknown';
    else if (inserted.has(i)) outcomes[i] = changes.length ? 'changed' : 'unchanged';
    else {
      const seen = existing.get(i);
      // No row in the statement's snapshot: another transaction was writing it. Its lock tells.
      if (!seen) contested.push(i);
      else {
        const row = changeOf(i, receipts[i]!, seen);
        if (row) updates.push(row);
        else outcomes[i] = 'unchanged';
      }
    }
  }
  if (updates.length) {
    const [updated] = await retried(() => run(db, updateReceipts, { orgId, rows: JSON.stringify(updates), locked: false }));
    for (const id of updated!.webhook_endpoints ?? []) woken.add(id);
    const done = new Set(updated!.updated);
    for (const { i } of updates) {
      if (done.has(i)) outcomes[i] = 'changed';
      else contested.push(i);
    }
  }
  for (const i of contested) outcomes[i] = await recordLocked(db, orgId, i, receipts[i]!, woken);
}

/** The receipt's row for the statements: the state it leaves and its events and counter moves from the state `was` (or null when it changes nothing there). */
function changeOf(i: number, { ref, receipt }: RecipientReceipt, seen: Omit<ExistingReceipt, 'i'>): ReceiptRow | null {
  const was = stateOf(seen);
  const { after, changes } = apply(was, receipt);
  if (!changes.length) return null;
  return rowOf(i, ref, receipt, after, was, changes, {
    campaign_id: seen.campaignId,
    recipient: seen.recipient,
    was_delivered_at: seen.deliveredAt,
    was_read_at: seen.readAt,
    was_opened_at: seen.openedAt,
    was_clicked_at: seen.clickedAt,
    was_failed_at: seen.failedAt,
    was_error: seen.error,
    was_bounced_at: seen.bouncedAt,
    was_bounce_type: seen.bounceType,
    was_complained_at: seen.complainedAt,
  });
}

function rowOf(i: number, ref: RecipientRef, receipt: Receipt, after: ReceiptState, was: ReceiptState, changes: ReceiptKind[], extra: Partial<ReceiptRow>): ReceiptRow {
  const moves = counts(was, after);
  return {
    i,
    log_id: ref.logId,
    position: ref.position,
    at: receipt.at,
    delivered_at: after.deliveredAt,
    read_at: after.readAt,
    opened_at: after.openedAt,
    clicked_at: after.clickedAt,
    failed_at: after.failedAt,
    error: after.error,
    bounced_at: after.bouncedAt,
    bounce_type: after.bounceType,
    bounce_reason: after.bounceReason,
    complained_at: after.complainedAt,
    events: eventsOf(receipt, changes, true),
    ...moves,
    ...extra,
  };
}

/** A row as the statements read it (JSON: its times are strings). */
function stateOf(row: Omit<ExistingReceipt, 'i'>): ReceiptState {
  const at = (t: string | null) => (t === null ? null : new Date(t));
  return {
    deliveredAt: at(row.deliveredAt),
    readAt: at(row.readAt),
    openedAt: at(row.openedAt),
    clickedAt: at(row.clickedAt),
    failedAt: at(row.failedAt),
    error: row.error,
    bouncedAt: at(row.bouncedAt),
    bounceType: row.bounceType as ReceiptState['bounceType'],
    bounceReason: row.bounceReason,
    complainedAt: at(row.complainedAt),
  };
}

/** A receipt of a recipient that has a row another receipt is changing: its state changed under the row's lock. */
function recordLocked(db: Db, orgId: string, i: number, item: RecipientReceipt, woken: Set<string>): Promise<Outcome> {
  return db.transaction(async (trx) => {
    const [locked] = await run(trx, lockReceipt, { orgId, ...item.ref });
    if (!locked) return 'unknown';
    const row = changeOf(i, item, locked.row);
    if (!row) return 'unchanged';
    const [updated] = await run(trx, updateReceipts, { orgId, rows: JSON.stringify([row]), locked: true });
    for (const id of updated!.webhook_endpoints ?? []) woken.add(id);
    return 'changed';
  });
}

/**
 * Runs a statement again when Postgres ended it as one side of a deadlock: a statement of several
 * campaigns' receipts locks their rows in no particular order, so two of them can wait for each
 * other. Each statement is atomic: one ended so wrote nothing.
 */
async function retried<T>(statement: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= attempts) throw err;
    }
  }
}

const CLIENT_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4})([0-9a-f]{8})$/i;

/**
 * The recipient Herald's own reference names (a `clientsmsid`, a WhatsApp `biz_opaque_callback_data`:
 * the log's id with its last 8 hex digits replaced by the position, see `LogTarget.clientId`), or
 * null when it is not one of the organization's.
 */
export async function recipientByReference(db: Db, orgId: string, reference: string): Promise<RecipientRef | null> {
  const match = CLIENT_ID.exec(reference);
  if (!match) return null;
  const position = parseInt(match[2]!, 16);
  if (position < 1 || position > 32767) return null;
  const prefix = match[1]!.toLowerCase();
  const logs = await run(db, logByPrefix, { orgId, low: `${prefix}00000000`, high: `${prefix}ffffffff` });
  // Two logs sharing 96 bits of their id would make the reference ambiguous: none is better than a wrong one.
  return logs.length === 1 ? { logId: logs[0]!.id, position } : null;
}

/** The recipient a provider's message id was recorded for, or null. */
export async function recipientByProviderId(db: Db, orgId: string, providerId: string): Promise<RecipientRef | null> {
  if (!providerId || providerId.length > 512) return null;
  const [row] = await run(db, logByProviderId, { orgId, providerId });
  return row?.position ? { logId: row.id, position: row.position } : null;
}

