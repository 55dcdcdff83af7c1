import type { Knex } from 'knex';
import { z } from 'zod';
import { tenant } from '../../db/tenant.js';
import type { Channel } from '../../delivery/types.js';
import type { FieldProblem } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { templateProblems } from '../../lib/templates.js';
import * as v from '../../lib/validation.js';
import type { CampaignMessages, CampaignRow } from './dto.js';

/**
 * A campaign's messages as given: per channel, its text (`content`, and `subject` for email) or a
 * saved template (`templateId`) whose text is copied. The copy is taken when the campaign is
 * written and taken again at launch, so what is launched is the template as it then is, and editing
 * the template afterwards never changes a running campaign. Texts are Liquid templates, checked
 * here (400 naming the field, line and column).
 */

const LIMIT: Record<Channel, number> = { email: 1_000_000, sms: 1600, whatsapp: 4096 };

const oneOf = (channel: Channel) => (m: { content?: string; templateId?: string; subject?: string }, zctx: z.RefinementCtx) => {
  if ((m.content === undefined) === (m.templateId === undefined)) {
    zctx.addIssue({ code: 'custom', path: ['content'], message: 'give either content or templateId' });
  }
  if (channel === 'email' && m.content !== undefined && m.subject === undefined) {
    zctx.addIssue({ code: 'custom', path: ['subject'], message: 'is required with content' });
  }
};

const text = (channel: Channel) =>
  z
    .strictObject({ content: z.string().min(1).max(LIMIT[channel]).optional(), templateId: v.id().optional() })
    .superRefine(oneOf(channel));

export const messagesSchema = z.strictObject({
  email: z
    .strictObject({
      subject: z.string().trim().min(1).max(255).optional(),
      content: z.string().min(1).max(LIMIT.email).optional(),
      templateId: v.id().optional(),
    })
    .superRefine(oneOf('email'))
    .optional(),
  sms: text('sms').optional(),
  whatsapp: text('whatsapp').optional(),
});
export type MessagesInput = z.output<typeof messagesSchema>;

const CHANNELS_OF_MESSAGES: Channel[] = ['email', 'sms', 'whatsapp'];

/** The Liquid problems of the texts given. */
function liquidProblems(messages: MessagesInput): FieldProblem[] {
  return CHANNELS_OF_MESSAGES.flatMap((c) => {
    const m = messages[c] as { content?: string; subject?: string } | undefined;
    return [...templateProblems(`messages.${c}.subject`, m?.subject), ...templateProblems(`messages.${c}.content`, m?.content)];
  });
}

interface TemplateText {
  id: string;
  channel: Channel;
  subject: string | null;
  content: string;
}

/**
 * The messages with every `templateId` replaced by its template's text (the id kept beside it), or
 * the problems: a template that is not the organization's, one of another channel, a text that is
 * not a valid template. `stored` is the campaign's current messages: a template deleted since it
 * was copied leaves its copy in place.
 */
export async function resolveMessages(
  db: Knex | Knex.Transaction,
  orgId: string,
  messages: MessagesInput,
  stored?: CampaignMessages,
): Promise<{ messages: CampaignMessages; problems: FieldProblem[] }> {
  const problems = liquidProblems(messages);
  const ids = [...new Set(CHANNELS_OF_MESSAGES.map((c) => messages[c]?.templateId).filter((id): id is string => !!id && isUuid(id)))];
  const templates = new Map<string, TemplateText>();
  if (ids.length) {
    const rows = (await tenant(db, orgId)
      .scoped('message_templates')
      .whereIn('message_templates.id', ids)
      .select('message_templates.id', 'message_templates.channel', 'message_templates.subject', 'message_templates.content')) as TemplateText[];
    for (const row of rows) templates.set(row.id, row);
  }
  const resolved: CampaignMessages = {};
  for (const channel of CHANNELS_OF_MESSAGES) {
    const given = messages[channel];
    if (!given) continue;
    if (given.templateId === undefined) {
      resolved[channel] = { ...given, content: given.content! } as never;
      continue;
    }
    const field = `messages.${channel}.templateId`;
    const template = templates.get(given.templateId.toLowerCase());
    const copy = stored?.[channel];
    if (!template) {
      if (copy && copy.templateId === given.templateId) resolved[channel] = copy as never;
      else problems.push({ field, message: `${field} is not a template of this organization` });
      continue;
    }
    if (template.channel !== channel) {
      problems.push({ field, message: `${field} is a ${template.channel} template, not ${channel}` });
      continue;
    }
    resolved[channel] = (channel === 'email'
      ? { templateId: template.id, subject: template.subject ?? '', content: template.content }
      : { templateId: template.id, content: template.content }) as never;
  }
  return { messages: resolved, problems };
}

/** The stored messages as input again (for launch's fresh copy of their templates). */
export const asInput = (messages: CampaignMessages): MessagesInput =>
  Object.fromEntries(
    Object.entries(messages).map(([channel, m]) => [channel, m.templateId ? { templateId: m.templateId } : m]),
  ) as MessagesInput;

/**
 * A campaign's texts as a launch sends them: its saved templates' texts copied again (a template
 * deleted since keeps its copy), and its organization's name (`organization.name` in a template).
 */
export async function launchTexts(
  db: Knex | Knex.Transaction,
  campaign: Pick<CampaignRow, 'organization_id' | 'messages'>,
): Promise<{ messages: CampaignMessages; organizationName: string }> {
  const organization = (await db('organizations').where('id', campaign.organization_id).first('name')) as { name: string } | undefined;
  const { messages } = await resolveMessages(db, campaign.organization_id, asInput(campaign.messages), campaign.messages);
  return { messages, organizationName: organization?.name ?? '' };
}
