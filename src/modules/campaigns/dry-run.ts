import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { characterCount, preview as previewOf, smsShape } from '../../delivery/cost.js';
import * as credits from '../../delivery/credits.js';
import { isMarkup } from '../../delivery/html.js';
import { round2 } from '../../delivery/credits.js';
import { contactsFor, type RecipientContact } from '../../delivery/personalise.js';
import { deliver, type RecipientInput, type RecipientOutcome } from '../../delivery/pipeline.js';
import type { Channel } from '../../delivery/types.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { notFound, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { TemplateRenderError } from '../../lib/templates.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { audienceAddresses, audienceCounts, cappedCounts, suppressionCounts } from './audience.js';
import { bitingCaps, configuredCaps } from './caps.js';
import { clockNow } from './runs.js';
import { addressDue, audienceTiming, readTiming, type ZoneTiming } from './timing.js';
import { personaliserFor, recipientUnits } from './costing.js';
import type { CampaignRow } from './dto.js';
import { launchTexts } from './messages.js';

/**
 * A campaign before it is sent (platform.md, "Personalised messages"): its messages rendered for one
 * recipient (preview), and its audience, suppressions and cost counted without writing anything
 * (estimate). Both read the campaign's saved templates as they are now, as a launch would.
 */

const READ = { role: 'any', apiKeys: true } as const;

/** The campaign as a launch would see it: its templates' texts copied again. */
async function current(ctx: AuthedContext, id: string): Promise<{ campaign: CampaignRow; organizationName: string }> {
  const t = tenant(ctx.db, ctx.caller.orgId);
  const stored = await t.owned<CampaignRow>('campaigns', id, ['*']);
  if (stored.parent_id) throw notFound();
  if (stored.type === 'automated') {
    // Its audience is whoever meets its trigger: what a launch (or the next send) would reach is
    // the contacts waiting for their delay now.
    const pending = (await t.scoped('campaign_triggers').where({ 'campaign_triggers.campaign_id': id, 'campaign_triggers.status': 'pending' }).pluck('contact_id')) as string[];
    Object.assign(stored, { recipient_type: 'selected', selected_contacts: pending, selected_groups: [], manual_recipients: [] });
  }
  const { messages, organizationName } = await launchTexts(ctx.db, stored);
  return { campaign: { ...stored, messages }, organizationName };
}

export interface PreviewMessage {
  channel: Channel;
  /** The address it would go to; null when the contact has none for the channel. */
  recipient: string | null;
  subject: string | null;
  text: string | null;
  /** Email: whether the rendered text is sent as HTML (it holds markup), else as plain text. */
  html: boolean;
  /** SMS only: segments of the rendered text, and its encoding. */
  segments: number | null;
  encoding: string | null;
  cost: number;
  /** Why the text cannot be rendered for this recipient (it would fail, uncharged). */
  error: string | null;
  /** When it would reach this recipient, launched now, by their sending hours or the local send time; null: at once. */
  sendsAt: string | null;
}

export interface CampaignPreview {
  /** The contact rendered for; null when the campaign's first recipient is an address no contact has. */
  contactId: string | null;
  messages: PreviewMessage[];
}

const previewInput = z.strictObject({ contactId: v.id().optional() });

const addressOf = (channel: Channel, contact: RecipientContact) => (channel === 'email' ? (contact.email?.toLowerCase() ?? null) : (contact.phone ?? null));

/** The first address of the campaign's audience on a channel (as launch would number it), if any. */
async function firstAddress(ctx: AuthedContext, campaign: CampaignRow, channel: Channel): Promise<string | null> {
  const { sql, bindings } = audienceAddresses(campaign, channel);
  const row = (await ctx.db.raw(`SELECT address FROM (${sql}) a LIMIT 1`, bindings)).rows[0] as { address: string } | undefined;
  return row?.address ?? null;
}

/**
 * `POST /campaigns/:id/preview`: each channel's subject and text rendered for `contactId`, or for
 * the campaign's first recipient, with the SMS segments and the cost.
 */
export const preview = operation({
  access: READ,
  input: previewInput,
  async check(ctx, input) {
    if (!input.contactId) return [];
    const found = await tenant(ctx.db, ctx.caller.orgId).scoped('contacts').where('contacts.id', input.contactId.toLowerCase()).first('contacts.id');
    return found ? [] : [{ field: 'contactId', message: 'contactId is not a contact of this organization' }];
  },
  async run(ctx, input, { id }: { id: string }): Promise<CampaignPreview> {
    const { campaign, organizationName } = await current(ctx, id);
    let chosen: RecipientContact | null = null;
    if (input.contactId) {
      chosen = (await tenant(ctx.db, ctx.caller.orgId)
        .scoped('contacts')
        .where('contacts.id', input.contactId.toLowerCase())
        .first('contacts.id', 'contacts.name', 'contacts.email', 'contacts.phone', 'contacts.company', 'contacts.tags', 'contacts.attributes')) as RecipientContact;
    }
    const messages: PreviewMessage[] = [];
    const timing = await readTiming(ctx.db, campaign, clockNow(ctx));
    let contactId: string | null = chosen?.id ?? null;
    for (const channel of campaign.channels) {
      if (!campaign.messages[channel]) continue;
      let recipient: string | null;
      let contact: RecipientContact | null = chosen;
      if (chosen) recipient = addressOf(channel, chosen);
      else {
        recipient = await firstAddress(ctx, campaign, channel);
        contact = recipient ? ((await contactsFor(ctx.db, ctx.caller.orgId, channel, [recipient])).get(recipient) ?? null) : null;
        contactId ??= contact?.id ?? null;
      }
      const personaliser = personaliserFor(ctx.config, campaign, channel, organizationName);
      const sendsAt = timing && recipient ? await addressDue(ctx.db, campaign, channel, recipient, timing) : null;
      const shown: PreviewMessage = { channel, recipient, subject: null, text: null, html: false, segments: null, encoding: null, cost: 0, error: null, sendsAt };
      try {
        const content = personaliser.forRecipient(recipient ?? '', contact);
        shown.text = content.body!;
        shown.subject = content.subject ?? null;
        shown.html = channel === 'email' && isMarkup(content.body!);
        shown.cost = personaliser.costOf(content.body!);
        if (channel === 'sms') {
          const shape = smsShape(content.body!);
          shown.segments = shape.segments;
          shown.encoding = shape.encoding;
        }
      } catch (err) {
        if (!(err instanceof TemplateRenderError)) throw err;
        shown.error = err.message;
      }
      messages.push(shown);
    }
    return { contactId, messages };
  },
});

export interface ChannelEstimate {
  channel: Channel;
  /** Addresses it would be sent to. */
  recipients: number;
  suppressed: { unsubscribed: number; listed: number };
  /** Addresses left out because they reached the channel's frequency cap. */
  capped: number;
  /** With sending hours or a local send time: the recipients per zone and when they would get it (else empty). */
  zones: ZoneTiming[];
  unitCost: number;
  cost: number;
}

export interface CampaignEstimate {
  channels: ChannelEstimate[];
  recipients: number;
  suppressed: number;
  capped: number;
  /** Recipients that would wait for their sending hours or local send time. */
  waiting: number;
  /** When the first of them would be due; null when none would wait. */
  nextOpeningAt: string | null;
  cost: number;
  /** The organization's credits now: whether a launch would be covered. */
  balance: number;
}

/**
 * `GET /campaigns/:id/estimate`: what launching now would send and cost, counted with the very
 * statements launch materialises the audience with (its frequency caps included), without writing
 * anything; with sending hours or a local send time, when each zone's recipients would get it.
 */
export const estimate = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<CampaignEstimate> {
    const { campaign, organizationName } = await current(ctx, id);
    const caps = await bitingCaps(ctx.db, campaign, await configuredCaps(ctx.db, campaign));
    const timing = await readTiming(ctx.db, campaign, clockNow(ctx));
    const [counts, suppressed, capped, units, balance, zones] = await Promise.all([
      audienceCounts(ctx.db, campaign),
      suppressionCounts(ctx.db, campaign),
      cappedCounts(ctx.db, campaign, caps),
      recipientUnits(ctx.db, ctx.config, campaign, organizationName),
      credits.balance(ctx.db, ctx.caller.orgId),
      Promise.all(campaign.channels.map((channel) => (timing ? audienceTiming(ctx.db, campaign, channel, timing, caps[channel]) : []))),
    ]);
    const channels = campaign.channels.map((channel, i): ChannelEstimate => {
      const left = capped[channel] ?? 0;
      const recipients = (counts[channel] ?? 0) - left;
      const unitCost = units[channel] ?? 0;
      const suppressedOf = suppressed[channel] ?? { unsubscribed: 0, listed: 0 };
      return { channel, recipients, suppressed: suppressedOf, capped: left, zones: zones[i]!, unitCost, cost: round2(unitCost * recipients) };
    });
    const waiting = channels.flatMap((c) => c.zones.filter((z) => z.sendsAt !== null));
    return {
      channels,
      recipients: channels.reduce((sum, c) => sum + c.recipients, 0),
      suppressed: channels.reduce((sum, c) => sum + c.suppressed.unsubscribed + c.suppressed.listed, 0),
      capped: channels.reduce((sum, c) => sum + c.capped, 0),
      waiting: waiting.reduce((sum, z) => sum + z.recipients, 0),
      nextOpeningAt: waiting.map((z) => z.sendsAt!).sort()[0] ?? null,
      cost: round2(channels.reduce((sum, c) => sum + c.cost, 0)),
      balance,
    };
  },
});

const testInput = z.strictObject({
  to: z.array(z.string().trim().min(1).max(320)).min(1).max(10, 'must be at most 10 addresses'),
});

/**
 * `POST /campaigns/:id/test`: the campaign's messages, rendered as a launch would render them, sent
 * now to up to 10 addresses: an email address gets the campaign's email, a phone number its SMS and
 * WhatsApp messages (the channels it has). An address that is a contact's renders as that contact,
 * any other with an empty contact but the address. They are logged under the campaign with
 * `test: true`, charged like any send, and never counted in its analytics.
 */
export const test = operation({
  access: { role: 'admin', apiKeys: true },
  input: testInput,
  async run(ctx, input, { id }: { id: string }): Promise<RecipientOutcome[]> {
    const { campaign, organizationName } = await current(ctx, id);
    const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
    const outcomes: RecipientOutcome[] = [];
    const invalid: FieldProblem[] = [];
    const byChannel = new Map<Channel, string[]>();
    for (const given of new Set(input.to)) {
      const address = normaliseAddress(given, { orgCountry: org?.country, dotlessDomains: !ctx.config.blockPrivateHosts });
      if (!address) {
        invalid.push({ field: 'to', message: `to contains an invalid address: ${given}` });
        continue;
      }
      const channels = campaign.channels.filter((c) => campaign.messages[c] && (c === 'email') === address.includes('@'));
      if (!channels.length) invalid.push({ field: 'to', message: `to contains ${given}, and the campaign has no ${address.includes('@') ? 'email' : 'SMS or WhatsApp'} message` });
      for (const channel of channels) byChannel.set(channel, [...(byChannel.get(channel) ?? []), address]);
    }
    if (invalid.length) throw validationFailed(invalid);
    for (const [channel, addresses] of byChannel) {
      const personaliser = personaliserFor(ctx.config, campaign, channel, organizationName);
      const contacts = await contactsFor(ctx.db, ctx.caller.orgId, channel, addresses, personaliser.contactRead);
      const recipients: RecipientInput[] = addresses.map((recipient) => {
        try {
          const content = personaliser.forRecipient(recipient, contacts.get(recipient) ?? null);
          const body = content.body!;
          return {
            recipient,
            own: { cost: personaliser.costOf(body), preview: previewOf(body), length: characterCount(body), content: (at) => personaliser.track(content, at) },
          };
        } catch (err) {
          if (!(err instanceof TemplateRenderError)) throw err;
          return { recipient, invalid: err.message };
        }
      });
      const ready = await ctx.delivery.channelFor(ctx.caller.orgId, channel);
      const texts = personaliser.sharedOrSource();
      outcomes.push(
        ...(await deliver(ctx, {
          orgId: ctx.caller.orgId,
          fromName: ready.fromName,
          senderUserId: ctx.caller.userId,
          senderApiKeyId: ctx.caller.apiKeyId,
          channel,
          body: texts.body,
          subject: texts.subject,
          recipients,
          campaignId: campaign.id,
          test: true,
          via: ready,
          lane: 'transactional',
        })),
      );
    }
    return outcomes;
  },
});
