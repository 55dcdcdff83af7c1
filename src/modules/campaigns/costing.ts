import type { Knex } from 'knex';
import type { Config } from '../../config/config.js';
import type { Deps } from '../../context.js';
import { Personaliser, type RecipientContact } from '../../delivery/personalise.js';
import type { Channel } from '../../delivery/types.js';
import { pathsRead, compile, isTemplate, TemplateRenderError } from '../../lib/templates.js';
import { launchTexts } from './messages.js';
import type { CampaignRow } from './dto.js';

/**
 * What one recipient of a campaign costs per channel, before anything is rendered per recipient:
 * what launch reserves and the estimate counts. Email and WhatsApp cost the same whatever the
 * text; an SMS costs its segments, so a personalised SMS is costed at the longest render Herald
 * can know: the template rendered with the longest value each field it reads has among the
 * organization's contacts. Sending then renders each recipient and reserves the difference for a
 * batch that still costs more (a text that conditions on values, or one a value turns into UCS-2).
 */

export const personaliserFor = (config: Config, campaign: Pick<CampaignRow, 'organization_id' | 'name' | 'messages'>, channel: Channel, organizationName: string) => {
  const content = campaign.messages[channel]!;
  return new Personaliser(config, channel, { subject: 'subject' in content ? content.subject : undefined, body: content.content }, {
    orgId: campaign.organization_id,
    organizationName,
    campaignName: campaign.name,
    bulk: true,
  });
};

/** The contact fields a `contact.<path>` reads, and the SQL of their longest value. */
const FIELD_LENGTHS: Record<string, string> = {
  name: 'c.name',
  firstName: 'c.name',
  email: 'c.email',
  phone: 'c.phone',
  organization: 'c.company',
  tags: "array_to_string(c.tags, '')",
};

/** The longest value of each contact field the templates read, among the organization's contacts, as a contact of those lengths. */
async function longestContact(db: Knex | Knex.Transaction, orgId: string, texts: string[]): Promise<RecipientContact> {
  const paths = texts.flatMap((text) => pathsRead(compile(text))).filter((p) => p[0] === 'contact');
  const fields = [...new Set(paths.map((p) => p[1]).filter((f): f is string => !!f && f in FIELD_LENGTHS))];
  const attributes = [...new Set(paths.filter((p) => p[1] === 'attributes' && p[2]).map((p) => p[2]!))];
  const columns = [
    ...fields.map((f) => `max(char_length(${FIELD_LENGTHS[f]}))::int AS "f_${f}"`),
    ...attributes.map((_, i) => `max(char_length(c.attributes ->> ?))::int AS "a_${i}"`),
  ];
  const lengths: Record<string, number | null> = columns.length
    ? (await db.raw(`SELECT ${columns.join(', ')} FROM contacts c WHERE c.organization_id = ?`, [...attributes, orgId])).rows[0]
    : {};
  const filler = (n: number | null | undefined) => 'x'.repeat(n ?? 0);
  return {
    id: '00000000-0000-4000-8000-000000000000',
    name: filler(Math.max(lengths.f_name ?? 0, lengths.f_firstName ?? 0)) || 'x',
    email: filler(lengths.f_email) || null,
    phone: filler(lengths.f_phone) || null,
    company: filler(lengths.f_organization) || null,
    tags: lengths.f_tags ? [filler(lengths.f_tags)] : [],
    attributes: Object.fromEntries(attributes.map((key, i) => [key, filler(lengths[`a_${i}`])])),
  };
}

export type Units = Partial<Record<Channel, number>>;

/**
 * Credits one recipient of the campaign costs per channel (see above); 0 for a channel whose text
 * cannot be rendered at all (its recipients fail, uncharged). With `longest: false` a personalised
 * SMS is priced at its text rendered for nobody, and nothing is read.
 */
export async function recipientUnits(
  db: Knex | Knex.Transaction,
  config: Config,
  campaign: Pick<CampaignRow, 'organization_id' | 'name' | 'messages' | 'channels'>,
  organizationName: string,
  { longest = true }: { longest?: boolean } = {},
): Promise<Units> {
  const units: Units = {};
  for (const channel of campaign.channels) {
    if (!campaign.messages[channel]) continue;
    const personaliser = personaliserFor(config, campaign, channel, organizationName);
    let body: string;
    try {
      body = personaliser.shared().body;
    } catch (err) {
      if (!(err instanceof TemplateRenderError)) throw err;
      units[channel] = 0;
      continue;
    }
    if (longest && channel === 'sms' && personaliser.personal) {
      const contact = await longestContact(db, campaign.organization_id, [campaign.messages.sms!.content]);
      try {
        body = personaliser.forRecipient('+000000000000000', contact).body!;
      } catch (err) {
        // Values of those lengths break the template (a filter that needs a number): the batches reserve what their renders cost.
        if (!(err instanceof TemplateRenderError)) throw err;
      }
    }
    units[channel] = personaliser.costOf(body);
  }
  return units;
}

/**
 * Launch's price of a campaign whose SMS text reads its contacts (`recipientUnits`), worked out
 * beside the launch's transaction rather than in it: the longest render reads every contact of the
 * organization, the longest step of a launch after writing the audience, and the two then run at
 * once. Null when the texts as stored read no contact (the launch prices them without a read).
 *
 * Its connection is asked for before the launch's own (the pool hands them out in order), and it
 * waits on nothing the launch holds: with a pool of one, the two run one after the other. It
 * reads the organization's name and saved templates itself, a moment before the launch copies
 * them: a template changed in between is priced as it was, and batches whose renders cost more
 * reserve the difference when they are sent, as they do for any render longer than the estimate.
 */
export function priceAside(deps: Pick<Deps, 'db' | 'config'>, campaign: CampaignRow): Promise<Units> | null {
  const sms = campaign.messages.sms;
  if (!sms || !campaign.channels.includes('sms') || !(sms.templateId || isTemplate(sms.content))) return null;
  return deps.db.transaction(async (trx) => {
    const { messages, organizationName } = await launchTexts(trx, campaign);
    return recipientUnits(trx, deps.config, { ...campaign, messages, channels: ['sms'] }, organizationName);
  });
}
