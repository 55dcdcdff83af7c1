import type { Knex } from 'knex';
import { nowMs, type Db } from '../../db/database.js';
import { lockFor } from '../../db/locks.js';
import { run } from '../../db/statements.js';
import { countUnsubscribe } from '../../delivery/sql/stats.js';
import { tenant } from '../../db/tenant.js';
import { CHANNELS, type Channel } from '../../delivery/types.js';
import { emit, outboxWrites, wake, WEBHOOK_ENDPOINTS, WOKEN, type NewEvent, type Woken } from '../../delivery/outbox.js';
import { isUuid } from '../../lib/ids.js';
import type { UnsubscribeRef } from '../../delivery/unsubscribe-tokens.js';

/**
 * Consent (platform.md, "Consent"): the one home of a contact's subscription per channel and of
 * every change to it, whoever makes it (an admin through the API, the contact through an
 * unsubscribe link or a reply). Stored in `contacts.unsubscribed`, one entry per channel left,
 * `{ "<channel>": { "at": <ISO time>, "source": <how> } }`; a channel without one is subscribed.
 *
 * Every statement filters `organization_id` by a constant and uses immutable operators only (the
 * JSON is built here, not by the database), so it runs on Citus routed to the organization's shard.
 */

export type ConsentSource = 'link' | 'one-click' | 'reply' | 'api' | 'import' | 'console' | 'complaint';

export type SubscriptionStatus = 'subscribed' | 'unsubscribed';
export const SUBSCRIPTION_STATUSES = ['subscribed', 'unsubscribed'] as const;

/** One channel a contact left, as stored. */
export interface LeftChannel {
  at: string;
  source: ConsentSource;
}

/** `contacts.unsubscribed`. */
export type Unsubscribed = Partial<Record<Channel, LeftChannel>>;

/** One channel's consent as the API shows it. */
export interface ChannelSubscription {
  status: SubscriptionStatus;
  unsubscribedAt: string | null;
  source: ConsentSource | null;
}

export type Subscriptions = Record<Channel, ChannelSubscription>;

/** Consent to set, per channel; channels left out are kept. */
export type SubscriptionsChange = Partial<Record<Channel, SubscriptionStatus>>;

/**
 * Whose consent changes: these contacts, every contact with the address Herald sends to, or every
 * contact of the organization that `matching` narrows a contacts query to (a bulk action's filter).
 */
export type Recipients = { contactIds: string[] } | { address: string } | { matching: Match };

type Conn = Db | Knex.Transaction;
/** Narrows a query of the organization's contacts to the recipients concerned. */
export type Match = (q: Knex.QueryBuilder) => Knex.QueryBuilder;

const leftEntry = (source: ConsentSource, at: Date): LeftChannel => ({ at: at.toISOString(), source });

/** The API shape of a stored `unsubscribed`. */
export function subscriptionsOf(unsubscribed: Unsubscribed | null | undefined): Subscriptions {
  const one = (channel: Channel): ChannelSubscription => {
    const left = unsubscribed?.[channel];
    return left ? { status: 'unsubscribed', unsubscribedAt: left.at, source: left.source } : { status: 'subscribed', unsubscribedAt: null, source: null };
  };
  return { email: one('email'), sms: one('sms'), whatsapp: one('whatsapp') };
}

/** The `unsubscribed` of a new contact given `change` (a new contact is subscribed to every channel otherwise). */
export function unsubscribedOf(change: SubscriptionsChange | undefined, source: ConsentSource, at = new Date()): Unsubscribed {
  return Object.fromEntries(CHANNELS.filter((c) => change?.[c] === 'unsubscribed').map((c) => [c, leftEntry(source, at)]));
}

/** A channel's key as SQL text, checked against the known channels. */
function channelKey(channel: Channel): string {
  if (!CHANNELS.includes(channel)) throw new Error(`unknown channel ${String(channel)}`);
  return `'${channel}'`;
}

/**
 * "The contact left this channel", as knex SQL (the `?` operator escaped). The second test is the
 * partial indexes' predicate, written as they are, so the planner can prove it and read those few
 * contacts from the index. The first says the same with the key-exists operator: without
 * statistics for the predicate the planner takes it to hold for nearly every contact, and would
 * walk the whole organization in list order; the operator's estimate is a small share.
 */
export const leftChannel = (channel: Channel) => `contacts.unsubscribed \\? ${channelKey(channel)} AND (contacts.unsubscribed -> ${channelKey(channel)}) IS NOT NULL`;
const stillIn = (channel: Channel) => `(contacts.unsubscribed -> ${channelKey(channel)}) IS NULL`;

/** An address as Herald sends to it: email lower-case, phone in E.164 as given. */
const addressKey = (channel: Channel, address: string) => (channel === 'email' ? address.trim().toLowerCase() : address.trim());

/** The contacts with that address (through the organization's address indexes). */
function withAddress(channel: Channel, address: string): Match {
  return (q) => (channel === 'email' ? q.whereRaw('lower(contacts.email) = ?', [address]) : q.where('contacts.phone', address));
}

/** The contacts a query narrows to that are in (`stillIn`) or out of (`leftChannel`) any of the channels. */
const anyOf = (channels: readonly Channel[], test: (channel: Channel) => string) => (q: Knex.QueryBuilder) =>
  q.where((w) => channels.forEach((channel) => w.orWhereRaw(test(channel))));

/** The `contact.unsubscribed` event of a contact that left a channel (platform.md, "Outbound webhooks"). */
const unsubscribedEvent = (contactId: string, channel: Channel, address: string | null, source: ConsentSource, at: Date): NewEvent => ({
  type: 'contact.unsubscribed',
  occurredAt: at,
  data: { contactId, channel, address, source },
});

/**
 * The matching contacts leave the channels they are still in, with `source` and `at`; one statement
 * whatever their number, which also writes each contact's `contact.unsubscribed` event per channel it
 * left (their address on it read from the row; built with the immutable `jsonb_object`, as Citus
 * wants of a function of a row's columns in a modification). Those that already left a channel keep
 * its first `at` and `source`. The contacts are locked as they are read, so the channels each one
 * left are judged on its latest version. Answers how many contacts left at least one, and the
 * endpoints to wake.
 */
async function leaveChannels(
  db: Conn,
  { orgId, match, channels, source, at }: { orgId: string; match: Match; channels: readonly Channel[]; source: ConsentSource; at: Date },
): Promise<{ changed: number; endpoints: string[] }> {
  const target = tenant(db, orgId)
    .scoped('contacts')
    .modify(match)
    .modify(anyOf(channels, stillIn))
    .select('contacts.id', 'contacts.unsubscribed as before')
    .forUpdate();
  const entries = Object.fromEntries(channels.map((channel) => [channel, leftEntry(source, at)]));
  const { rows } = (await db.raw(
    `WITH ${WEBHOOK_ENDPOINTS},
          target AS :target,
          left_contacts AS (
            UPDATE contacts c SET unsubscribed = :entries::jsonb || c.unsubscribed, updated_at = date_trunc('milliseconds', now())
            FROM target t WHERE c.organization_id = :orgId AND c.id = t.id
            RETURNING c.id, c.email, c.phone, t.before),
          src AS (
            SELECT 'contact.unsubscribed'::text AS type, :at::timestamptz AS occurred_at,
                   jsonb_object(ARRAY['contactId', 'channel', 'address', 'source'], ARRAY[l.id::text, ch.channel, CASE WHEN ch.channel = 'email' THEN l.email ELSE l.phone END, :source::text]) AS data
            FROM left_contacts l CROSS JOIN unnest(:channels::text[]) AS ch(channel)
            WHERE (l.before -> ch.channel) IS NULL),
          history AS (
            INSERT INTO consent_changes (organization_id, contact_id, channel, status, source, at)
            SELECT :orgId, l.id, ch.channel, 'unsubscribed', :source, :at
            FROM left_contacts l CROSS JOIN unnest(:channels::text[]) AS ch(channel)
            WHERE (l.before -> ch.channel) IS NULL),
          ${outboxWrites('src')}
     SELECT (SELECT count(*) FROM left_contacts)::int AS changed, ${WOKEN}`,
    { orgId, target, entries: JSON.stringify(entries), at, source, channels: [...channels] },
  )) as { rows: (Woken & { changed: number })[] };
  return { changed: rows[0]!.changed, endpoints: rows[0]!.webhook_endpoints ?? [] };
}

/**
 * The matching contacts that left any of the channels are back in them (their entries removed), each
 * channel rejoined recorded in the consent history with `source` and `at`; returns how many.
 */
async function rejoinChannels(
  db: Conn,
  { orgId, match, channels, source, at }: { orgId: string; match: Match; channels: readonly Channel[]; source: ConsentSource; at: Date },
): Promise<number> {
  const target = tenant(db, orgId).scoped('contacts').modify(match).modify(anyOf(channels, leftChannel)).select('contacts.id', 'contacts.unsubscribed as before').forUpdate();
  const { rows } = (await db.raw(
    `WITH target AS :target,
          rejoined AS (
            UPDATE contacts c SET unsubscribed = c.unsubscribed - :channels::text[], updated_at = date_trunc('milliseconds', now())
            FROM target t WHERE c.organization_id = :orgId AND c.id = t.id
            RETURNING c.id, t.before),
          history AS (
            INSERT INTO consent_changes (organization_id, contact_id, channel, status, source, at)
            SELECT :orgId, r.id, ch.channel, 'subscribed', :source, :at
            FROM rejoined r CROSS JOIN unnest(:channels::text[]) AS ch(channel)
            WHERE (r.before -> ch.channel) IS NOT NULL)
     SELECT count(*)::int AS changed FROM rejoined`,
    { orgId, target, channels: [...channels], source, at },
  )) as { rows: { changed: number }[] };
  return rows[0]!.changed;
}

/** One change of a contact's consent, as its history keeps it (newest first in a person's data). */
export interface ConsentChange {
  channel: Channel;
  status: SubscriptionStatus;
  source: ConsentSource;
  at: string;
}

/** Records the channels a new contact was created out of (`unsubscribed`, as stored) in its consent history. */
export async function recordNewContact(db: Conn, orgId: string, contactId: string, unsubscribed: Unsubscribed): Promise<void> {
  const rows = Object.entries(unsubscribed).map(([channel, left]) => ({ organization_id: orgId, contact_id: contactId, channel, status: 'unsubscribed', source: left!.source, at: left!.at }));
  if (rows.length) await db('consent_changes').insert(rows);
}

/** The consent history of these contacts, per contact, newest first. */
export async function consentHistory(db: Conn, orgId: string, contactIds: string[]): Promise<Map<string, ConsentChange[]>> {
  const rows = (await tenant(db, orgId)
    .scoped('consent_changes')
    .whereIn('consent_changes.contact_id', contactIds)
    .orderBy([{ column: 'consent_changes.at', order: 'desc' }, { column: 'consent_changes.id', order: 'desc' }])
    .select('contact_id', 'channel', 'status', 'source', 'at')) as { contact_id: string; channel: Channel; status: SubscriptionStatus; source: ConsentSource; at: Date }[];
  const byContact = new Map<string, ConsentChange[]>(contactIds.map((id) => [id, []]));
  for (const r of rows) byContact.get(r.contact_id)?.push({ channel: r.channel, status: r.status, source: r.source, at: r.at.toISOString() });
  return byContact;
}

/**
 * Sets the consent of these contacts, of every contact of the organization with this address, or of
 * the contacts a filter matches, for one channel or several (an address names its contacts on one
 * channel only); returns how many contacts changed (left or rejoined at least one of the channels).
 * Repeating it is harmless. Unsubscribing an address no contact has creates a contact holding it
 * (named by it), so campaigns' suppression finds it. Each channel a contact leaves is a
 * `contact.unsubscribed` event, written in the same transaction; the endpoints it goes to are woken
 * after the commit, or, when the caller's transaction holds this change, collected in `woken` for
 * the caller to wake after its own.
 */
export async function setSubscription(
  db: Conn,
  orgId: string,
  who: Recipients,
  channelOrChannels: Channel | readonly Channel[],
  status: SubscriptionStatus,
  source: ConsentSource,
  at: Date = new Date(),
  woken?: Set<string>,
): Promise<number> {
  const channels = typeof channelOrChannels === 'string' ? [channelOrChannels] : [...new Set(channelOrChannels)];
  if (!channels.length) return 0;
  let match: Match;
  let address: string | null = null;
  if ('contactIds' in who) {
    const ids = [...new Set(who.contactIds.map((id) => id.toLowerCase()))].filter(isUuid);
    if (!ids.length) return 0;
    match = (q) => q.whereIn('contacts.id', ids);
  } else if ('matching' in who) {
    match = who.matching;
  } else {
    if (channels.length !== 1) throw new Error('an address names its contacts on one channel');
    address = addressKey(channels[0]!, who.address);
    if (!address) return 0;
    match = withAddress(channels[0]!, address);
  }
  if (status === 'subscribed') return rejoinChannels(db, { orgId, match, channels, source, at });
  const endpoints = woken ?? new Set<string>();
  const changed = await db.transaction(async (trx) => {
    // The lock keeps two clicks at once from creating the address's contact twice.
    if (address !== null) await lockFor(trx, `consent:${orgId}:${address}`);
    const left = await leaveChannels(trx, { orgId, match, channels, source, at });
    left.endpoints.forEach((id) => endpoints.add(id));
    if (!left.changed && address !== null && !(await tenant(trx, orgId).scoped('contacts').modify(match).first('contacts.id'))) {
      const channel = channels[0]!;
      const unsubscribed = unsubscribedOf({ [channel]: 'unsubscribed' }, source, at);
      const [created] = (await trx('contacts')
        .insert({
          organization_id: orgId,
          // Contact names are at most 100 characters; an email may be longer.
          name: address.slice(0, 100),
          email: channel === 'email' ? address : null,
          phone: channel === 'email' ? null : address,
          unsubscribed: JSON.stringify(unsubscribed),
        })
        .returning(['id'])) as { id: string }[];
      await recordNewContact(trx, orgId, created!.id, unsubscribed);
      for (const id of await emit(trx, orgId, [unsubscribedEvent(created!.id, channel, address, source, at)])) endpoints.add(id);
      return 1;
    }
    return left.changed;
  });
  if (!woken) await wake(db as Db, orgId, [...endpoints]);
  return changed;
}

/** What an unsubscribe link's page says. */
export interface LinkState {
  organization: string;
  channel: Channel;
  /** The recipient has already left the channel. */
  unsubscribed: boolean;
}

const organizationName = async (db: Conn, orgId: string) => ((await db('organizations').where('id', orgId).first('name')) as { name: string } | undefined)?.name;

/** Whether the recipient a link names has left its channel; null when its organization is gone. Changes nothing. */
export async function linkState(db: Conn, ref: UnsubscribeRef): Promise<LinkState | null> {
  const organization = await organizationName(db, ref.orgId);
  if (organization === undefined) return null;
  const contacts = tenant(db, ref.orgId).scoped('contacts').whereRaw(leftChannel(ref.channel));
  if (ref.contactId !== undefined) contacts.where('contacts.id', ref.contactId);
  else contacts.modify(withAddress(ref.channel, addressKey(ref.channel, ref.address)));
  return { organization, channel: ref.channel, unsubscribed: !!(await contacts.first('contacts.id')) };
}

/**
 * The recipient a link names leaves its channel (`link`: the page's button; `one-click`: a mail
 * client's RFC 8058 POST). A contact deleted since changes nothing. A link from a campaign's message
 * counts one more `unsubscribed` in the campaign's figures when the recipient did leave, in the same
 * transaction (a second click counts nothing). Null when the organization is gone.
 */
export async function unsubscribeThroughLink(db: Db, ref: UnsubscribeRef, source: 'link' | 'one-click'): Promise<LinkState | null> {
  const organization = await organizationName(db, ref.orgId);
  if (organization === undefined) return null;
  const who: Recipients = ref.contactId !== undefined ? { contactIds: [ref.contactId] } : { address: ref.address };
  const { campaignId } = ref;
  if (campaignId === undefined) await setSubscription(db, ref.orgId, who, ref.channel, 'unsubscribed', source);
  else {
    const woken = new Set<string>();
    await db.transaction(async (trx) => {
      if (await setSubscription(trx, ref.orgId, who, ref.channel, 'unsubscribed', source, new Date(), woken)) {
        await run(trx, countUnsubscribe, { orgId: ref.orgId, channel: ref.channel, campaignId });
      }
    });
    await wake(db, ref.orgId, [...woken]);
  }
  return { organization, channel: ref.channel, unsubscribed: true };
}

/** Reply words that change consent (the carriers' and Meta's usual keywords), whatever their case and surrounding space. */
const REPLY_WORDS: Record<string, SubscriptionStatus> = {
  STOP: 'unsubscribed',
  UNSUBSCRIBE: 'unsubscribed',
  STOPALL: 'unsubscribed',
  CANCEL: 'unsubscribed',
  END: 'unsubscribed',
  QUIT: 'unsubscribed',
  START: 'subscribed',
  UNSTOP: 'subscribed',
  SUBSCRIBE: 'subscribed',
};

/**
 * A recipient's reply on an SMS or WhatsApp channel (a provider's webhook, the sandbox's simulated
 * reply): the change of consent its words ask for, made with source `reply`; other texts change
 * nothing. Returns how many contacts changed.
 */
export async function replied(db: Conn, orgId: string, address: string, channel: Channel, text: string, at: Date = new Date()): Promise<number> {
  const status = Object.hasOwn(REPLY_WORDS, text.trim().toUpperCase()) ? REPLY_WORDS[text.trim().toUpperCase()]! : null;
  return status ? setSubscription(db, orgId, { address }, channel, status, 'reply', at) : 0;
}
