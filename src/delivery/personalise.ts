import type { Config } from '../config/config.js';
import { textArrayLiteral } from '../db/arrays.js';
import type { Db } from '../db/database.js';
import { run } from '../db/statements.js';
import { compile, pathsRead, render, TemplateRenderError, variablesRead, type CompiledTemplate } from '../lib/templates.js';
import { unsubscribeUrl, type UnsubscribeRef } from './unsubscribe-tokens.js';
import { isMarkup } from './html.js';
import { trackHtml } from './tracking.js';
import { unitCost } from './cost.js';
import { CONTACT_FIELDS, contactsByAddress, contactsInRange, contactsOfColumns, MAX_ATTRIBUTE_KEYS, WHOLE_CONTACT, type ContactField, type ContactRead, type RecipientContactRow } from './sql/recipients.js';
import type { Channel, TargetContent } from './types.js';

/**
 * Per-recipient messages (platform.md, "Personalised messages"): the one home of what a template
 * is given and of when a message is a recipient's own. A message is compiled once per send or
 * campaign chunk; it is rendered per recipient only when it reads the recipient (`contact`,
 * `unsubscribe_url`), and a bulk email (a campaign's, a send to all contacts) carries each
 * recipient's own `List-Unsubscribe` headers even when its text is shared. Everything else is
 * rendered once and shared, so an unpersonalised campaign sends exactly as before. An HTML email
 * with tracking on is each recipient's own too: its links and open pixel name the recipient
 * (platform.md, "Receipts and engagement"), so it is tracked once its log and position are known.
 */

/** A contact as templates see it (`contact.*`): what its message reads of it (`Personaliser.contactRead`). */
export type RecipientContact = Omit<RecipientContactRow, 'address'>;

/** The column behind each `contact.<field>` a template may read. */
const FIELD_COLUMNS: Record<string, ContactField> = {
  name: 'name',
  firstName: 'name',
  email: 'email',
  phone: 'phone',
  organization: 'company',
  tags: 'tags',
  attributes: 'attributes',
};

/** What a message is sent as, and on whose behalf. */
export interface PersonalScope {
  orgId: string;
  organizationName: string;
  /** `campaign.name`, in campaigns. */
  campaignName?: string;
  /** The campaign whose message this is, when it is sent (not a preview or a test send): its unsubscribe links name it. */
  campaignId?: string;
  /** A bulk message: its emails carry `List-Unsubscribe` and one-click `List-Unsubscribe-Post`. */
  bulk: boolean;
  /**
   * Whether an HTML email tracks opens and clicks: campaigns always do (the default); an ad hoc
   * send does unless its organization turned `tracking` off.
   */
  tracking?: boolean;
}

/** A recipient's place among the logs: its message log and its position there (1 the first). */
export interface LogRef {
  logId: string;
  position: number;
}

export interface MessageTexts {
  subject?: string;
  body: string;
}

/** The variables of one recipient. Fields a contact lacks are null, never '' (which Liquid reads as true). */
function contactVariables(channel: Channel, address: string, contact: RecipientContact | null) {
  if (!contact) {
    // Not a contact: an empty contact but for the address it is sent to.
    const email = channel === 'email' && address ? address : null;
    const phone = channel !== 'email' && address ? address : null;
    return { name: null, firstName: null, email, phone, organization: null, tags: [], attributes: {} };
  }
  return {
    name: contact.name ?? null,
    firstName: contact.name ? firstWord(contact.name) : null,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    organization: contact.company ?? null,
    tags: contact.tags ?? [],
    attributes: contact.attributes ?? {},
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a template prints as nothing, or an object without keys: a variable a recipient has no value for. */
const isEmpty = (v: unknown): boolean =>
  v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);

/** Whether a UTF-16 code unit is white space as `\s` and `trim()` read it (a personalised campaign asks it of every name's every character). */
function isSpace(code: number): boolean {
  if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

/** The first word of a name (null for a blank one): what `name.trim().split(/\s+/)[0]` gives, in one pass and one slice. */
function firstWord(name: string): string | null {
  let start = 0;
  while (start < name.length && isSpace(name.charCodeAt(start))) start++;
  let end = start;
  while (end < name.length && !isSpace(name.charCodeAt(end))) end++;
  return end > start ? name.slice(start, end) : null;
}

/** The longest message a channel takes: the text as written, and each recipient's text as rendered (every send, test send and campaign). */
export const MESSAGE_LIMIT: Record<Channel, number> = { sms: 1600, whatsapp: 4096, email: 1_000_000 };

export class Personaliser {
  private readonly source: MessageTexts;
  private readonly subject: CompiledTemplate | null;
  private readonly body: CompiledTemplate;
  private readonly readsRecipient: boolean;
  private readonly readsUnsubscribe: boolean;
  private readonly headers: boolean;
  /** An HTML email (markup as written: a plain-text one costs no per-recipient work) that tracks opens and clicks. */
  private readonly tracks: boolean;
  /** What the texts read of the contacts (`contactsFor` reads only that). */
  readonly contactRead: ContactRead;
  /** The `contact.*` paths the texts read, in the order written. */
  private readonly contactPaths: string[][];
  private sharedTexts: MessageTexts | null = null;
  /** `organization` and (in campaigns) `campaign`: the variables every recipient shares. */
  private readonly organization: { name: string };
  private readonly campaign: { name: string } | undefined;

  /** Compiles the texts (they were checked when saved: a syntax error here is a bug, and throws). */
  constructor(
    private readonly config: Pick<Config, 'publicUrl' | 'jwtSecret' | 'costs'>,
    readonly channel: Channel,
    texts: MessageTexts,
    private readonly scope: PersonalScope,
  ) {
    this.source = texts;
    this.organization = { name: scope.organizationName };
    this.campaign = scope.campaignName !== undefined ? { name: scope.campaignName } : undefined;
    this.subject = texts.subject !== undefined ? compile(texts.subject) : null;
    this.body = compile(texts.body);
    const reads = new Set([...variablesRead(this.body), ...(this.subject ? variablesRead(this.subject) : [])]);
    this.readsUnsubscribe = reads.has('unsubscribe_url');
    this.readsRecipient = reads.has('contact') || this.readsUnsubscribe;
    this.headers = scope.bulk && channel === 'email';
    this.tracks = channel === 'email' && scope.tracking !== false && isMarkup(texts.body);
    const paths = [...(this.subject ? pathsRead(this.subject) : []), ...pathsRead(this.body)].filter((p) => p[0] === 'contact');
    this.contactPaths = paths;
    // `contact` read whole (or a field it does not have, or one a variable names) reads every
    // column; an unsubscribe link names the contact by its id.
    const whole = paths.some((p) => !p[1] || !(p[1] in FIELD_COLUMNS));
    const read = whole ? CONTACT_FIELDS : paths.map((p) => FIELD_COLUMNS[p[1]!]!);
    const fields = [...new Set<ContactField>([...read, ...(this.readsUnsubscribe || this.headers ? (['id'] as const) : [])])];
    // Attributes are read key by key when every read of them names its key, except `size`, which
    // liquidjs answers with the number of keys when no attribute is called so.
    const ofAttributes = paths.filter((p) => p[1] === 'attributes');
    const keys = [...new Set(ofAttributes.map((p) => p[2]))];
    const byKey = !whole && ofAttributes.length > 0 && keys.length <= MAX_ATTRIBUTE_KEYS && keys.every((k) => k !== undefined && k !== 'size');
    this.contactRead = { fields, attributeKeys: byKey ? (keys as string[]) : null };
  }

  /** Whether each recipient is sent its own content (text, headers, or tracked links): rendering it needs the contact behind each address (`contactsFor`). */
  get personal(): boolean {
    return this.readsRecipient || this.headers || this.tracks;
  }

  /** Whether a recipient's content is only complete once its log and position are known (`forRecipient`'s `ref`, or `track`). */
  get tracked(): boolean {
    return this.tracks;
  }

  /** The text every recipient shares, rendered once (throws `TemplateRenderError`). */
  shared(): MessageTexts {
    this.sharedTexts ??= this.renderWith(this.globals());
    return this.sharedTexts;
  }

  /** The shared texts, or the texts as written when they cannot be rendered once (every recipient then has its own). */
  sharedOrSource(): MessageTexts {
    try {
      return this.shared();
    } catch (err) {
      if (err instanceof TemplateRenderError) return this.source;
      throw err;
    }
  }

  /**
   * A recipient's own content: the rendered texts when they read the recipient, and the
   * unsubscribe headers of a bulk email. Throws `TemplateRenderError` when its render fails: that
   * recipient fails with the error, uncharged. With `ref` (the recipient's log and position), a
   * tracked HTML email has its links and open pixel; without it (pricing, preview), it has not.
   */
  forRecipient(address: string, contact: RecipientContact | null, ref?: LogRef): TargetContent {
    const link = this.readsUnsubscribe || this.headers ? this.unsubscribeLink(address, contact) : '';
    const texts = this.readsRecipient
      ? this.renderWith({ organization: this.organization, campaign: this.campaign, contact: contactVariables(this.channel, address, contact), unsubscribe_url: link })
      : this.shared();
    const content: TargetContent = { body: texts.body };
    if (texts.subject !== undefined) content.subject = texts.subject;
    if (this.headers) content.headers = { 'List-Unsubscribe': `<${link}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };
    return ref ? this.track(content, ref) : content;
  }

  /**
   * The `contact.*` variables the texts read that are empty for this recipient (missing, blank, an
   * empty list or object), named as written (`contact.firstName`, `contact.attributes.plan`), from
   * the very values `forRecipient` renders with: what a preview warns of before a text greets
   * someone with "Hello ,". A read past a value that is not an object (`contact.name.size`) is
   * judged, and named, by that value.
   */
  emptyVariables(address: string, contact: RecipientContact | null): string[] {
    const variables: Record<string, unknown> = { contact: contactVariables(this.channel, address, contact) };
    const empty = new Set<string>();
    for (const path of this.contactPaths) {
      let value: unknown = variables;
      const named: string[] = [];
      for (const segment of path) {
        if (!isPlainObject(value)) break;
        value = Object.hasOwn(value, segment) ? value[segment] : undefined;
        named.push(segment);
        // An object without keys is walked on: the variable named is the key it lacks.
        if (isEmpty(value) && !isPlainObject(value)) break;
      }
      if (named.length > 1 && isEmpty(value)) empty.add(named.join('.'));
    }
    return [...empty];
  }

  /**
   * A recipient's content (from `forRecipient` without a ref) as sent to the recipient at `ref`:
   * a tracked HTML email's links go through Herald and it carries the open pixel; anything else is
   * returned as it is. The same test as the SMTP adapter's says whether the body is HTML.
   */
  track(content: TargetContent, ref: LogRef): TargetContent {
    if (!this.tracks || content.body === undefined || !isMarkup(content.body)) return content;
    const body = trackHtml(content.body, { publicUrl: this.config.publicUrl, secret: this.config.jwtSecret, orgId: this.scope.orgId, ...ref });
    return { ...content, body };
  }

  /** Credits one recipient's rendered text costs. */
  costOf(body: string): number {
    return unitCost(this.config as Config, this.channel, body);
  }

  /** A link that unsubscribes the contact (or, for an address no contact has, the address) from this channel. */
  private unsubscribeLink(address: string, contact: RecipientContact | null): string {
    // A contact read without its id (`contactRead` asks for it whenever a link is made) has none to name.
    const from = { orgId: this.scope.orgId, channel: this.channel, ...(this.scope.campaignId !== undefined && { campaignId: this.scope.campaignId }) };
    const ref: UnsubscribeRef = contact?.id ? { ...from, contactId: contact.id } : { ...from, address };
    return unsubscribeUrl(this.config.publicUrl, this.config.jwtSecret, ref);
  }

  /** The variables of a text rendered once: no recipient, so no link and an empty contact. */
  private globals(): Record<string, unknown> {
    return { organization: this.organization, campaign: this.campaign, contact: contactVariables(this.channel, '', null), unsubscribe_url: '' };
  }

  /** The texts rendered with `variables`; a body longer than its channel takes fails like a render (`MESSAGE_LIMIT`). */
  private renderWith(variables: Record<string, unknown>): MessageTexts {
    const body = render(this.body, variables);
    const limit = MESSAGE_LIMIT[this.channel];
    if (body.length > limit) throw new TemplateRenderError(`The rendered message is ${body.length} characters; ${this.channel} takes at most ${limit}`);
    return this.subject ? { subject: render(this.subject, variables), body } : { body };
  }
}

/** The contacts behind `addresses` (sent to on `channel`), by address, in one query, with what `read` asks for (all of them by default). */
export async function contactsFor(
  db: Db,
  orgId: string,
  channel: Channel,
  addresses: string[],
  read: ContactRead = WHOLE_CONTACT,
): Promise<Map<string, RecipientContact>> {
  if (!addresses.length) return new Map();
  const [row] = await run(db, contactsByAddress(channel === 'email', read), { orgId, addresses: textArrayLiteral(addresses), keys: read.attributeKeys ?? [] });
  return contactsOfColumns(row, read);
}

/**
 * The contacts behind a run of every contact's addresses, by address, as `contactsFor` finds them:
 * a chunk of a campaign to all contacts, or of a send to all. Those addresses are the contacts' in
 * the order of the channel's address index (`audienceAddresses`, send-to-all's read; a campaign to
 * all names no manual address, or it would be to `selected`), so they are read as one range of the
 * index, from the first to the last, which holds no one else but contacts that left the channel or
 * came since the addresses were read. Whatever address the range did not answer (a contact deleted
 * or changed since) is then looked up by address.
 */
export async function contactsOfEveryone(db: Db, orgId: string, channel: Channel, addresses: string[], read: ContactRead): Promise<Map<string, RecipientContact>> {
  if (!addresses.length) return new Map();
  const [row] = await run(db, contactsInRange(channel === 'email', read), { orgId, low: addresses[0]!, high: addresses.at(-1)!, keys: read.attributeKeys ?? [] });
  const contacts = contactsOfColumns(row, read);
  const unanswered = addresses.filter((address) => !contacts.has(address));
  if (unanswered.length) for (const [address, contact] of await contactsFor(db, orgId, channel, unanswered, read)) contacts.set(address, contact);
  return contacts;
}
