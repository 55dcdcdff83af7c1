import type { Knex } from 'knex';
import { z } from 'zod';
import { decodeCursor, DEFAULT_LIMIT, encodeCursor, MAX_LIMIT, type Page, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { badRequest } from '../../lib/errors.js';
import { operation } from '../../operation.js';

interface OutboxRow {
  id: string;
  send_id: string;
  position: number;
  channel: string;
  recipient: string;
  subject: string | null;
  body: string;
  attachments: { filename: string; contentType: string; size: number }[];
  status: 'success' | 'failed';
  error: string | null;
  created_at: Date;
}

export interface OutboxMessageDto {
  _id: string;
  channel: string;
  recipient: string;
  subject: string | null;
  body: string;
  attachments: { filename: string; contentType: string; size: number }[];
  status: 'success' | 'failed';
  error: string | null;
  createdAt: string;
}

const toDto = (row: OutboxRow): OutboxMessageDto => ({
  _id: row.id,
  channel: row.channel,
  recipient: row.recipient,
  subject: row.subject,
  body: row.body,
  attachments: row.attachments,
  status: row.status,
  error: row.error,
  createdAt: row.created_at.toISOString(),
});

/**
 * Newest first, as every list. Messages are stored per delivery call (`sandbox_sends`) and read one
 * by one through the `sandbox_outbox` view; a message's id is its call's id ending in its position,
 * so `(created_at, id)` orders like `(created_at, send_id, position)`, which the calls' index serves.
 */
async function page(query: Knex.QueryBuilder, req: PageRequest): Promise<Page<OutboxRow>> {
  const limit = req.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit must be between 1 and ${MAX_LIMIT}`);
  const rows = query
    .clone()
    .select('sandbox_outbox.*')
    .orderBy([
      { column: 'sandbox_outbox.created_at', order: 'desc' },
      { column: 'sandbox_outbox.send_id', order: 'desc' },
      { column: 'sandbox_outbox.position', order: 'desc' },
    ])
    .limit(limit + 1);
  if (req.cursor) {
    const key = decodeCursor(req.cursor);
    const sendId = `${key.id.slice(0, 28)}00000000`;
    const position = parseInt(key.id.slice(28), 16);
    rows
      .whereRaw('(sandbox_outbox.created_at, sandbox_outbox.send_id) <= (?::timestamptz, ?::uuid)', [key.createdAt, sendId])
      .whereRaw('(sandbox_outbox.created_at, sandbox_outbox.send_id, sandbox_outbox.position) < (?::timestamptz, ?::uuid, ?::int)', [key.createdAt, sendId, position]);
  }
  const count = query.clone().count({ n: '*' }).first() as Promise<{ n: number } | undefined>;
  const [items, total] = await Promise.all([rows as Promise<OutboxRow[]>, count]);
  const more = items.length > limit;
  const shown = more ? items.slice(0, limit) : items;
  return { items: shown, totalCount: Number(total?.n ?? 0), nextCursor: more ? encodeCursor(shown[shown.length - 1]!) : null };
}

/** What sandbox delivery recorded instead of sending, one item per message; readable by the organization that sent it. */
export const list = operation({
  access: { role: 'any', apiKeys: true },
  input: z.strictObject({
    channel: z.enum(['email', 'sms', 'whatsapp']).optional(),
    recipient: z.string().trim().min(1).max(320).optional(),
  }),
  async run(ctx, filter, req: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('sandbox_outbox');
    if (filter.channel) q.where('sandbox_outbox.channel', filter.channel);
    if (filter.recipient) q.where('sandbox_outbox.recipient', filter.recipient);
    const result = await page(q, req);
    return { ...result, items: result.items.map(toDto) };
  },
});
