import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { run } from '../../db/statements.js';
import type { SyncBounce } from '../../delivery/registry.js';
import type { BounceType } from '../../delivery/types.js';
import { inboundReports } from '../../lib/metrics.js';
import { setSubscription } from '../consent/service.js';
import { recipientByReference, record, type Outcome, type RecipientRef } from '../receipts/service.js';
import { emailRecipient, recordBounce, suppressComplaint } from './sql.js';

/**
 * Bounces and complaints: the one home of what they do, whether a mail server refused a recipient
 * at the send or answered later with a bounce message, or a mailbox provider forwarded a spam
 * report. Each step is idempotent, so a report handled twice (a sender that retries after a lost
 * answer) changes nothing more:
 * - the recipient's receipt records it (`bouncedAt`, `bounceType`, `bounceReason`, `complainedAt`),
 *   counts it once in its campaign, and raises `message.bounced` or `message.complained`;
 * - a permanent bounce suppresses the address at once, temporary ones once there have been
 *   `BOUNCE_SOFT_LIMIT` of them within `BOUNCE_SOFT_DAYS` (`email_bounces` keeps them);
 * - a complaint unsubscribes the address's contacts from email (source `complaint`) and
 *   suppresses the address.
 */

export interface Bounce {
  type: BounceType;
  /** The mail server's reason (its diagnostic). */
  reason: string;
  at: Date;
}

export interface Complaint {
  /** The report's Feedback-Type (`abuse`, `fraud`, ...). */
  feedbackType: string;
  at: Date;
}

const DAY_MS = 24 * 60 * 60_000;
const REASON_MAX = 500;

/** Records a bounce of one recipient of an email log; `unknown` when the log and position are not one of the organization's emails. */
export async function bounced(db: Db, config: Pick<Config, 'bounces'>, orgId: string, ref: RecipientRef, bounce: Bounce): Promise<Outcome> {
  const reason = bounce.reason.replace(/\s+/g, ' ').trim().slice(0, REASON_MAX);
  // The receipt first: once the address shows as suppressed, its recipient shows the bounce.
  const outcome = await record(db, orgId, ref, { kind: 'bounced', at: bounce.at, bounceType: bounce.type, error: reason || undefined });
  if (outcome === 'unknown') return outcome;
  const [row] = await run(db, recordBounce, {
    orgId,
    ...ref,
    type: bounce.type,
    reason: reason || null,
    at: bounce.at,
    since: new Date(bounce.at.getTime() - config.bounces.softDays * DAY_MS),
    softLimit: config.bounces.softLimit,
  });
  if (!row?.address) return 'unknown';
  inboundReports.inc({ kind: `bounce-${bounce.type}` });
  return outcome;
}

/** Records a complaint about one recipient's email: its receipt, its contacts unsubscribed from email, its address suppressed. */
export async function complained(db: Db, orgId: string, ref: RecipientRef, complaint: Complaint): Promise<Outcome> {
  const [row] = await run(db, emailRecipient, { orgId, ...ref });
  if (!row) return 'unknown';
  inboundReports.inc({ kind: 'complaint' });
  const outcome = await record(db, orgId, ref, { kind: 'complained', at: complaint.at, data: { feedbackType: complaint.feedbackType } });
  await setSubscription(db, orgId, { address: row.address }, 'email', 'unsubscribed', 'complaint', complaint.at);
  await run(db, suppressComplaint, { orgId, address: row.address, detail: `Reported as spam (${complaint.feedbackType})` });
  return outcome;
}

/**
 * What the delivery engine hands over (`DeliveryHooks.onBounce`): recipients a mail server refused
 * at the send, each a bounce like any other. Its failures are logged, never the send's.
 */
export function syncBounces(db: Db, config: Pick<Config, 'bounces'>, log: Logger) {
  return async (orgId: string, bounces: SyncBounce[]): Promise<void> => {
    const at = new Date();
    for (const b of bounces) {
      try {
        const ref = await recipientByReference(db, orgId, b.clientId);
        if (ref) await bounced(db, config, orgId, ref, { type: b.type, reason: b.reason, at });
      } catch (err) {
        log.error({ err, orgId }, 'a bounce at the send could not be recorded');
      }
    }
  };
}
