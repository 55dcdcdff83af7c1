import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import type { Download } from '../../lib/download.js';
import { operation } from '../../operation.js';
import { load as loadContact } from '../contacts/service.js';
import { consentHistory } from '../consent/service.js';
import { eventsOfRecipients, messagesTo } from '../message-logs/service.js';
import { addressProblems, contactAddresses, personAddress } from '../contacts/person.js';

/**
 * A person's data on request (the right of access of Kenya's Data Protection Act and the GDPR):
 * everything Herald holds about one person, as one JSON document, streamed. The person is a contact
 * (its email and phone number), or an address (for someone who was never a contact, or to include
 * every contact that has it). The document holds the contacts with their consent, the suppressions
 * and bounces of the addresses, and every message sent to them: each log with only the person's
 * recipients (their outcome, receipts and engagement events), never another recipient's.
 *
 * Admins only (a user or an admin API key), as this is personal data of others. The messages are
 * read a page at a time, so a person with many messages costs a few pages of memory.
 */

const ACCESS = { role: 'admin', apiKeys: true } as const;

/** Logs read per page. */
const PAGE = 200;

interface Subject {
  /** The contact asked for, or null when asked by address. */
  contactId: string | null;
  /** The addresses as a send stores them: an email, a phone number (SMS and WhatsApp). */
  addresses: string[];
}

const SUPPRESSION_COLUMNS = ['channel', 'address', 'reason', 'bounce_type', 'detail', 'created_at'].map((c) => `suppressions.${c}`);
const BOUNCE_COLUMNS = ['address', 'bounce_type', 'reason', 'created_at'].map((c) => `email_bounces.${c}`);

/** The contacts that have any of the addresses (their email or phone). */
async function contactsWith(ctx: AuthedContext, addresses: string[]): Promise<string[]> {
  const emails = addresses.filter((a) => a.includes('@'));
  const phones = addresses.filter((a) => !a.includes('@'));
  const rows = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('contacts')
    .where((w) => {
      if (emails.length) w.orWhereRaw('lower(contacts.email) = ANY(?)', [emails]);
      if (phones.length) w.orWhereIn('contacts.phone', phones);
    })
    .orderBy('contacts.created_at')
    .select('contacts.id')) as { id: string }[];
  return rows.map((r) => r.id);
}

/** The document, a chunk at a time: the head (the work that can fail first) before the messages. */
async function* documentOf(ctx: AuthedContext, subject: Subject): AsyncGenerator<Buffer> {
  const orgId = ctx.caller.orgId;
  const t = tenant(ctx.db, orgId);
  const contactIds = subject.contactId ? [subject.contactId] : await contactsWith(ctx, subject.addresses);
  const history = await consentHistory(ctx.db, orgId, contactIds);
  const contacts = await Promise.all(contactIds.map(async (id) => ({ ...(await loadContact(ctx.db, orgId, id)), consentHistory: history.get(id) ?? [] })));
  const org = await ctx.loaders.organizationById.load(orgId);
  const suppressions = (await t.scoped('suppressions').whereIn('suppressions.address', subject.addresses).orderBy('suppressions.created_at').select(SUPPRESSION_COLUMNS)) as {
    channel: string; address: string; reason: string; bounce_type: string | null; detail: string | null; created_at: Date;
  }[];
  const bounces = (await t.scoped('email_bounces').whereIn('email_bounces.address', subject.addresses).orderBy('email_bounces.created_at').select(BOUNCE_COLUMNS)) as {
    address: string; bounce_type: string; reason: string | null; created_at: Date;
  }[];
  const head = {
    generatedAt: new Date().toISOString(),
    organization: { _id: orgId, name: org?.name ?? null },
    subject: { contactId: subject.contactId, addresses: subject.addresses },
    contacts,
    suppressions: suppressions.map((s) => ({ channel: s.channel, address: s.address, reason: s.reason, bounceType: s.bounce_type, detail: s.detail, createdAt: s.created_at.toISOString() })),
    bounces: bounces.map((b) => ({ address: b.address, bounceType: b.bounce_type, reason: b.reason, createdAt: b.created_at.toISOString() })),
  };
  const text = JSON.stringify(head);
  yield Buffer.from(`${text.slice(0, -1)},"messages":[`);

  let before: { createdAt: Date; id: string } | null = null;
  let first = true;
  for (;;) {
    const page = await messagesTo(ctx, subject.addresses, before, PAGE);
    const events = await eventsOfRecipients(ctx, page.map((m) => m.log._id), subject.addresses);
    const byLog = new Map<string, typeof events>();
    for (const e of events) byLog.set(e.logId, [...(byLog.get(e.logId) ?? []), e]);
    let out = '';
    for (const message of page) {
      const own = byLog.get(message.log._id) ?? [];
      // Only the person's events: a recipient the log holds twice has one position each.
      const positions = new Set(message.recipients.map((r) => r.position));
      const item = { ...message.log, recipients: message.recipients, events: own.filter((e) => positions.has(e.position)).map(({ logId: _logId, ...e }) => e) };
      out += `${first ? '' : ','}${JSON.stringify(item)}`;
      first = false;
    }
    if (out) yield Buffer.from(out);
    if (page.length < PAGE) break;
    before = page.at(-1)!.key;
  }
  yield Buffer.from(']}');
}

function download(ctx: AuthedContext, subject: Subject, name: string): Download {
  return {
    contentType: 'application/json; charset=utf-8',
    filename: `${name}-data-${new Date().toISOString().slice(0, 10)}.json`,
    stream: Readable.from(documentOf(ctx, subject), { objectMode: false, highWaterMark: 1 }),
  };
}

const contactSubject = async (ctx: AuthedContext, id: string): Promise<Subject> => contactAddresses(ctx, id);
const addressSubject = async (ctx: AuthedContext, raw: string): Promise<Subject> => ({ contactId: null, addresses: [await personAddress(ctx, raw)] });
const addressInput = z.strictObject({ address: z.string().min(1).max(320) });

/** `GET /contacts/:id/data`: everything Herald holds about a contact, streamed as JSON. */
export const ofContact = operation({
  access: ACCESS,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<Download> {
    return download(ctx, await contactSubject(ctx, id), 'contact');
  },
});

/** `GET /contacts/data?address=`: everything Herald holds about an address, its contacts included, streamed as JSON. */
export const ofAddress = operation({
  access: ACCESS,
  input: addressInput,
  check: (ctx, { address }) => addressProblems(ctx, address),
  async run(ctx, { address }): Promise<Download> {
    return download(ctx, await addressSubject(ctx, address), 'address');
  },
});

/** The document whole, for GraphQL's `personData`: the same as the download, parsed. */
export const whole = operation({
  access: ACCESS,
  input: z.strictObject({ contactId: z.string().optional(), address: z.string().min(1).max(320).optional() }).refine((i) => (i.contactId === undefined) !== (i.address === undefined), {
    path: ['contactId'],
    error: 'give exactly one of contactId and address',
  }),
  async run(ctx, { contactId, address }): Promise<Record<string, unknown>> {
    const subject = contactId !== undefined ? await contactSubject(ctx, contactId) : await addressSubject(ctx, address!);
    const chunks: Buffer[] = [];
    for await (const chunk of documentOf(ctx, subject)) chunks.push(chunk);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  },
});
