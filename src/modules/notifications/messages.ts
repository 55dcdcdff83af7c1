import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { isMarkup } from '../../delivery/html.js';
import { characterCount, preview } from '../../delivery/cost.js';
import { contactsOfEveryone, Personaliser, type LogRef, type MessageTexts, type RecipientContact } from '../../delivery/personalise.js';
import type { Batch, RecipientInput } from '../../delivery/pipeline.js';
import type { Channel, TargetContent } from '../../delivery/types.js';
import type { FieldProblem } from '../../lib/errors.js';
import { isTemplate, TemplateRenderError } from '../../lib/templates.js';

/**
 * What an ad hoc send sends (platform.md, "Personalised messages"): its texts (its own, or a saved
 * template's), rendered once when no recipient reads differently, else per recipient and priced by
 * what each one's text costs.
 */


/** Contacts read per query when each recipient's contact is looked up. */
const CONTACTS_CHUNK = 1000;

/**
 * A personalised email longer than this is not held from pricing to sending: it is rendered again
 * when its batch goes out, so a send to many contacts holds a batch of long emails at a time rather
 * than all of them. Emails cost the same whatever their text, so the second render cannot change
 * what is charged; SMS and WhatsApp texts are short (their limits above) and always held.
 */
const HELD_EMAIL_LENGTH = 4096;

/** What a send's input says it sends. */
export interface SendTexts {
  type: Channel;
  message?: string;
  subject?: string;
  templateId?: string;
}

/**
 * The texts of a send: the message and subject given, or a copy of the saved template named (taken
 * now: editing the template later changes nothing already sent). Problems name `templateId` when
 * the template is not the organization's or is for another channel.
 */
export async function textsOf(ctx: AuthedContext, input: SendTexts): Promise<MessageTexts | FieldProblem[]> {
  if (input.templateId === undefined) return { body: input.message!, subject: input.type === 'email' ? input.subject : undefined };
  const template = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('message_templates')
    .where('message_templates.id', input.templateId)
    .first('channel', 'subject', 'content')) as { channel: Channel; subject: string | null; content: string } | undefined;
  // Another organization's template is answered as unknown: its existence is not the caller's to learn.
  if (!template) return [{ field: 'templateId', message: "templateId must name one of the organization's templates" }];
  if (template.channel !== input.type) return [{ field: 'templateId', message: `templateId names a ${template.channel} template; this send is ${input.type}` }];
  return { body: template.content, subject: input.type === 'email' ? (template.subject ?? undefined) : undefined };
}

/** A send's message, ready for the pipeline: the shared texts, and its recipients with their own messages where they have them. */
export interface PreparedMessage extends MessageTexts {
  recipients: RecipientInput[];
}

export interface Audience {
  /**
   * A send to many contacts (send-to-all: every contact's address, in the order of the address
   * index): each recipient is rendered with its contact, and an email carries the unsubscribe
   * headers. An ad hoc send is transactional: each recipient renders with an empty contact but for
   * its address.
   */
  bulk: boolean;
}

/**
 * Renders `texts` for the recipients. A message that reads no recipient is rendered once and shared
 * (the fast path: one body, one price); otherwise each valid recipient gets its own rendered
 * message and price. A recipient whose render fails, or renders longer than the channel takes,
 * fails with the reason before anything is reserved: never sent, never charged.
 */
export async function prepare(ctx: AuthedContext, channel: Channel, texts: MessageTexts, recipients: RecipientInput[], audience: Audience): Promise<PreparedMessage> {
  return (await preparerFor(ctx, channel, texts, audience)).prepare(recipients);
}

/** A send's texts compiled once, to render and price its recipients a part at a time (`prepare`'s steps). */
export interface Preparer {
  /** The texts every recipient is sent unless it has its own: rendered once, or as written when each recipient has its own. */
  readonly shared: MessageTexts;
  /** Whether each recipient has its own message (see `Personaliser.personal`). */
  readonly personal: boolean;
  /** `prepare`'s answer for these recipients. */
  prepare(recipients: RecipientInput[]): Promise<PreparedMessage>;
  /**
   * Recipients of logs written earlier (a send to every contact), in place: each pending one is
   * rendered again from its contact now, as it is sent. One whose message no longer renders, or now
   * costs more than its log reserved for it (`reserved(batch, position)`), fails, uncharged.
   */
  again(batches: readonly Batch[], reserved: (batch: number, position: number) => number): Promise<void>;
}

/** Why a recipient whose message, rendered again as it was sent, cost more than was reserved for it went unsent. */
export const COSTS_MORE = 'The message rendered for this recipient now costs more than the send reserved for it (its contact changed meanwhile)';

/** The `Preparer` of `texts` for a send to `audience`: the texts compiled, the organization's name and tracking read, once. */
export async function preparerFor(ctx: AuthedContext, channel: Channel, texts: MessageTexts, { bulk }: Audience): Promise<Preparer> {
  const orgId = ctx.caller.orgId;
  // A text without markup reads nothing, not even the organization's name: no query for it.
  const reads = isTemplate(texts.body) || (texts.subject !== undefined && isTemplate(texts.subject));
  const organizationName = reads ? ((await ctx.loaders.organizationById.load(orgId))?.name ?? '') : '';
  const personaliser = new Personaliser(ctx.config, channel, texts, { orgId, organizationName, bulk, tracking: await tracks(ctx, channel, texts) });
  const contactsOf = (addresses: string[]) =>
    bulk ? contactsOfEveryone(ctx.db, orgId, channel, addresses, personaliser.contactRead) : Promise.resolve(new Map<string, RecipientContact>());

  if (!personaliser.personal) {
    const shared = sharedMessage(personaliser);
    return {
      shared: 'error' in shared ? texts : shared,
      personal: false,
      async prepare(recipients) {
        if ('error' in shared) return { ...texts, recipients: recipients.map((r) => (r.invalid ? r : { recipient: r.recipient, invalid: shared.error })) };
        return { ...shared, recipients };
      },
      // The shared message is what was priced: nothing to render again.
      async again() {},
    };
  }

  return {
    // The shared texts are never sent (every recipient has its own); they stand for the send where a
    // log has no rendered text to show (each of its recipients failed to render).
    shared: texts,
    personal: true,
    async prepare(recipients) {
      const prepared: RecipientInput[] = [];
      for (let i = 0; i < recipients.length; i += CONTACTS_CHUNK) {
        const chunk = recipients.slice(i, i + CONTACTS_CHUNK);
        // Send-to-all's addresses are every contact's, in the order of the address index: a chunk of them is one range of it.
        const contacts = await contactsOf(chunk.filter((r) => !r.invalid).map((r) => r.recipient));
        for (const r of chunk) prepared.push(r.invalid ? r : ownMessage(personaliser, r.recipient, contacts.get(r.recipient) ?? null));
      }
      return { ...texts, recipients: prepared };
    },
    async again(batches, reserved) {
      const pending = batches.flatMap((b) => (b.settled ? [] : b.recipients.filter((r) => !r.invalid).map((r) => r.recipient)));
      const contacts = await contactsOf(pending);
      batches.forEach((batch, b) => {
        if (batch.settled) return;
        batch.recipients.forEach((r, i) => {
          if (r.invalid) return;
          const own = ownMessage(personaliser, r.recipient, contacts.get(r.recipient) ?? null);
          if (own.invalid) r.invalid = own.invalid;
          else if (own.own!.cost > reserved(b, i)) r.invalid = COSTS_MORE;
          else r.own = own.own;
        });
      });
    },
  };
}

/**
 * Whether the send's emails track opens and clicks: an HTML email, unless the organization turned
 * `tracking` off. Only an HTML email reads the setting (a plain-text one, SMS and WhatsApp never track).
 */
async function tracks(ctx: AuthedContext, channel: Channel, texts: MessageTexts): Promise<boolean> {
  if (channel !== 'email' || !isMarkup(texts.body)) return false;
  const row = (await ctx.db('organizations').where('organizations.id', ctx.caller.orgId).first('tracking')) as { tracking: boolean } | undefined;
  return row?.tracking !== false;
}

/** The message every recipient shares, rendered once, or why it cannot be sent (every recipient then fails with it). */
function sharedMessage(personaliser: Personaliser): MessageTexts | { error: string } {
  try {
    return personaliser.shared();
  } catch (err) {
    if (!(err instanceof TemplateRenderError)) throw err;
    return { error: err.message };
  }
}

/** A recipient with its own rendered message and price, or failed with why it has none. */
function ownMessage(personaliser: Personaliser, address: string, contact: RecipientContact | null): RecipientInput {
  try {
    const content = personaliser.forRecipient(address, contact);
    const body = content.body!;
    const held = personaliser.channel !== 'email' || body.length <= HELD_EMAIL_LENGTH;
    return {
      recipient: address,
      own: {
        cost: personaliser.costOf(body),
        preview: preview(body),
        length: characterCount(body),
        content: held ? holding(personaliser, content) : (at) => personaliser.forRecipient(address, contact, at),
      },
    };
  } catch (err) {
    if (!(err instanceof TemplateRenderError)) throw err;
    return { recipient: address, invalid: err.message };
  }
}

/**
 * A content kept for sending. Made apart from the closure that renders again, so that one does not
 * keep the rendered content alive with it (closures of one scope share what they capture).
 */
const holding = (personaliser: Personaliser, content: TargetContent) => (at: LogRef) => personaliser.track(content, at);
