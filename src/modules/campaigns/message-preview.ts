import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { characterCount, smsShape } from '../../delivery/cost.js';
import { isMarkup } from '../../delivery/html.js';
import { contactsFor, MESSAGE_LIMIT, Personaliser, type RecipientContact } from '../../delivery/personalise.js';
import type { Channel } from '../../delivery/types.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { notFound, type FieldProblem } from '../../lib/errors.js';
import { TemplateRenderError, templateProblems } from '../../lib/templates.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';

/**
 * A message that is not saved yet, rendered for one recipient as a campaign's send would render
 * it (the same personaliser, its variables and limits), and nothing sent or stored: what a form
 * shows while its text is being written, and what a test send checks before it sends.
 */

const CONTACT_COLUMNS = ['contacts.id', 'contacts.name', 'contacts.email', 'contacts.phone', 'contacts.company', 'contacts.tags', 'contacts.attributes'];

const previewInput = z.strictObject({
  channel: z.enum(['email', 'sms', 'whatsapp']).describe('The channel the message is for.'),
  subject: z.string().max(255).optional().describe('Email only: the subject, a Liquid template.'),
  content: z.string().min(1).max(MESSAGE_LIMIT.email).describe("The text, a Liquid template; at most the channel's limit (SMS 1,600 characters, WhatsApp 4,096)."),
  contactId: v.id().optional().describe('The contact to render for; another organization’s, or an unknown one, is 404.'),
  to: z.string().trim().min(1).max(320).optional().describe('An address to render for as a send to it would: as the contact that has it, else as no contact but the address.'),
  campaignName: z.string().max(100).optional().describe('What `{{ campaign.name }}` reads.'),
});
type PreviewInput = z.output<typeof previewInput>;

export interface MessagePreview {
  /** The contact rendered for; null when none (an address no contact has, or an organization without contacts). */
  contactId: string | null;
  /** The address it would go to; null when the contact has none for the channel. */
  recipient: string | null;
  subject: string | null;
  /** The rendered text; null when it cannot be rendered (see `error`). */
  body: string | null;
  /** Email: whether the rendered text is sent as HTML (it holds markup), else as plain text. */
  html: boolean;
  /** Characters of the rendered text (code points). */
  length: number;
  /** SMS only: segments of the rendered text, and its encoding. */
  segments: number | null;
  encoding: string | null;
  cost: number;
  /** The `contact.*` variables the texts read that are empty for this recipient. */
  emptyVariables: string[];
  /** Why the text cannot be rendered for this recipient (a send would fail it, uncharged). */
  error: string | null;
}

const isEmailChannel = (channel: Channel) => channel === 'email';

/** The recipient: the contact named, the one behind the address, or the organization's first contact (the list's first). */
async function recipientOf(ctx: AuthedContext, input: PreviewInput): Promise<{ address: string; contact: RecipientContact | null }> {
  const t = tenant(ctx.db, ctx.caller.orgId);
  if (input.to) {
    const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
    // Checked in `check`: it normalises.
    const address = normaliseAddress(input.to, { orgCountry: org?.country, dotlessDomains: !ctx.config.blockPrivateHosts })!;
    return { address, contact: (await contactsFor(ctx.db, ctx.caller.orgId, input.channel, [address])).get(address) ?? null };
  }
  const query = t.scoped('contacts');
  if (input.contactId) query.where('contacts.id', input.contactId.toLowerCase());
  else query.orderBy([{ column: 'contacts.created_at', order: 'desc' }, { column: 'contacts.id', order: 'desc' }]);
  const contact = (await query.first(CONTACT_COLUMNS)) as RecipientContact | undefined;
  if (!contact && input.contactId) throw notFound('Contact not found');
  const address = contact ? ((isEmailChannel(input.channel) ? contact.email?.toLowerCase() : contact.phone) ?? '') : '';
  return { address, contact: contact ?? null };
}

/**
 * `POST /campaigns/preview`: `content` (and an email's `subject`) rendered for `contactId`, for the
 * address `to`, or for the organization's first contact, with its cost (and an SMS's segments) and
 * the contact's variables it reads that are empty. Any member; nothing is sent or stored.
 */
export const previewMessage = operation({
  access: { role: 'any', apiKeys: true },
  input: previewInput,
  async check(ctx, input, _params, failed) {
    const problems: FieldProblem[] = [...templateProblems('subject', input.subject), ...templateProblems('content', input.content)];
    if (!input.channel) return problems;
    if (input.subject !== undefined && !isEmailChannel(input.channel) && !failed.has('subject')) {
      problems.push({ field: 'subject', message: `subject is only for email, not ${input.channel}` });
    }
    const limit = MESSAGE_LIMIT[input.channel];
    if (input.content && input.content.length > limit) problems.push({ field: 'content', message: `content must be at most ${limit} characters for ${input.channel}` });
    if (input.contactId && input.to) problems.push({ field: 'to', message: 'give either contactId or to' });
    else if (input.to) {
      const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
      const address = normaliseAddress(input.to, { orgCountry: org?.country, dotlessDomains: !ctx.config.blockPrivateHosts });
      if (!address) problems.push({ field: 'to', message: `to is not a valid address: ${input.to}` });
      else if (address.includes('@') !== isEmailChannel(input.channel)) {
        problems.push({ field: 'to', message: `to must be ${isEmailChannel(input.channel) ? 'an email address' : 'a phone number'} for ${input.channel}` });
      }
    }
    return problems;
  },
  async run(ctx, input): Promise<MessagePreview> {
    const [{ address, contact }, org] = await Promise.all([recipientOf(ctx, input), ctx.loaders.organizationById.load(ctx.caller.orgId)]);
    const personaliser = new Personaliser(
      ctx.config,
      input.channel,
      { subject: isEmailChannel(input.channel) ? input.subject : undefined, body: input.content },
      { orgId: ctx.caller.orgId, organizationName: org?.name ?? '', campaignName: input.campaignName, bulk: true },
    );
    const shown: MessagePreview = {
      contactId: contact?.id ?? null,
      recipient: address || null,
      subject: null,
      body: null,
      html: false,
      length: 0,
      segments: null,
      encoding: null,
      cost: 0,
      emptyVariables: personaliser.emptyVariables(address, contact),
      error: null,
    };
    try {
      const content = personaliser.forRecipient(address, contact);
      const body = content.body!;
      Object.assign(shown, { body, subject: content.subject ?? null, html: isEmailChannel(input.channel) && isMarkup(body), length: characterCount(body), cost: personaliser.costOf(body) });
      if (input.channel === 'sms') {
        const shape = smsShape(body);
        shown.segments = shape.segments;
        shown.encoding = shape.encoding;
      }
    } catch (err) {
      if (!(err instanceof TemplateRenderError)) throw err;
      shown.error = err.message;
    }
    return shown;
  },
});
