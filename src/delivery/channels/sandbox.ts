import { textArrayLiteral } from '../../db/arrays.js';
import type { Db } from '../../db/database.js';
import { bodyOf, LogTarget, subjectOf, type Channel, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from '../types.js';

export const SANDBOX_FAILURE = 'Sandbox: delivery to a reserved failing address';

/** Addresses reserved for trying failure paths: any address at `fail.invalid`, any number ending in 0000. */
export const isReservedFailure = (channel: Channel, recipient: string): boolean =>
  channel === 'email' ? recipient.toLowerCase().endsWith('@fail.invalid') : recipient.endsWith('0000');

/** Numbers reserved for trying undelivered receipts: sent successfully, then reported undelivered. */
export const isReportedUndelivered = (recipient: string): boolean => recipient.endsWith('0001');
export const SANDBOX_UNDELIVERED = 'Sandbox: reported undelivered (numbers ending in 0001)';

/** The queue task that reports the simulated receipts of one delivery call (the sandbox module runs it). */
export const SANDBOX_RECEIPTS_TASK = 'sandbox-receipts';

/** How long after the send each simulated receipt arrives. */
export const SANDBOX_RECEIPT_DELAYS_MS = { delivered: 2000, read: 5000 } as const;

/**
 * One job's receipts: `delivered` reports each recipient delivered (or undelivered, for the reserved
 * numbers), `read` reports each read. A log's recipients are the ones its settled log shows sent
 * (a call sends each of its logs whole); `positions`, in jobs queued before, names some of them.
 */
export interface SandboxReceiptsPayload {
  orgId: string;
  kind: 'delivered' | 'read';
  logs: { logId: string; positions?: number[] }[];
}

/**
 * Simulated receipts never hold back sending: their task runs in the workers' `receipts` lane
 * (`tasks.ts`), whose runner takes none of the sends' jobs nor they its, and a job records each of
 * its logs' recipients in one statement (receipts `recordAll`). The priority orders them after
 * anything else a lane might one day share with them.
 */
const RECEIPTS_PRIORITY = 10;

/**
 * Queues the simulated receipts of a call's SMS and WhatsApp logs with a recipient sent: one job per
 * call and kind (a send's call is one log of up to 100 recipients, a campaign chunk's up to 64 logs;
 * a job per log made queueing a tenth of a 100,000-recipient campaign's time), never one per
 * recipient, run a few seconds later, when the logs have settled. A job names its logs only: the
 * settled log says which of its recipients were sent (listing their positions made a chunk's job
 * tens of kilobytes of JSON to write). Queued with graphile-worker's own SQL function because the
 * adapter holds only the database; both jobs in one statement.
 */
async function queueReceipts(db: Db, channel: Channel, orgId: string, targets: DeliveryTarget[], results: DeliveryResult[]): Promise<void> {
  const logIds = new Set<string>();
  targets.forEach((t, i) => {
    if (results[i]!.ok && t instanceof LogTarget) logIds.add(t.logId);
  });
  if (!logIds.size) return;
  const logs = [...logIds].map((logId) => ({ logId }));
  const job = (kind: SandboxReceiptsPayload['kind']) => ({
    payload: { orgId, kind, logs } satisfies SandboxReceiptsPayload,
    delay: SANDBOX_RECEIPT_DELAYS_MS[kind],
  });
  const jobs = channel === 'whatsapp' ? [job('delivered'), job('read')] : [job('delivered')];
  await db.raw(
    `SELECT graphile_worker.add_job(?, j.payload, run_at := now() + j.delay * interval '1 millisecond', max_attempts := 6, priority := ?)
     FROM json_to_recordset(?::json) AS j(payload json, delay int)`,
    [SANDBOX_RECEIPTS_TASK, RECEIPTS_PRIORITY, JSON.stringify(jobs)],
  );
}

/**
 * Records every message in the organization's sandbox outbox instead of calling a provider, and
 * reports success (or the fixed failure for reserved addresses). A call is one row: the message once
 * and its recipients as an array (the outbox reads it back per message). SMS and WhatsApp
 * recipients of a message log get simulated receipts shortly after (`queueReceipts`).
 */
export function createSandboxAdapter(db: Db, channel: Channel, latencyMs = 0): ChannelAdapter {
  return {
    channel,
    async send(message: OutboundMessage, targets: DeliveryTarget[]): Promise<DeliveryResult[]> {
      const n = targets.length;
      const results: DeliveryResult[] = new Array(n);
      const recipients: string[] = new Array(n);
      let failures = 0;
      let personal = false;
      let headers = false;
      for (let i = 0; i < n; i++) {
        const recipient = targets[i]!.recipient;
        recipients[i] = recipient;
        const content = targets[i]!.content;
        if (content) {
          personal = true;
          if (content.headers) headers = true;
        }
        if (!isReservedFailure(channel, recipient)) results[i] = { recipient, ok: true, network: 'sandbox' };
        else {
          failures++;
          results[i] = { recipient, ok: false, network: 'sandbox', error: SANDBOX_FAILURE, retryable: false };
        }
      }
      if (!targets.length) return results;
      if (latencyMs) await new Promise((r) => setTimeout(r, latencyMs));
      const attachments = (message.attachments ?? []).map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: Buffer.from(a.content, 'base64').length,
      }));
      await db.raw(
        `INSERT INTO sandbox_sends (organization_id, channel, subject, body, attachments, recipients, errors, bodies, subjects, headers)
         VALUES (?, ?, ?, ?, ?::jsonb, ?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb)`,
        [
          message.orgId, channel, message.subject ?? null, message.body, JSON.stringify(attachments),
          textArrayLiteral(recipients), textArrayLiteral(failures ? results.map((r) => r.error ?? null) : []),
          // A recipient's own text and headers only when some recipient has them (the outbox reads
          // a recipient's headers as `{}` when the call has none).
          textArrayLiteral(personal ? targets.map((t) => bodyOf(message, t)) : []),
          textArrayLiteral(personal && message.subject !== undefined ? targets.map((t) => subjectOf(message, t) ?? null) : []),
          JSON.stringify(headers ? targets.map((t) => t.content?.headers ?? {}) : []),
        ],
      );
      if (channel !== 'email') await queueReceipts(db, channel, message.orgId, targets, results);
      return results;
    },
  };
}
