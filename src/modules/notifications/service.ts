import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { idempotent } from '../../db/idempotency.js';
import { tenant } from '../../db/tenant.js';
import { deliver, type RecipientInput, type RecipientOutcome } from '../../delivery/pipeline.js';
import type { Channel } from '../../delivery/types.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { HttpError, validationFailed, type FieldProblem } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';

const SEND = { role: 'any', apiKeys: true } as const;
const MAX_RECIPIENTS = 10_000;
const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
const MESSAGE_LIMIT: Record<Channel, number> = { sms: 1600, whatsapp: 4096, email: 1_000_000 };

const attachment = z.strictObject({
  filename: z.string().trim().min(1).max(255),
  content: z.string().regex(/^[A-Za-z0-9+/\r\n]*={0,2}$/, 'must be base64'),
  contentType: z.string().trim().regex(/^[\w.+-]+\/[\w.+-]+(;.*)?$/, 'must be a MIME type such as application/pdf').max(255),
});

const common = {
  type: z.enum(['sms', 'email', 'whatsapp']),
  message: z.string().min(1),
  subject: z.string().trim().min(1).max(255).optional(),
};

/** Rules that depend on the channel: message length, email's subject, attachments for email only. */
function channelRules(input: { type: Channel; message: string; subject?: string; attachments?: { content: string }[] }, ctx: z.RefinementCtx) {
  const limit = MESSAGE_LIMIT[input.type];
  if (input.message.length > limit) ctx.addIssue({ code: 'custom', path: ['message'], message: `must be at most ${limit} characters for ${input.type}` });
  if (input.type === 'email' && !input.subject) ctx.addIssue({ code: 'custom', path: ['subject'], message: 'is required for email' });
  if (input.attachments?.length && input.type !== 'email') ctx.addIssue({ code: 'custom', path: ['attachments'], message: 'are only for email' });
  const bytes = (input.attachments ?? []).reduce((n, a) => n + Buffer.byteLength(a.content, 'base64'), 0);
  if (bytes > MAX_ATTACHMENT_BYTES) ctx.addIssue({ code: 'custom', path: ['attachments'], message: 'must be at most 10 MiB in all' });
}

const sendInput = z
  .strictObject({
    ...common,
    to: z.union([z.string().trim().min(1).max(320), z.array(z.string().trim().min(1).max(320)).min(1).max(MAX_RECIPIENTS)], {
      error: `must be a recipient or an array of 1-${MAX_RECIPIENTS} recipients`,
    }),
    attachments: z.array(attachment).max(20).optional(),
  })
  .superRefine(channelRules, v.whenPassed('type', 'message', 'subject', 'attachments'));

const sendToAllInput = z
  .strictObject({ ...common, to: z.literal('all', { error: 'must be "all"' }) })
  .superRefine(channelRules, v.whenPassed('type', 'message', 'subject'));

/** The address as Herald sends to it (E.164 or a lower-case email), or null when it is not one. */
async function normalise(ctx: AuthedContext, channel: Channel, raw: string): Promise<string | null> {
  if (channel === 'email') return normaliseAddress(raw, { kind: 'email', dotlessDomains: !ctx.config.blockPrivateHosts });
  const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
  return normaliseAddress(raw, { kind: 'phone', orgCountry: org?.country });
}

const invalidReason = (channel: Channel) => (channel === 'email' ? 'Invalid email address' : 'Invalid phone number');
const invalidSingle = (channel: Channel): FieldProblem => ({ field: 'to', message: `to must be a valid ${channel === 'email' ? 'email address' : 'phone number'}` });

async function run(ctx: AuthedContext, channel: Channel, input: { message: string; subject?: string; attachments?: z.output<typeof attachment>[] }, recipients: RecipientInput[]) {
  const channelReady = await ctx.delivery.channelFor(ctx.caller.orgId, channel);
  await ctx.quotas.sendMessages(ctx.caller.orgId, recipients.filter((r) => !r.invalid).length);
  return deliver(ctx, {
    orgId: ctx.caller.orgId,
    fromName: channelReady.fromName,
    senderUserId: ctx.caller.userId,
    senderApiKeyId: ctx.caller.apiKeyId,
    channel,
    body: input.message,
    subject: channel === 'email' ? input.subject : undefined,
    attachments: channel === 'email' ? input.attachments : undefined,
    recipients,
    via: channelReady.send,
  });
}

/**
 * `POST /notifications/send`. A string `to` is one recipient: 200 on success, 502 naming the
 * provider's reason on failure, 400 for an address that is not one. An array is many: always 200 with
 * one item per distinct recipient, failures included.
 */
export const send = operation({
  access: SEND,
  input: sendInput,
  /** One recipient must be an address (the organization's country reads a phone); of many, each fails on its own. */
  async check(ctx, input) {
    if (typeof input.to !== 'string' || !input.type) return [];
    return (await normalise(ctx, input.type, input.to)) ? [] : [invalidSingle(input.type)];
  },
  async run(ctx, input): Promise<RecipientOutcome | RecipientOutcome[]> {
    return idempotent(ctx.db, ctx.caller.orgId, ctx.idempotencyKey, 'notifications.send', input, async () => {
      if (typeof input.to === 'string') {
        const address = await normalise(ctx, input.type, input.to);
        if (!address) throw validationFailed([invalidSingle(input.type)]);
        const [outcome] = await run(ctx, input.type, input, [{ recipient: address }]);
        if (outcome!.status === 'failed') throw new HttpError(502, outcome!.error ?? 'Delivery failed');
        return { recipient: outcome!.recipient, status: 'success' } as RecipientOutcome;
      }
      const seen = new Set<string>();
      const recipients: RecipientInput[] = [];
      for (const raw of input.to) {
        const address = await normalise(ctx, input.type, raw);
        const key = address ?? `invalid:${raw}`;
        if (seen.has(key)) continue;
        seen.add(key);
        recipients.push(address ? { recipient: address } : { recipient: raw, invalid: invalidReason(input.type) });
      }
      return run(ctx, input.type, input, recipients);
    });
  },
});

/** `POST /notifications/send-to-all`: every contact with an address for the channel, once each. */
export const sendToAll = operation({
  access: SEND,
  input: sendToAllInput,
  async run(ctx, input): Promise<RecipientOutcome[]> {
    return idempotent(ctx.db, ctx.caller.orgId, ctx.idempotencyKey, 'notifications.sendToAll', input, async () => {
      const column = input.type === 'email' ? 'email' : 'phone';
      const rows: { address: string }[] = await tenant(ctx.db, ctx.caller.orgId)
        .scoped('contacts')
        .whereNotNull(`contacts.${column}`)
        .distinct(ctx.db.raw(`${column === 'email' ? 'lower(contacts.email)' : 'contacts.phone'} AS address`))
        .orderBy('address');
      if (!rows.length) return [];
      return run(ctx, input.type, input, rows.map((r) => ({ recipient: r.address })));
    });
  },
});
