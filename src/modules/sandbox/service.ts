import { z } from 'zod';
import { paginateAs, type Keyset, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { operation } from '../../operation.js';

export interface OutboxMessageDto {
  _id: string;
  channel: string;
  recipient: string;
  subject: string | null;
  body: string;
  attachments: { filename: string; contentType: string; size: number }[];
  /** Email headers Herald added for this recipient, such as `List-Unsubscribe` (`{}` when none). */
  headers: Record<string, string>;
  status: 'success' | 'failed';
  error: string | null;
  createdAt: string;
}

/** A row of the `sandbox_outbox` view: the message's fields as the API shows them, and where it sits in its call. */
type OutboxRow = Omit<OutboxMessageDto, '_id' | 'createdAt'> & { id: string; send_id: string; position: number; created_at: Date };

const toDto = (row: OutboxRow): OutboxMessageDto => ({
  _id: row.id,
  channel: row.channel,
  recipient: row.recipient,
  subject: row.subject,
  body: row.body,
  attachments: row.attachments,
  headers: row.headers,
  status: row.status,
  error: row.error,
  createdAt: row.created_at.toISOString(),
});

/**
 * Newest first, as every list. Messages are stored per delivery call (`sandbox_sends`) and read one
 * by one through the `sandbox_outbox` view; a message's id is its call's id ending in its position,
 * so `(created_at, id)` orders like `(created_at, send_id, position)`, which the calls' index serves.
 */
const byCallAndPosition: Keyset = {
  orderBy: [
    { column: 'sandbox_outbox.created_at', order: 'desc' },
    { column: 'sandbox_outbox.send_id', order: 'desc' },
    { column: 'sandbox_outbox.position', order: 'desc' },
  ],
  after(query, key) {
    const sendId = `${key.id.slice(0, 28)}00000000`;
    const position = parseInt(key.id.slice(28), 16);
    query
      .whereRaw('(sandbox_outbox.created_at, sandbox_outbox.send_id) <= (?::timestamptz, ?::uuid)', [key.createdAt, sendId])
      .whereRaw('(sandbox_outbox.created_at, sandbox_outbox.send_id, sandbox_outbox.position) < (?::timestamptz, ?::uuid, ?::int)', [key.createdAt, sendId, position]);
  },
};

/** What sandbox delivery recorded instead of sending, one item per message; readable by the organization that sent it. */
export const list = operation({
  access: { role: 'any', apiKeys: true },
  input: z.strictObject({
    channel: z.enum(['email', 'sms', 'whatsapp']).optional(),
    recipient: z.string().trim().min(1).max(320).optional(),
  }),
  async run(ctx, filter, req: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('sandbox_outbox').select('sandbox_outbox.*');
    if (filter.channel) q.where('sandbox_outbox.channel', filter.channel);
    if (filter.recipient) {
      // Found as sends store it: `0712345678` finds `+254712345678` in a Kenyan organization.
      const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
      q.where('sandbox_outbox.recipient', normaliseAddress(filter.recipient, { orgCountry: org?.country }) ?? filter.recipient);
    }
    return paginateAs(q, 'sandbox_outbox', req, toDto, byCallAndPosition);
  },
});
