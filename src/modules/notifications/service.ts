import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { idempotent, idempotentStream } from '../../db/idempotency.js';
import { tenant } from '../../db/tenant.js';
import { erasureKey } from '../erasure/keys.js';
import { erasedToken } from '../erasure/tokens.js';
import * as credits from '../../delivery/credits.js';
import { deliver, priceOf, type RecipientInput, type RecipientOutcome } from '../../delivery/pipeline.js';
import type { Channel } from '../../delivery/types.js';
import { normaliseAddress } from '../../lib/addresses.js';
import type { Parts } from '../../lib/download.js';
import { badRequest, HttpError, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { templateProblems } from '../../lib/templates.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { MESSAGE_LIMIT } from '../../delivery/personalise.js';
import { prepare, textsOf, type Audience, type PreparedMessage } from './messages.js';
import { answerAgain, sendToEveryContact, type SentLogs } from './send-to-all.js';

const SEND = { role: 'any', apiKeys: true } as const;
const MAX_RECIPIENTS = 10_000;
const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/** Explicit recipients: transactional, so never suppressed by consent, each rendered with only its address. */
const AD_HOC: Audience = { bulk: false };

const attachment = z.strictObject({
  filename: z.string().trim().min(1).max(255),
  content: z.string().regex(/^[A-Za-z0-9+/\r\n]*={0,2}$/, 'must be base64'),
  contentType: z.string().trim().regex(/^[\w.+-]+\/[\w.+-]+(;.*)?$/, 'must be a MIME type such as application/pdf').max(255),
});

/** `message` and `subject` are Liquid templates (checked in `textProblems`); `templateId` names a saved one instead. */
const common = {
  type: z.enum(['sms', 'email', 'whatsapp']),
  message: z.string().min(1).optional(),
  subject: z.string().trim().min(1).max(255).optional(),
  templateId: v.id().optional(),
};

interface CommonInput {
  type: Channel;
  message?: string;
  subject?: string;
  templateId?: string;
  attachments?: z.output<typeof attachment>[];
}

/**
 * Rules that read several fields: a message or a template (not both; a template brings its own
 * subject), the message's length and email's subject, attachments for email only.
 */
function channelRules(input: CommonInput, ctx: z.RefinementCtx) {
  if (input.templateId !== undefined) {
    if (input.message !== undefined) ctx.addIssue({ code: 'custom', path: ['templateId'], message: 'replaces message: give one of them' });
    if (input.subject !== undefined) ctx.addIssue({ code: 'custom', path: ['subject'], message: 'comes from the template: leave it out with templateId' });
  } else if (input.message === undefined) {
    ctx.addIssue({ code: 'custom', path: ['message'], message: 'is required, or a templateId' });
  } else {
    const limit = MESSAGE_LIMIT[input.type];
    if (input.message.length > limit) ctx.addIssue({ code: 'custom', path: ['message'], message: `must be at most ${limit} characters for ${input.type}` });
    if (input.type === 'email' && !input.subject) ctx.addIssue({ code: 'custom', path: ['subject'], message: 'is required for email' });
  }
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
  .superRefine(channelRules, v.whenPassed('type', 'message', 'subject', 'templateId', 'attachments'));

const sendToAllInput = z
  .strictObject({ ...common, to: z.literal('all', { error: 'must be "all"' }) })
  .superRefine(channelRules, v.whenPassed('type', 'message', 'subject', 'templateId'));

/**
 * The texts' problems as Liquid (400 naming the field, line and column), and those of the template
 * named; a field that already failed its own rules is not named again. A subject is read for email only.
 */
async function textProblems(ctx: AuthedContext, input: Partial<CommonInput>, failed: ReadonlySet<string>): Promise<FieldProblem[]> {
  const problems = [
    ...(failed.has('message') ? [] : templateProblems('message', input.message)),
    ...(failed.has('subject') || (input.type !== undefined && input.type !== 'email') ? [] : templateProblems('subject', input.subject)),
  ];
  if (input.templateId !== undefined && input.type !== undefined && !failed.has('templateId')) {
    const texts = await textsOf(ctx, { type: input.type, templateId: input.templateId });
    if (Array.isArray(texts)) problems.push(...texts);
  }
  return problems;
}

/** The address as Herald sends to it (E.164 or a lower-case email), or null when it is not one. */
async function normalise(ctx: AuthedContext, channel: Channel, raw: string): Promise<string | null> {
  if (channel === 'email') return normaliseAddress(raw, { kind: 'email', dotlessDomains: !ctx.config.blockPrivateHosts });
  const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
  return normaliseAddress(raw, { kind: 'phone', orgCountry: org?.country });
}

const invalidReason = (channel: Channel) => (channel === 'email' ? 'Invalid email address' : 'Invalid phone number');
const invalidSingle = (channel: Channel): FieldProblem => ({ field: 'to', message: `to must be a valid ${channel === 'email' ? 'email address' : 'phone number'}` });

/**
 * Sends the input's message (its texts or its template's, copied now) to the given `recipients`,
 * each rendered with only its address. With `single`, a recipient whose message cannot be rendered
 * is refused like an address that is not one (400, nothing sent or logged) instead of failing in
 * the answer.
 */
async function sendMessage(ctx: AuthedContext, input: CommonInput, recipients: RecipientInput[], single = false): Promise<RecipientOutcome[]> {
  const channel = input.type;
  const channelReady = await ctx.delivery.channelFor(ctx.caller.orgId, channel);
  const message = await messageFor(ctx, input, recipients, AD_HOC, single);
  await ctx.quotas.sendMessages(ctx.caller.orgId, message.recipients.filter((r) => !r.invalid).length);
  return deliver(ctx, {
    orgId: ctx.caller.orgId,
    fromName: channelReady.fromName,
    senderUserId: ctx.caller.userId,
    senderApiKeyId: ctx.caller.apiKeyId,
    channel,
    body: message.body,
    subject: channel === 'email' ? message.subject : undefined,
    attachments: channel === 'email' ? input.attachments : undefined,
    recipients: message.recipients,
    via: channelReady,
    // A send to given recipients is transactional; one to every contact is bulk, behind it.
    lane: 'transactional',
  });
}

/**
 * The input's message rendered and priced for `recipients`; those it cannot be sent to (a render
 * that fails, an email address that bounced for good) failed with the reason. What a send sends and
 * its estimate counts.
 */
async function messageFor(ctx: AuthedContext, input: CommonInput, recipients: RecipientInput[], audience: Audience, single = false): Promise<PreparedMessage> {
  const texts = await textsOf(ctx, input);
  // The template named was deleted (or moved) since the input was checked.
  if (Array.isArray(texts)) throw validationFailed(texts);
  const message = await prepare(ctx, input.type, texts, recipients, audience);
  if (single && message.recipients[0]?.invalid) throw badRequest(message.recipients[0].invalid);
  if (input.type === 'email') await failHardBounced(ctx, message.recipients);
  return message;
}

/** The distinct recipients of `to`, in order: each address as Herald sends to it, or failed as not one. */
async function recipientsOf(ctx: AuthedContext, channel: Channel, to: string[]): Promise<RecipientInput[]> {
  const seen = new Set<string>();
  const recipients: RecipientInput[] = [];
  for (const raw of to) {
    const address = await normalise(ctx, channel, raw);
    const key = address ?? `invalid:${raw}`;
    if (seen.has(key)) continue;
    seen.add(key);
    recipients.push(address ? { recipient: address } : { recipient: raw, invalid: invalidReason(channel) });
  }
  return recipients;
}

/**
 * Email to an address that bounced for good (on the suppression list with a hard bounce) fails at
 * once, unsent and uncharged, with the reason. Other suppressions (a complaint, an address added by
 * hand) leave campaigns and sends to every contact, not a send to given recipients.
 */
async function failHardBounced(ctx: AuthedContext, recipients: RecipientInput[]): Promise<void> {
  const addresses = recipients.filter((r) => !r.invalid).map((r) => r.recipient);
  if (!addresses.length) return;
  // An erased address is listed under its token (erasure/tokens.ts).
  const key = await erasureKey(ctx.db, ctx.caller.orgId);
  const listedAs = new Map(addresses.map((a) => [a, a]));
  if (key) for (const a of addresses) listedAs.set(erasedToken(key, a), a);
  const bounced = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('suppressions')
    .where({ 'suppressions.channel': 'email', 'suppressions.reason': 'bounce', 'suppressions.bounce_type': 'hard' })
    .whereIn('suppressions.address', [...listedAs.keys()])
    .select('suppressions.address', 'suppressions.detail')) as { address: string; detail: string | null }[];
  if (!bounced.length) return;
  const byAddress = new Map(bounced.map((b) => [listedAs.get(b.address)!, b.detail]));
  for (const r of recipients) {
    if (r.invalid || !byAddress.has(r.recipient)) continue;
    const detail = byAddress.get(r.recipient);
    r.invalid = `Address suppressed: it bounced permanently${detail ? ` (${detail})` : ''}`;
  }
}

/**
 * `POST /notifications/send`. A string `to` is one recipient: 200 on success, 502 naming the
 * provider's reason on failure, 400 for an address that is not one. An array is many: always 200 with
 * one item per distinct recipient, failures included.
 */
export const send = operation({
  access: SEND,
  input: sendInput,
  /**
   * One recipient must be an address (the organization's country reads a phone); of many, each fails
   * on its own. The texts must parse as Liquid, and a template named must be the organization's.
   */
  async check(ctx, input, _params, failed) {
    const single = typeof input.to === 'string' && input.type && !(await normalise(ctx, input.type, input.to)) ? [invalidSingle(input.type)] : [];
    return [...single, ...(await textProblems(ctx, input, failed))];
  },
  async run(ctx, input): Promise<RecipientOutcome | RecipientOutcome[]> {
    return idempotent(ctx.db, ctx.caller.orgId, ctx.idempotencyKey, 'notifications.send', input, async () => {
      if (typeof input.to === 'string') {
        const address = await normalise(ctx, input.type, input.to);
        if (!address) throw validationFailed([invalidSingle(input.type)]);
        const [outcome] = await sendMessage(ctx, input, [{ recipient: address }], true);
        if (outcome!.status === 'failed') throw new HttpError(502, outcome!.error ?? 'Delivery failed');
        return { recipient: outcome!.recipient, status: 'success' } as RecipientOutcome;
      }
      return sendMessage(ctx, input, await recipientsOf(ctx, input.type, input.to));
    });
  },
});

/** What `POST /notifications/estimate` answers: what the same body sent now would reserve. */
export interface SendEstimate {
  /** Distinct recipients, those that cannot be sent to included. */
  recipients: number;
  /** Of them, those that would fail before sending, never charged. */
  invalid: number;
  /** Credits a recipient costs: the dearest one's when their messages differ; 0 when none can be sent to. */
  unitCost: number;
  /** Credits the send would reserve. */
  cost: number;
  /** The organization's credits now. */
  balance: number;
}

/**
 * `POST /notifications/estimate`: the send's body, counted and priced by the very steps the send
 * takes (addresses read, message rendered per recipient, permanently bounced emails failed), without
 * sending, reserving or logging anything. A string `to` is one recipient, counted as invalid when it
 * is not an address (the send would refuse it).
 */
export const estimate = operation({
  access: SEND,
  input: sendInput,
  async check(ctx, input, _params, failed) {
    return textProblems(ctx, input, failed);
  },
  async run(ctx, input): Promise<SendEstimate> {
    const recipients = await recipientsOf(ctx, input.type, typeof input.to === 'string' ? [input.to] : input.to);
    const message = await messageFor(ctx, input, recipients, AD_HOC);
    const price = priceOf(ctx.config, input.type, message.body, message.recipients);
    const valid = message.recipients.filter((r) => !r.invalid);
    return {
      recipients: message.recipients.length,
      invalid: message.recipients.length - valid.length,
      unitCost: valid.reduce((most, r) => Math.max(most, r.own?.cost ?? price.unit), 0),
      cost: price.total,
      balance: await credits.balance(ctx.db, ctx.caller.orgId),
    };
  },
});

/**
 * `POST /notifications/send-to-all`: every contact with an address for the channel, once each, but
 * for the addresses of contacts that left the channel (consent) and, for email, suppressed ones:
 * those are not sent, not charged and not in the answer. The answer comes a log's recipients at a
 * time, in the order of the addresses, as each log is settled (`./send-to-all.ts`): REST writes it
 * as it comes, GraphQL answers it whole.
 */
export const sendToAll = operation({
  access: SEND,
  input: sendToAllInput,
  async check(ctx, input, _params, failed) {
    return textProblems(ctx, input, failed);
  },
  async run(ctx, input): Promise<Parts<RecipientOutcome>> {
    return idempotentStream(ctx.db, ctx.caller.orgId, ctx.idempotencyKey, 'notifications.sendToAll', input, {
      start: () => sendToEveryContact(ctx, input),
      replay: (stored: SentLogs | RecipientOutcome[]) => answerAgain(ctx, stored),
      after: (task) => void ctx.background.run(task),
    });
  },
});
