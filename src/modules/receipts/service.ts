import type { Db } from '../../db/database.js';
import { jsonRows, run } from '../../db/statements.js';
import { wake } from '../../delivery/outbox.js';
import { firstReceipts, lockReceipt, logByPrefix, logByProviderId, uncountedEvent, updateReceipt, type CounterMoves, type ExistingReceipt, type ReceiptState } from './sql.js';

/**
 * Receipts and engagement (platform.md): the one place a recipient's state after its send changes.
 * Provider webhooks, the tracking links and the sandbox all call `record` with the recipient (its
 * log and position) and what happened; it sets each of the recipient's timestamps once, records an
 * event for each change, and counts the recipient in its campaign's `delivered`, `opened` and
 * `clicked` in the same statement (which announces the campaign's change to its live subscribers),
 * so a receipt delivered twice, late, out of order or fifty times at once counts once. Implied changes are made with the event that implies them: a WhatsApp
 * `read` is a delivery, a click an open. An open or click recognised as a scanner's changes nothing
 * and is recorded uncounted.
 */

export type ReceiptKind = 'delivered' | 'read' | 'failed' | 'opened' | 'clicked';

/** A recipient: the message log that sent it and its position there (1 is the first). */
export interface RecipientRef {
  logId: string;
  position: number;
}

export interface Receipt {
  kind: ReceiptKind;
  /** When it happened (the provider's time when it gives one). */
  at: Date;
  /** `failed`: the provider's reason. */
  error?: string;
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
};

const EMPTY: ReceiptState = { deliveredAt: null, readAt: null, openedAt: null, clickedAt: null, failedAt: null, error: null };

/** A recipient's state after a receipt, and the changes it made (the receipt's own first, then those it implies). */
function apply<S extends ReceiptState>(before: S, receipt: Receipt): { after: S; changes: ReceiptKind[] } {
  const after = { ...before };
  const changes: ReceiptKind[] = [];
  const set = (kind: ReceiptKind, field: 'deliveredAt' | 'readAt' | 'openedAt' | 'clickedAt') => {
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
  };
}

function eventsOf(receipt: Receipt, changes: ReceiptKind[], counted: boolean): string {
  return jsonRows(
    changes.map((kind, i) => ({
      type: EVENT_TYPE[kind],
      counted,
      data: { ...(i === 0 ? receipt.data : { impliedBy: receipt.kind }), ...(kind === 'read' && { read: true }), ...(kind === 'failed' && { error: receipt.error }) },
    })),
  );
}

/** Records what happened to one recipient of organization `orgId`'s message log. */
export async function record(db: Db, orgId: string, ref: RecipientRef, receipt: Receipt): Promise<Outcome> {
  if (receipt.scanner) {
    const [row] = await run(db, uncountedEvent, { orgId, ...ref, at: receipt.at, events: eventsOf(receipt, [receipt.kind], false) });
    return row!.known ? 'unchanged' : 'unknown';
  }
  return (await recordAll(db, orgId, ref.logId, [ref.position], receipt)).get(ref.position)!;
}

/**
 * Records the same receipt for several recipients of one log (a provider's batch, the sandbox's
 * simulated deliveries), by position. Their first receipts are written together in one statement
 * (most recipients have one receipt, or a first one), which also reads the rows of the others. A
 * recipient with a row changes from the state read there in one more statement, unless another
 * receipt changed it in between; then it changes under its lock, so concurrent receipts of one
 * recipient take turns. A receipt that changes nothing in the state read changes nothing in any
 * later one (a time once set stays), so a duplicate writes nothing.
 */
export async function recordAll(db: Db, orgId: string, logId: string, positions: number[], receipt: Receipt): Promise<Map<number, Outcome>> {
  const wanted = [...new Set(positions)];
  if (!wanted.length) return new Map();
  const first = apply(EMPTY, receipt);
  const [row] = await run(db, firstReceipts, {
    orgId,
    logId,
    positions: wanted,
    sentBefore: receipt.sentBefore ?? null,
    at: receipt.at,
    ...first.after,
    events: eventsOf(receipt, first.changes, true),
    ...counts(EMPTY, first.after),
  });
  const woken = new Set(row!.webhook_endpoints);
  const known = new Set(row!.known);
  const inserted = new Set(row!.inserted);
  const existing = new Map((row!.existing ?? []).map((r) => [r.position, stateOf(r)]));
  const outcomes = new Map<number, Outcome>();
  for (const position of wanted) {
    const key = { orgId, logId, position };
    const seen = existing.get(position);
    if (!known.has(position)) outcomes.set(position, 'unknown');
    else if (inserted.has(position)) outcomes.set(position, first.changes.length ? 'changed' : 'unchanged');
    else outcomes.set(position, (seen && (await recordFrom(db, key, seen, receipt, woken))) || (await recordLater(db, key, receipt, woken)));
  }
  await wake(db, orgId, [...woken]);
  return outcomes;
}

type RowState = ReceiptState & { campaignId: string | null; recipient: string };
type RowKey = { orgId: string; logId: string; position: number };

/** A row as `firstReceipts` returns it (its times as JSON strings). */
function stateOf(row: ExistingReceipt): RowState {
  const at = (t: string | null) => (t === null ? null : new Date(t));
  return { ...row, deliveredAt: at(row.deliveredAt), readAt: at(row.readAt), openedAt: at(row.openedAt), clickedAt: at(row.clickedAt), failedAt: at(row.failedAt) };
}

/**
 * A receipt of a recipient whose row was read in state `was` (or is `locked` in it): its outcome, or
 * null when the row changed since. The endpoints its events went to join `woken`.
 */
async function recordFrom(db: Db, key: RowKey, was: RowState, receipt: Receipt, woken: Set<string>, locked = false): Promise<Outcome | null> {
  const { after, changes } = apply(was, receipt);
  if (!changes.length) return 'unchanged';
  const [written] = await run(db, updateReceipt, {
    ...key,
    ...after,
    locked,
    wasDeliveredAt: was.deliveredAt,
    wasReadAt: was.readAt,
    wasOpenedAt: was.openedAt,
    wasClickedAt: was.clickedAt,
    wasFailedAt: was.failedAt,
    wasError: was.error,
    at: receipt.at,
    events: eventsOf(receipt, changes, true),
    ...counts(was, after),
  });
  for (const id of written!.webhook_endpoints ?? []) woken.add(id);
  return written!.n ? 'changed' : null;
}

/** A receipt of a recipient that has a row: its state changed under the row's lock. */
function recordLater(db: Db, key: RowKey, receipt: Receipt, woken: Set<string>): Promise<Outcome> {
  return db.transaction(async (trx) => {
    const [locked] = await run(trx, lockReceipt, key);
    return locked ? (await recordFrom(trx, key, locked, receipt, woken, true))! : 'unknown';
  });
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

