import { z } from 'zod';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { run } from '../../db/statements.js';
import { expandRecipients, hasRecipientSql, type StoredRecipient } from '../../delivery/log-recipients.js';
import { CHANNELS, type Channel } from '../../delivery/types.js';
import type { AuthedContext } from '../../context.js';
import { eventsOfLog, receiptsOfLogs, type EventRow, type StoredReceipt } from '../receipts/sql.js';
import { operation } from '../../operation.js';
import { countsByChannel } from './sql.js';
import * as v from '../../lib/validation.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { validationFailed, type FieldProblem } from '../../lib/errors.js';
import { dateFilter, rangeEnd, rangeStart } from '../../lib/date-range.js';

const READ = { role: 'any', apiKeys: true } as const;

interface MessageLogRow {
  id: string;
  organization_id: string;
  channel: string;
  sender_user_id: string | null;
  campaign_id: string | null;
  test: boolean;
  network: string | null;
  recipients: StoredRecipient[];
  provider_ids: (string | null)[] | null;
  carriers: (string | null)[] | null;
  settled_at: Date | null;
  message_preview: string;
  message_length: number;
  cost: number;
  created_at: Date;
  updated_at: Date;
}

export interface MessageLogDto {
  _id: string;
  channel: string;
  senderUserId: string | null;
  senderOrgId: string;
  network: string | null;
  recipients: LogRecipientDto[];
  messagePreview: string;
  messageLength: number;
  cost: number;
  campaignId: string | null;
  /** A campaign's test send (`POST /campaigns/:id/test`): never counted in its analytics. */
  test: boolean;
  createdAt: string;
  updatedAt: string;
}

/**
 * One recipient of a log: its v1.0 outcome, and when known (platform.md, "Receipts and
 * engagement") the provider's message id and what happened after the send. A field not known is
 * left out.
 */
export interface LogRecipientDto {
  recipient: string;
  status: string;
  error?: string;
  providerMessageId?: string;
  /** The provider account (its id under `/providers`) that carried it, the last one tried. */
  providerId?: string;
  deliveredAt?: string;
  readAt?: string;
  openedAt?: string;
  clickedAt?: string;
  deliveryError?: string;
  bouncedAt?: string;
  bounceType?: 'hard' | 'soft';
  bounceReason?: string;
  complainedAt?: string;
}

/** Receipts of a page's logs, by log id and position. */
type Receipts = Map<string, StoredReceipt>;

function recipientsOf(row: MessageLogRow, receipts: Receipts): LogRecipientDto[] {
  return expandRecipients(row.recipients, row.settled_at !== null).map((r, i) => {
    const out: LogRecipientDto = { ...r };
    const providerId = row.provider_ids?.[i];
    if (providerId) out.providerMessageId = providerId;
    const carrier = row.carriers ? (row.carriers.length === 1 ? row.carriers[0] : row.carriers[i]) : null;
    if (carrier) out.providerId = carrier;
    const receipt = receipts.get(`${row.id}/${i + 1}`);
    if (receipt) {
      if (receipt.delivered_at) out.deliveredAt = receipt.delivered_at.toISOString();
      if (receipt.read_at) out.readAt = receipt.read_at.toISOString();
      if (receipt.opened_at) out.openedAt = receipt.opened_at.toISOString();
      if (receipt.clicked_at) out.clickedAt = receipt.clicked_at.toISOString();
      if (receipt.delivery_error) out.deliveryError = receipt.delivery_error;
      if (receipt.bounced_at) out.bouncedAt = receipt.bounced_at.toISOString();
      if (receipt.bounce_type) out.bounceType = receipt.bounce_type;
      if (receipt.bounce_reason) out.bounceReason = receipt.bounce_reason;
      if (receipt.complained_at) out.complainedAt = receipt.complained_at.toISOString();
    }
    return out;
  });
}

/** The receipts of the recipients of `rows`, in one query. */
async function receiptsFor(ctx: AuthedContext, rows: MessageLogRow[]): Promise<Receipts> {
  const receipts: Receipts = new Map();
  if (!rows.length) return receipts;
  for (const r of await run(ctx.db, receiptsOfLogs, { orgId: ctx.caller.orgId, logIds: rows.map((row) => row.id) })) receipts.set(`${r.log_id}/${r.position}`, r);
  return receipts;
}

const toDto = (row: MessageLogRow, receipts: Receipts): MessageLogDto => ({
  _id: row.id,
  channel: row.channel,
  senderUserId: row.sender_user_id,
  senderOrgId: row.organization_id,
  network: row.network,
  recipients: recipientsOf(row, receipts),
  messagePreview: row.message_preview,
  messageLength: row.message_length,
  cost: Number(row.cost),
  campaignId: row.campaign_id,
  test: row.test,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const COLUMNS = [
  'id', 'organization_id', 'channel', 'sender_user_id', 'campaign_id', 'test', 'network', 'recipients', 'provider_ids', 'carriers',
  'message_preview', 'message_length', 'cost', 'settled_at', 'created_at', 'updated_at',
].map((c) => `message_logs.${c}`);

const date = dateFilter;

/** A recipient's status in a log. */
const STATUSES = ['success', 'failed', 'pending'] as const;

const filterInput = z
  .strictObject({
    channel: z.enum(CHANNELS).optional(),
    status: z.enum(STATUSES).optional(),
    dateFrom: date().optional(),
    dateTo: date().optional(),
    campaignId: v.id().optional(),
    recipient: z.string().optional(),
  })
  .refine((f) => !f.dateFrom || !f.dateTo || start(f.dateFrom) <= end(f.dateTo), { path: ['dateTo'], message: 'must not be before dateFrom' });
export type MessageLogFilter = z.output<typeof filterInput>;

// `dateTo` is inclusive: a bare date means the whole of that day (UTC).
const start = rangeStart;
const end = rangeEnd;

const STATUS_COUNT = { success: 'success_count', failed: 'failed_count', pending: 'pending_count' } as const;

/**
 * The address as a send stores it (a lower-case email, a phone number in E.164 read with the
 * organization's country), or null when it is neither.
 */
export async function normaliseRecipient(ctx: AuthedContext, raw: string): Promise<string | null> {
  if (raw.includes('@')) return normaliseAddress(raw, { kind: 'email', dotlessDomains: !ctx.config.blockPrivateHosts });
  const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
  return normaliseAddress(raw, { kind: 'phone', orgCountry: org?.country });
}

const invalidRecipient: FieldProblem = { field: 'recipient', message: 'recipient must be a valid email address or phone number' };

/**
 * `GET /message-logs` and `messageLogs`: the organization's logs, newest first, narrowed by the
 * filters given. `recipient` finds the logs that have that address among their recipients (in any
 * status), from the index of the logs' addresses; each log comes whole, its other recipients included.
 */
export const list = operation({
  access: READ,
  input: filterInput,
  async check(ctx, { recipient }) {
    return recipient !== undefined && !(await normaliseRecipient(ctx, recipient)) ? [invalidRecipient] : [];
  },
  async run(ctx, filter, page: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('message_logs').select(COLUMNS);
    if (filter.channel) q.where('message_logs.channel', filter.channel);
    if (filter.status) q.where(`message_logs.${STATUS_COUNT[filter.status]}`, '>', 0);
    if (filter.dateFrom) q.where('message_logs.created_at', '>=', start(filter.dateFrom));
    if (filter.dateTo) q.where('message_logs.created_at', '<=', end(filter.dateTo));
    if (filter.campaignId) {
      // A recurring or automated campaign's logs are its runs'. The ids are read first (an InitPlan),
      // so the logs are still found through their (organization, campaign) index.
      q.whereRaw(
        `message_logs.campaign_id = ANY(ARRAY(SELECT ?::uuid UNION ALL
           SELECT c.id FROM campaigns c WHERE c.organization_id = ? AND c.parent_id = ?::uuid))`,
        [filter.campaignId, ctx.caller.orgId, filter.campaignId],
      );
    }
    let logs = q;
    if (filter.recipient !== undefined) {
      const address = await normaliseRecipient(ctx, filter.recipient);
      if (!address) throw validationFailed([invalidRecipient]);
      q.whereRaw(hasRecipientSql('message_logs.recipients', '?'), [address]);
      // The matching logs come from the addresses index, then are ordered: OFFSET 0 keeps the page's
      // ORDER BY ... LIMIT out of the subquery, so the planner can not walk the organization's logs
      // newest first testing each one, which it would for an address its statistics (kept for the
      // whole table, every organization) take for a frequent one: all of them read when it is absent.
      logs = ctx.db.select('*').from(ctx.db.raw('(? OFFSET 0) AS message_logs', [q]));
    }
    const rows = await paginateAs(logs, 'message_logs', page, (row: MessageLogRow) => row);
    const receipts = await receiptsFor(ctx, rows.items);
    return { ...rows, items: rows.items.map((row) => toDto(row, receipts)) };
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<MessageLogRow>('message_logs', id, COLUMNS);
    return toDto(row, await receiptsFor(ctx, [row]));
  },
});

export interface MessageEventDto {
  _id: string;
  /** `message.delivered`, `message.opened`, `message.clicked`, `message.failed`, `message.bounced`, `message.complained`. */
  type: string;
  recipient: string;
  /** The recipient's position in the log (1 is the first). */
  position: number;
  campaignId: string | null;
  /** False for a scanner's or prefetcher's open or click: recorded, not counted. */
  counted: boolean;
  data: Record<string, unknown>;
  occurredAt: string;
  createdAt: string;
}

const eventDto = (e: EventRow): MessageEventDto => ({
  _id: e.id,
  type: e.type,
  recipient: e.recipient,
  position: e.position,
  campaignId: e.campaign_id,
  counted: e.counted,
  data: e.data,
  occurredAt: e.occurred_at.toISOString(),
  createdAt: e.created_at.toISOString(),
});

/** `GET /message-logs/:id/events`: what happened to the log's recipients after the send, in order. */
export const events = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<MessageEventDto[]> {
    await tenant(ctx.db, ctx.caller.orgId).owned('message_logs', id, ['message_logs.id']);
    return (await run(ctx.db, eventsOfLog, { orgId: ctx.caller.orgId, logId: id })).map(eventDto);
  },
});

export interface MessageStatsDto {
  /** Where the count starts (ISO 8601 UTC). */
  since: string;
  total: number;
  /** Every channel with every status, zeros included: nine items, in the order of `CHANNELS` then `STATUSES`. */
  byChannel: { channel: Channel; status: (typeof STATUSES)[number]; count: number }[];
}

/** Midnight UTC of the day `now` is in. */
const startOfDayUtc = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));

/**
 * `GET /message-logs/stats` and `messageStats`: the recipients of the organization's logs created at
 * or after `since` (default: the start of today, UTC), by channel and status, in one indexed query.
 */
export const stats = operation({
  access: READ,
  input: z.strictObject({ since: date().optional() }),
  async run(ctx, { since }): Promise<MessageStatsDto> {
    const from = since ? start(since) : startOfDayUtc(new Date());
    const rows = await run(ctx.db, countsByChannel, { orgId: ctx.caller.orgId, since: from });
    const byChannel = CHANNELS.flatMap((channel) => {
      const row = rows.find((r) => r.channel === channel);
      return STATUSES.map((status) => ({ channel, status, count: row ? Number(row[status]) : 0 }));
    });
    return { since: from.toISOString(), total: byChannel.reduce((sum, c) => sum + c.count, 0), byChannel };
  },
});

/** A message of a person's: its log without the other recipients, and theirs with their positions. */
export interface PersonMessage {
  log: Omit<MessageLogDto, 'recipients'>;
  /** The person's recipients of the log (one address may be there more than once), with their positions (1 the first). */
  recipients: (LogRecipientDto & { position: number })[];
  /** Where the next page starts. */
  key: { createdAt: Date; id: string };
}

/**
 * Up to `limit` of the organization's logs that have any of `addresses` (as a send stores them)
 * among their recipients, newest first, after `before`: from the index of the logs' addresses, each
 * with only those recipients and their receipts.
 */
export async function messagesTo(ctx: AuthedContext, addresses: string[], before: { createdAt: Date; id: string } | null, limit: number): Promise<PersonMessage[]> {
  if (!addresses.length) return [];
  const q = tenant(ctx.db, ctx.caller.orgId).scoped('message_logs').select(COLUMNS);
  q.where((w) => {
    for (const address of addresses) w.orWhereRaw(hasRecipientSql('message_logs.recipients', '?'), [address]);
  });
  if (before) q.whereRaw('(message_logs.created_at, message_logs.id) < (?, ?::uuid)', [before.createdAt, before.id]);
  // As `list` reads a recipient's logs: found through the index first, then ordered (OFFSET 0).
  const rows = (await ctx.db
    .select('*')
    .from(ctx.db.raw('(? OFFSET 0) AS message_logs', [q]))
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .limit(limit)) as MessageLogRow[];
  const receipts = await receiptsFor(ctx, rows);
  const wanted = new Set(addresses);
  return rows.map((row) => {
    const { recipients, ...log } = toDto(row, receipts);
    return {
      log,
      recipients: recipients.flatMap((r, i) => (wanted.has(r.recipient) ? [{ ...r, position: i + 1 }] : [])),
      key: { createdAt: row.created_at, id: row.id },
    };
  });
}

/** The events of these recipients of these logs, in the order they happened. */
export async function eventsOfRecipients(ctx: AuthedContext, logIds: string[], addresses: string[]): Promise<(MessageEventDto & { logId: string })[]> {
  if (!logIds.length || !addresses.length) return [];
  const rows = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('message_events')
    .whereIn('message_events.log_id', logIds)
    .whereIn('message_events.recipient', addresses)
    .orderBy(['message_events.occurred_at', 'message_events.created_at', 'message_events.id'])
    .select('message_events.id', 'message_events.type', 'message_events.log_id', 'message_events.position', 'message_events.campaign_id', 'message_events.recipient',
            'message_events.occurred_at', 'message_events.counted', 'message_events.data', 'message_events.created_at')) as EventRow[];
  return rows.map((e) => ({ ...eventDto(e), logId: e.log_id }));
}
