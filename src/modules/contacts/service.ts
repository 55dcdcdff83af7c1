import type { Knex } from 'knex';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { paginateAs, paginateJson, type PageRequest } from '../../db/pagination.js';
import { tenant, type Tenant } from '../../db/tenant.js';
import { wake } from '../../delivery/outbox.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { validationFailed, type FieldProblem } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { normaliseAddress } from '../../lib/addresses.js';
import { phoneTimeZone, timeZone } from '../../lib/time-zones.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { CHANNELS } from '../../delivery/types.js';
import * as triggers from '../campaigns/triggers.js';
import { leftChannel, recordNewContact, setSubscription, SUBSCRIPTION_STATUSES, unsubscribedOf, type SubscriptionsChange } from '../consent/service.js';
import { attributesChange, attributesFilter, containments, gatherQueryFilters, merge, mergeProblems, type Attributes, type AttributesChange } from './attributes.js';
import { contactColumns, contactJsonSql, toContactDto, type ContactRow } from './dto.js';
import { record } from '../audit/record.js';

/** Who may read contacts, and who may change them (the export and the bulk actions say the same). */
export const READ = { role: 'any', apiKeys: true } as const;
export const WRITE = { role: 'admin', apiKeys: true } as const;

const subscriptionStatus = z.enum(SUBSCRIPTION_STATUSES).optional();

const fields = {
  name: v.name(),
  email: v.recipientEmail().nullable(),
  phone: z.string().trim().min(1).max(40).nullable(),
  countryCode: z
    .string()
    .trim()
    .regex(/^(\+\d{1,4}|[A-Za-z]{2})$/, 'must be a calling code such as +254 or a country code such as KE')
    .nullable(),
  organization: z.string().trim().max(100).nullable(),
  tags: z.array(z.string().trim().min(1).max(50)).max(50),
  groups: z.array(v.id()).max(1000),
  attributes: attributesChange,
  /** The contact's time zone (IANA); null: its phone number's country's when that has one, else the organization's. */
  timezone: timeZone().nullable(),
  /** Consent per channel, set by an admin (source `api`); channels left out are kept. */
  subscriptions: z.strictObject({ email: subscriptionStatus, sms: subscriptionStatus, whatsapp: subscriptionStatus }),
};

const createInput = z.strictObject({
  name: fields.name,
  email: fields.email.optional(),
  phone: fields.phone.optional(),
  countryCode: fields.countryCode.optional(),
  organization: fields.organization.optional(),
  tags: fields.tags.optional(),
  groups: fields.groups.optional(),
  attributes: fields.attributes.optional(),
  timezone: fields.timezone.optional(),
  subscriptions: fields.subscriptions.optional(),
});
const updateInput = createInput.partial();
type ContactInput = z.output<typeof updateInput>;
/** What `resolveFields` judges of a contact. */
type Addresses = Pick<ContactInput, 'email' | 'phone' | 'countryCode'>;

export const filterInput = z.preprocess(
  gatherQueryFilters,
  z.strictObject({
    group: v.id().optional(),
    tag: z.string().trim().min(1).max(50).optional(),
    search: z.string().trim().min(1).max(100).optional(),
    attributes: attributesFilter.optional(),
    unsubscribed: z.enum(CHANNELS).optional(),
  }),
);
export type ContactFilter = z.output<typeof filterInput>;

const NOTHING_FAILED: ReadonlySet<string> = new Set();

/**
 * The contact as it will be stored (on update, the stored one with the change): one address at
 * least, the phone in E.164 read with the contact's country code, else the organization's country.
 * Fields that failed their own rules (`failed`) are not judged again.
 */
async function resolveFields(ctx: AuthedContext, merged: Addresses, phoneChanged: boolean, failed = NOTHING_FAILED) {
  const problems: FieldProblem[] = [];
  if (!merged.email && !merged.phone && !failed.has('email') && !failed.has('phone')) problems.push({ field: 'email', message: 'email or phone is required' });
  let phone = merged.phone ?? null;
  // A country code that failed its rule leaves the phone unjudged: it may be good for the code meant.
  if (phone && phoneChanged && !failed.has('countryCode')) {
    const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
    phone = normaliseAddress(phone, { kind: 'phone', countryCode: merged.countryCode, orgCountry: org?.country });
    if (!phone) problems.push({ field: 'phone', message: 'phone must be a valid phone number' });
  }
  return { phone, problems };
}

/** Every id must name one of the caller's own groups; the others are a problem that names them. */
export async function unknownGroups(t: Tenant, ids: string[] | undefined): Promise<FieldProblem[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const found = new Set((await t.scoped('groups').whereIn('groups.id', unique).select('groups.id')).map((r: { id: string }) => r.id));
  const unknown = unique.filter((id) => !found.has(id));
  return unknown.length ? [{ field: 'groups', message: `groups contains unknown group ids: ${unknown.join(', ')}` }] : [];
}

/**
 * Memberships as given (ids checked by `unknownGroups`; one deleted since is refused by its foreign
 * key); answers the groups the contact newly joined (they may trigger automated campaigns).
 */
async function setGroups(trx: Knex.Transaction, orgId: string, contactId: string, groupIds: string[]): Promise<string[]> {
  await trx('contact_groups').where({ organization_id: orgId, contact_id: contactId }).whereNotIn('group_id', groupIds).delete();
  return addGroups(trx, orgId, contactId, groupIds);
}

/** Adds memberships; answers the groups newly joined. */
async function addGroups(db: Knex | Knex.Transaction, orgId: string, contactId: string, groupIds: string[]): Promise<string[]> {
  if (!groupIds.length) return [];
  try {
    // With the contact's created_at, which a membership carries (the export reads memberships in list order).
    const { rows } = (await db.raw(
      `INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
       SELECT c.organization_id, c.id, g.id, c.created_at FROM contacts c CROSS JOIN unnest(?::uuid[]) AS g(id)
       WHERE c.organization_id = ? AND c.id = ?
       ON CONFLICT (organization_id, contact_id, group_id) DO NOTHING
       RETURNING group_id`,
      [[...new Set(groupIds)], orgId, contactId],
    )) as { rows: { group_id: string }[] };
    return rows.map((r) => r.group_id);
  } catch (err) {
    if (isForeignKeyViolation(err)) throw validationFailed([{ field: 'groups', message: 'groups contains unknown group ids' }]);
    throw err;
  }
}

/** The stored zone of a contact: the one given (its own), else its phone number's country's when that has one, else none (the organization's). */
const zoneOf = (given: string | null | undefined, phone: string | null) =>
  given ? { time_zone: given, time_zone_set: true } : { time_zone: phoneTimeZone(phone), time_zone_set: false };

/** Throws the problems `resolveFields` found in the transaction (a change made since `check` read). */
function orThrow<T extends { problems: FieldProblem[] }>(resolved: T): T {
  if (resolved.problems.length) throw validationFailed(resolved.problems);
  return resolved;
}

/** A contact as the API shows it (`GET /contacts/:id`). */
export async function load(db: Knex | Knex.Transaction, orgId: string, id: string) {
  const row = await tenant(db, orgId).scoped('contacts').where('contacts.id', id).first(contactColumns(db, orgId));
  return toContactDto(row as ContactRow);
}

/**
 * An admin's consent change, made through consent's one home for it; the webhook endpoints its events
 * went to join `woken`, to wake after the commit. Answers the channels that changed, as set.
 */
async function setSubscriptions(trx: Knex.Transaction, orgId: string, contactId: string, change: SubscriptionsChange | undefined, woken: Set<string>) {
  const at = new Date();
  const changed: SubscriptionsChange = {};
  for (const channel of CHANNELS) {
    const status = change?.[channel];
    if (status && (await setSubscription(trx, orgId, { contactIds: [contactId] }, channel, status, 'api', at, woken)) > 0) changed[channel] = status;
  }
  return changed;
}

/** The audit entry of an admin's change to a contact's consent, when there is one. */
async function recordConsent(trx: Knex.Transaction, ctx: AuthedContext, contactId: string, changes: SubscriptionsChange) {
  if (!Object.keys(changes).length) return;
  await record(trx, ctx, { action: 'contact.subscriptions_changed', resourceType: 'contact', resourceId: contactId, details: { changes } });
}

const uniqueTags = (tags: string[] | undefined) => (tags ? [...new Set(tags)] : undefined);

/**
 * The contact's attributes once `change` is merged in, judged on the stored ones as the update read
 * them under its row lock (no other update comes between this judgement and the write); over the
 * limits, a 400 that rolls the whole update back.
 */
function mergedAttributes(stored: Attributes, change: AttributesChange): Attributes {
  const problems = mergeProblems(stored, change);
  if (problems.length) throw validationFailed(problems);
  return merge(stored, change);
}

/** The newest-first list, narrowed by group membership, tag, a text search, attribute values and a channel left. */
export function listQuery(t: Tenant, filter: ContactFilter) {
  return t.scoped('contacts').select(contactColumns(t.db, t.orgId)).modify(matching(t, filter));
}

/**
 * The list filter's conditions, to narrow any query of the organization's contacts (the list, the
 * export, a bulk action): one meaning of "the contacts matching this filter" for all of them.
 */
export const matching = (t: Tenant, filter: ContactFilter) => (q: Knex.QueryBuilder) => {
  if (filter.group) {
    q.whereExists(
      t.db('contact_groups as cg')
        .whereRaw('cg.organization_id = ? AND cg.contact_id = contacts.id', [t.orgId])
        .andWhere('cg.group_id', filter.group),
    );
  }
  if (filter.tag) q.whereRaw('contacts.tags @> ARRAY[?]::text[]', [filter.tag]);
  if (filter.search) {
    const pattern = `%${filter.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q.whereRaw(`lower(contacts.name || ' ' || coalesce(contacts.email, '') || ' ' || coalesce(contacts.phone, '')) LIKE ?`, [pattern]);
  }
  for (const oneOf of containments(filter.attributes ?? {})) {
    q.where((w) => oneOf.forEach((json) => w.orWhereRaw('contacts.attributes @> ?::jsonb', [json])));
  }
  if (filter.unsubscribed) q.whereRaw(leftChannel(filter.unsubscribed));
  return q;
};

export const list = operation({
  access: READ,
  input: filterInput,
  async run(ctx, filter, page: PageRequest) {
    return paginateAs(listQuery(tenant(ctx.db, ctx.caller.orgId), filter), 'contacts', page, toContactDto);
  },
});

/**
 * `GET /contacts`: the page `list` answers, written as JSON by Postgres in one go (`contactJsonSql`):
 * a page of 1,000 contacts is sent as it comes, never parsed into rows, mapped and written again.
 */
export const listJson = operation({
  access: READ,
  input: filterInput,
  async run(ctx, filter, page: PageRequest) {
    return paginateJson(listQuery(tenant(ctx.db, ctx.caller.orgId), filter), 'contacts', page, contactJsonSql);
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await tenant(ctx.db, ctx.caller.orgId).owned('contacts', id, ['id']);
    return load(ctx.db, ctx.caller.orgId, id);
  },
});

export const create = operation({
  access: WRITE,
  input: createInput,
  async check(ctx, input, _params, failed) {
    const { problems } = await resolveFields(ctx, input, true, failed);
    const dotless = v.dotlessRefused('email', input.email, ctx.config.blockPrivateHosts);
    return [...dotless, ...problems, ...(await unknownGroups(tenant(ctx.db, ctx.caller.orgId), input.groups))];
  },
  async run(ctx, input) {
    const { phone } = orThrow(await resolveFields(ctx, input, true));
    // A new contact is answered from what was written (its groups in the order they are read back).
    // It is written with the automated campaigns it triggers, in one transaction.
    const groups = [...new Set(input.groups ?? [])].sort();
    let fired = 0;
    const unsubscribed = unsubscribedOf(input.subscriptions, 'api');
    const write = async (db: Knex.Transaction) => {
      const [row] = (await db('contacts')
        .insert({
          organization_id: ctx.caller.orgId,
          name: input.name,
          email: input.email ?? null,
          phone,
          country_code: input.countryCode ?? null,
          company: input.organization ?? null,
          tags: uniqueTags(input.tags) ?? [],
          attributes: JSON.stringify(merge({}, input.attributes ?? {})),
          unsubscribed: JSON.stringify(unsubscribed),
          ...zoneOf(input.timezone, phone),
        })
        .returning('*')) as Omit<ContactRow, 'groups'>[];
      await recordNewContact(db, ctx.caller.orgId, row!.id, unsubscribed);
      // A new contact is subscribed to every channel: one created out of some is an admin's consent change.
      const left = Object.fromEntries(CHANNELS.filter((c) => input.subscriptions?.[c] === 'unsubscribed').map((c) => [c, 'unsubscribed' as const]));
      await recordConsent(db, ctx, row!.id, left);
      const joined = await addGroups(db, ctx.caller.orgId, row!.id, groups);
      fired = await triggers.fire(db, ctx.caller.orgId, [row!.id], joined.map((group_id) => ({ contact_id: row!.id, group_id })));
      return toContactDto({ ...row!, groups });
    };
    const created = await ctx.db.transaction(write);
    if (fired) await triggers.wakeAutomations(ctx.db, ctx.caller.orgId);
    return created;
  },
});

const phoneChange = (input: Addresses) => input.phone !== undefined || input.countryCode !== undefined;

export const update = operation({
  access: WRITE,
  input: updateInput,
  async check(ctx, input, { id }: { id: string }, failed) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    const groups = [...v.dotlessRefused('email', input.email, ctx.config.blockPrivateHosts), ...(await unknownGroups(t, input.groups))];
    // The stored contact is read only when the change touches its addresses or attributes; a missing one is run's 404.
    const touched = phoneChange(input) || input.email === null || input.phone === null;
    const columns = [...(touched ? ['email', 'phone', 'country_code'] : []), ...(input.attributes ? ['attributes'] : [])];
    const current = columns.length && isUuid(id) ? await t.scoped('contacts').where('contacts.id', id).first(columns) : undefined;
    if (!current) return groups;
    const merged: Addresses = { email: current.email, phone: current.phone, countryCode: current.country_code, ...input };
    const addresses = touched ? (await resolveFields(ctx, merged, phoneChange(input), failed)).problems : [];
    const attributes = input.attributes ? mergeProblems(current.attributes, input.attributes as AttributesChange) : [];
    return [...addresses, ...groups, ...attributes];
  },
  async run(ctx, input, { id }: { id: string }) {
    const woken = new Set<string>();
    let fired = 0;
    const updated = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const current = await t.owned<ContactRow>('contacts', id, ['*'], { forUpdate: true });
      const merged: Addresses = {
        email: current.email,
        phone: current.phone,
        countryCode: current.country_code,
        ...input,
      };
      const phoneChanged = phoneChange(input);
      const { phone } = orThrow(await resolveFields(ctx, merged, phoneChanged));
      const attributes = input.attributes && mergedAttributes(current.attributes, input.attributes);
      await t
        .scoped('contacts')
        .where('contacts.id', id)
        .update({
          name: input.name,
          email: input.email,
          phone: phoneChanged ? phone : undefined,
          country_code: input.countryCode,
          company: input.organization,
          tags: uniqueTags(input.tags),
          attributes: attributes && JSON.stringify(attributes),
          // A zone given is the contact's own; one taken from its phone follows the phone.
          ...(input.timezone !== undefined || (phoneChanged && !current.time_zone_set) ? zoneOf(input.timezone, phoneChanged ? phone : current.phone) : {}),
          updated_at: nowMs(ctx.db),
        });
      if (input.groups) {
        const joined = await setGroups(trx, ctx.caller.orgId, id, input.groups);
        fired = await triggers.fire(trx, ctx.caller.orgId, [], joined.map((group_id) => ({ contact_id: id, group_id })));
      }
      await recordConsent(trx, ctx, id, await setSubscriptions(trx, ctx.caller.orgId, id, input.subscriptions, woken));
      return load(trx, ctx.caller.orgId, id);
    });
    await wake(ctx.db, ctx.caller.orgId, [...woken]);
    if (fired) await triggers.wakeAutomations(ctx.db, ctx.caller.orgId);
    return updated;
  },
});

export const remove = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    await t.owned('contacts', id, ['id']);
    await t.scoped('contacts').where('contacts.id', id).delete();
    return { message: 'Contact deleted successfully' };
  },
});
