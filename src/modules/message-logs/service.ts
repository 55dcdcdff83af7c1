import { z } from 'zod';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { expandRecipients, type StoredRecipient } from '../../delivery/log-recipients.js';
import { operation } from '../../operation.js';
import * as v from '../../lib/validation.js';

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
  recipients: { recipient: string; status: string; error?: string }[];
  messagePreview: string;
  messageLength: number;
  cost: number;
  campaignId: string | null;
  /** A campaign's test send (`POST /campaigns/:id/test`): never counted in its analytics. */
  test: boolean;
  createdAt: string;
  updatedAt: string;
}

const toDto = (row: MessageLogRow): MessageLogDto => ({
  _id: row.id,
  channel: row.channel,
  senderUserId: row.sender_user_id,
  senderOrgId: row.organization_id,
  network: row.network,
  recipients: expandRecipients(row.recipients, row.settled_at !== null),
  messagePreview: row.message_preview,
  messageLength: row.message_length,
  cost: Number(row.cost),
  campaignId: row.campaign_id,
  test: row.test,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const COLUMNS = [
  'id', 'organization_id', 'channel', 'sender_user_id', 'campaign_id', 'test', 'network', 'recipients',
  'message_preview', 'message_length', 'cost', 'settled_at', 'created_at', 'updated_at',
].map((c) => `message_logs.${c}`);

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const date = () =>
  z.union([z.iso.date(), z.iso.datetime({ offset: true })], { error: 'must be an ISO 8601 date or date-time' });

const filterInput = z
  .strictObject({
    channel: z.enum(['email', 'sms', 'whatsapp']).optional(),
    status: z.enum(['success', 'failed', 'pending']).optional(),
    dateFrom: date().optional(),
    dateTo: date().optional(),
    campaignId: v.id().optional(),
  })
  .refine((f) => !f.dateFrom || !f.dateTo || start(f.dateFrom) <= end(f.dateTo), { path: ['dateTo'], message: 'must not be before dateFrom' });
export type MessageLogFilter = z.output<typeof filterInput>;

// `dateTo` is inclusive: a bare date means the whole of that day (UTC).
const start = (d: string) => new Date(DATE_ONLY.test(d) ? `${d}T00:00:00.000Z` : d);
const end = (d: string) => (DATE_ONLY.test(d) ? new Date(Date.parse(`${d}T00:00:00.000Z`) + 86_400_000 - 1) : new Date(d));

const STATUS_COUNT = { success: 'success_count', failed: 'failed_count', pending: 'pending_count' } as const;

export const list = operation({
  access: READ,
  input: filterInput,
  async run(ctx, filter, page: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('message_logs').select(COLUMNS);
    if (filter.channel) q.where('message_logs.channel', filter.channel);
    if (filter.status) q.where(`message_logs.${STATUS_COUNT[filter.status]}`, '>', 0);
    if (filter.dateFrom) q.where('message_logs.created_at', '>=', start(filter.dateFrom));
    if (filter.dateTo) q.where('message_logs.created_at', '<=', end(filter.dateTo));
    if (filter.campaignId) q.where('message_logs.campaign_id', filter.campaignId);
    return paginateAs(q, 'message_logs', page, toDto);
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toDto(await tenant(ctx.db, ctx.caller.orgId).owned<MessageLogRow>('message_logs', id, COLUMNS));
  },
});
