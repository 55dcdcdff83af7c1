import { z } from 'zod';
import { paginate, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { operation } from '../../operation.js';

interface OutboxRow {
  id: string;
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

/** What sandbox delivery recorded instead of sending; readable by the organization that sent it. */
export const list = operation({
  access: { role: 'any', apiKeys: true },
  input: z.strictObject({
    channel: z.enum(['email', 'sms', 'whatsapp']).optional(),
    recipient: z.string().trim().min(1).max(320).optional(),
  }),
  async run(ctx, filter, page: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('sandbox_outbox').select('sandbox_outbox.*');
    if (filter.channel) q.where('sandbox_outbox.channel', filter.channel);
    if (filter.recipient) q.where('sandbox_outbox.recipient', filter.recipient);
    const result = await paginate<OutboxRow & { updated_at?: Date }>(q, 'sandbox_outbox', page);
    return { ...result, items: result.items.map(toDto) };
  },
});
