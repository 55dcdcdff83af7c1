import type { Task, TaskList } from 'graphile-worker';
import { z } from 'zod';
import type { AuthedContext, Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { tenant } from '../../db/tenant.js';
import { isReportedUndelivered, SANDBOX_RECEIPTS_TASK, SANDBOX_UNDELIVERED, type SandboxReceiptsPayload } from '../../delivery/channels/sandbox.js';
import { expandRecipients, type StoredRecipient } from '../../delivery/log-recipients.js';
import type { Channel } from '../../delivery/types.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { conflict, validationFailed, type FieldProblem } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { replied } from '../consent/service.js';
import { record, recordAll, type Outcome } from '../receipts/service.js';

/**
 * Simulated receipts and engagement in sandbox mode (providers.md, "Sandbox"), so analytics can be
 * tried without providers: the receipts the sandbox adapter queues after each call (SMS and
 * WhatsApp delivered, WhatsApp read, numbers ending in 0001 undelivered), and `POST /sandbox/events`,
 * which simulates an open, a click or a reply for a logged recipient. Both go through receipts and
 * consent as a provider's would.
 */

interface LogRow {
  id: string;
  channel: Channel;
  recipients: StoredRecipient[];
  settled_at: Date | null;
}

/** The organization's logs among `ids`, by id. */
async function logsById(db: Db, orgId: string, ids: string[]): Promise<Map<string, LogRow>> {
  const rows = (await tenant(db, orgId)
    .scoped('message_logs')
    .whereIn('message_logs.id', ids)
    .select('message_logs.id', 'message_logs.channel', 'message_logs.recipients', 'message_logs.settled_at')) as LogRow[];
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * Records one job's receipts: of each log, every recipient sent (or those of `positions`, in a job
 * queued before jobs named logs only). Only a settled log's successful recipients get any (the
 * sandbox reported them sent; the log says so once it settles). A log not settled yet, or not yet visible,
 * makes the job throw after the others are recorded: graphile-worker runs it again later, and what
 * was recorded is recorded once however often it runs.
 */
export async function reportSandboxReceipts(db: Db, payload: SandboxReceiptsPayload): Promise<void> {
  const { orgId, kind } = payload;
  const logs = await logsById(db, orgId, payload.logs.map((l) => l.logId));
  let waiting = 0;
  for (const { logId, positions } of payload.logs) {
    const log = logs.get(logId);
    if (!log?.settled_at) {
      waiting++;
      continue;
    }
    const recipients = expandRecipients(log.recipients, true);
    const named = positions ?? recipients.map((_, i) => i + 1);
    const sent = named.filter((position) => recipients[position - 1]?.status === 'success');
    const undelivered = sent.filter((position) => isReportedUndelivered(recipients[position - 1]!.recipient));
    const delivered = sent.filter((position) => !undelivered.includes(position));
    const at = new Date();
    const data = { provider: 'sandbox' };
    // Each kind for all of the log's recipients at once (receipts `recordAll`).
    if (kind === 'read') await recordAll(db, orgId, logId, delivered, { kind: 'read', at, data });
    else {
      await recordAll(db, orgId, logId, delivered, { kind: 'delivered', at, data });
      if (undelivered.length) await recordAll(db, orgId, logId, undelivered, { kind: 'failed', at, error: SANDBOX_UNDELIVERED, data });
    }
  }
  if (waiting) throw new Error(`sandbox receipts: ${waiting} message log(s) not settled yet; trying again later`);
}

/** The sandbox module's queue task. */
export function sandboxTasks(deps: Pick<Deps, 'db'>): TaskList {
  const task: Task = (payload) => reportSandboxReceipts(deps.db, payload as SandboxReceiptsPayload);
  return { [SANDBOX_RECEIPTS_TASK]: task };
}

const eventInput = z
  .strictObject({
    logId: v.id(),
    recipient: z.string().trim().min(1).max(320),
    type: z.enum(['open', 'click', 'reply']),
    url: z.string().trim().max(2048).optional(),
    text: z.string().max(4096).optional(),
  })
  .superRefine((input, ctx) => {
    if (input.type === 'click' && input.url === undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required for a click' });
    else if (input.url !== undefined && !isHttpUrl(input.url)) ctx.addIssue({ code: 'custom', path: ['url'], message: 'must be an http(s) URL' });
    if (input.type === 'reply' && input.text === undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: 'is required for a reply' });
  }, v.whenPassed('type', 'url', 'text'));

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

type EventInput = z.output<typeof eventInput>;

/** The recipient an event names: its log and position and the address as the log stores it; null when the log is not the organization's or lacks it. */
type Found = { problem: FieldProblem } | { log: LogRow; position: number; address: string };

async function eventRecipient(ctx: AuthedContext, input: Pick<EventInput, 'logId' | 'recipient'>): Promise<Found> {
  const log = (await logsById(ctx.db, ctx.caller.orgId, [input.logId])).get(input.logId);
  if (!log) return { problem: { field: 'logId', message: "logId must name one of the organization's message logs" }};
  const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
  const address = normaliseAddress(input.recipient, { orgCountry: org?.country, kind: log.channel === 'email' ? 'email' : 'phone' }) ?? input.recipient;
  const index = expandRecipients(log.recipients, log.settled_at !== null).findIndex((r) => r.recipient === address);
  if (index < 0) return { problem: { field: 'recipient', message: "recipient must be one of the message log's recipients" }};
  return { log, position: index + 1, address };
}

export interface SandboxEventResult {
  /** Whether the event changed the recipient (or, for a reply, the contact's consent). */
  recorded: Exclude<Outcome, 'unknown'>;
}

/**
 * `POST /sandbox/events`: an open, a click (with its `url`) or a reply (with its `text`: a reply
 * word such as STOP or START changes the contact's consent on the log's channel, as a provider's
 * reply would, see consent `replied`) for a recipient of
 * one of the organization's logs, recorded as a provider's or a tracking link's would be. Sandbox
 * mode only: a live Herald answers 409, since the path exists but simulating would mix invented
 * events with real ones.
 */
export const simulateEvent = operation({
  access: { role: 'admin', apiKeys: true },
  input: eventInput,
  async check(ctx, input, _params, failed) {
    if (ctx.delivery.mode !== 'sandbox') throw conflict('Sandbox events can be simulated only in sandbox mode (DELIVERY_MODE=sandbox)');
    if (failed.has('logId') || failed.has('recipient') || !input.logId || !input.recipient) return [];
    const found = await eventRecipient(ctx, { logId: input.logId, recipient: input.recipient });
    if ('problem' in found) return [found.problem];
    if (input.type === 'reply' && found.log.channel === 'email') return [{ field: 'type', message: 'type reply is for SMS and WhatsApp recipients' }];
    return [];
  },
  async run(ctx, input): Promise<SandboxEventResult> {
    const found = await eventRecipient(ctx, input);
    if ('problem' in found) throw validationFailed([found.problem]);
    const { orgId } = ctx.caller;
    const at = new Date();
    if (input.type === 'reply') {
      const changed = await replied(ctx.db, orgId, found.address, found.log.channel, input.text ?? '', at);
      return { recorded: changed ? 'changed' : 'unchanged' };
    }
    const ref = { logId: found.log.id, position: found.position };
    const outcome = await record(ctx.db, orgId, ref, input.type === 'open' ? { kind: 'opened', at } : { kind: 'clicked', at, data: { url: input.url } });
    if (outcome === 'unknown') throw validationFailed([{ field: 'logId', message: "logId must name one of the organization's message logs" }]);
    return { recorded: outcome };
  },
});
