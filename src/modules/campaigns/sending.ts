import type { Knex } from 'knex';
import type { Db } from '../../db/database.js';
import { run } from '../../db/statements.js';
import { paceOf } from '../../delivery/sql/engine.js';
import type { CampaignRow } from './dto.js';

/** How a running campaign is being sent: whether its credentials' rate holds it back, its pace, and when it should be done. */
export interface Sending {
  /** Sending waits for a channel credential's rate (set, or slowed by the provider's throttling answers). */
  throttled: boolean;
  /** Recipients settled a second since it started (null until one is, or once it is no longer active). */
  sendRate: number | null;
  /** When the rest should be settled at that pace, or at the credential's rate when that is slower (null: not active, or not known yet). */
  estimatedCompletionAt: string | null;
}

export const NOT_SENDING: Sending = { throttled: false, sendRate: null, estimatedCompletionAt: null };

/** A credential counts as throttling a campaign while bulk work waited for it this recently, or the provider throttled it this recently. */
const WAITED_WITHIN_MS = 5_000;
const THROTTLED_WITHIN_MS = 30_000;

/**
 * A campaign's `Sending` (a run's, or a one-off campaign's: a recurring or automated campaign's own
 * row sends nothing): from its counters and its organization's credentials' pace (`send_pace`).
 */
export async function sendingOf(db: Db | Knex.Transaction, row: CampaignRow, now = new Date()): Promise<Sending> {
  if (row.status !== 'active' || row.type === 'recurring' || (row.type === 'automated' && !row.parent_id) || !row.started_at) return NOT_SENDING;
  const paces = (await run(db, paceOf, { orgId: row.organization_id })).filter((p) => (row.channels as string[]).includes(p.channel));
  const at = now.getTime();
  const throttled = paces.some(
    (p) => (p.waited_at !== null && at - p.waited_at.getTime() < WAITED_WITHIN_MS) || (p.throttled_at !== null && at - p.throttled_at.getTime() < THROTTLED_WITHIN_MS),
  );
  const settled = row.sent + row.failed;
  const remaining = Math.max(0, row.total_recipients - settled);
  const seconds = Math.max(0.001, (at - row.started_at.getTime()) / 1000);
  const measured = settled > 0 ? settled / seconds : null;
  // Paced channels send one after another's share of the slots, but each at most at its rate: the
  // slowest paced channel's rate bounds the whole.
  const rates = paces.map((p) => p.rate).filter((r): r is number => r !== null);
  const paced = rates.length ? Math.min(...rates) * rates.length : null;
  const pace = measured !== null && paced !== null ? Math.min(measured, paced) : (measured ?? paced);
  return {
    throttled,
    sendRate: measured === null ? null : Math.round(measured * 10) / 10,
    estimatedCompletionAt: pace && pace > 0 ? new Date(at + (remaining / pace) * 1000).toISOString() : null,
  };
}
