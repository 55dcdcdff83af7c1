import { statement, type Statement } from '../../db/statements.js';

/**
 * The contact behind each address a message goes to, read for a whole chunk of recipients at once
 * (never a query per recipient), through the organization's address indexes. When several contacts
 * share an address, the oldest speaks for it. Only the fields a message reads are read: one
 * statement per channel and set of fields, made once.
 */

/** `id` too is read only when asked for: only an unsubscribe link names the contact. */
export const CONTACT_FIELDS = ['id', 'name', 'email', 'phone', 'company', 'tags', 'attributes'] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

/**
 * What a message reads of its recipients' contacts: the fields, and of `attributes` (when read)
 * only the keys it names, or all of them (`attributeKeys` null). A contact's attributes are as many
 * as its organization keeps (an import maps every column it is not told to drop): a text that
 * names one of twenty reads that one, not the twenty of each of a chunk's 6,300 contacts.
 */
export interface ContactRead {
  fields: readonly ContactField[];
  attributeKeys: readonly string[] | null;
}

/** The attribute keys `read` takes one by one: none unless it reads `attributes`, and null when it reads them whole. */
const attributeKeysOf = (read: ContactRead) => (read.fields.includes('attributes') ? read.attributeKeys : null);

/** Every field, every attribute. */
export const WHOLE_CONTACT: ContactRead = { fields: CONTACT_FIELDS, attributeKeys: null };

/** A message naming more attribute keys than this reads `attributes` whole (the statements are made per count of keys). */
export const MAX_ATTRIBUTE_KEYS = 8;

export interface RecipientContactRow {
  address: string;
  id?: string;
  name?: string;
  email?: string | null;
  phone?: string | null;
  company?: string | null;
  tags?: string[];
  attributes?: Record<string, string | number | boolean>;
}

/**
 * The contacts of a chunk as one row of columns, each a JSON array in the same order (`json_agg`
 * over the same rows): node-postgres builds an object and parses each value of every row it is
 * sent, which for a chunk's 6,300 contacts cost more of Herald's CPU than everything else a
 * personalised batch does; one JSON text per column is parsed natively. Null when no address has
 * a contact. Attributes read key by key come as one column per key (`attribute_0`, ...: each
 * contact's value of it, null when it has none).
 */
export type RecipientContactColumns = { address: string | null } & Partial<Record<ContactField, string | null>> & Record<`attribute_${number}`, string | null>;

/** The contacts' statements made so far, by name (a name says its channel, where, fields and count of keys). */
const made = new Map<string, Statement<never, RecipientContactColumns>>();

/**
 * The statement reading the contacts `where` says (SQL over the channel's `address` expression), with
 * what `read` asks for, made once per channel, kind of where, fields and count of attribute keys.
 * `keys`: the attribute keys read one by one, bound as a text[] (the statement is made per count,
 * never per key: keys are the organization's own words).
 */
function contactsStatement<P extends object>(kind: string, byEmail: boolean, read: ContactRead, where: (address: string) => string): Statement<P & { orgId: string; keys: readonly string[] }, RecipientContactColumns> {
  const wanted = CONTACT_FIELDS.filter((f) => read.fields.includes(f));
  const keys = attributeKeysOf(read);
  const whole = wanted.filter((f) => f !== 'attributes' || !keys);
  const name = `herald_recipient_contacts_${kind}_${byEmail ? 'email' : 'phone'}${whole.length === CONTACT_FIELDS.length ? '' : `_${whole.join('_') || 'address'}`}${keys ? `_keys${keys.length}` : ''}`;
  let st = made.get(name);
  if (!st) {
    const address = byEmail ? 'lower(c.email)' : 'c.phone';
    const attributes = (keys ?? []).map((_, i) => `attribute_${i}`);
    const columns = [...whole.map((f) => `, c.${f}`), ...attributes.map((a, i) => `, c.attributes -> (:keys::text[])[${i + 1}] AS ${a}`)].join('');
    const aggregates = ['address', ...whole, ...attributes].map((column) => `json_agg(r.${column})::text AS ${column}`).join(', ');
    st = statement(
      name,
      `SELECT ${aggregates} FROM (
         SELECT DISTINCT ON (${address}) ${address} AS address${columns}
         FROM contacts c
         WHERE c.organization_id = :orgId AND ${where(address)}
         ORDER BY ${address}, c.created_at, c.id) r`,
    );
    made.set(name, st);
  }
  return st as Statement<P & { orgId: string; keys: readonly string[] }, RecipientContactColumns>;
}

/**
 * The contacts with the given addresses. `addresses`: a text[] literal (`textArrayLiteral`): a
 * chunk's 6,300 addresses, which node-postgres would escape one by one. The statement reads them
 * through a scalar subquery, a value the planner does not look into: given the array itself, each of
 * a connection's first plans (custom plans, made with the values) estimated the match of each of the
 * 6,300 addresses, 4-8 ms of planning a call, for the plan the subquery gets at once (the address
 * index, searched for the whole array).
 */
export const contactsByAddress = (byEmail: boolean, read: ContactRead) =>
  contactsStatement<{ addresses: string }>('by', byEmail, read, (address) => `${address} = ANY((SELECT :addresses::text[])::text[])`);

/**
 * Every contact whose address sorts from `low` to `high` (as the address index sorts them): one
 * range of the index, for a run of addresses read in its order (a chunk of a campaign to all
 * contacts), with no array to send, parse and search address by address.
 */
export const contactsInRange = (byEmail: boolean, read: ContactRead) =>
  contactsStatement<{ low: string; high: string }>('in_range', byEmail, read, (address) => `${address} BETWEEN :low AND :high`);

/** The contacts of a `contactsByAddress` or `contactsInRange` row, by address: each column's array read at the same index. */
export function contactsOfColumns(row: RecipientContactColumns | undefined, read: ContactRead): Map<string, Omit<RecipientContactRow, 'address'>> {
  const contacts = new Map<string, Omit<RecipientContactRow, 'address'>>();
  if (!row?.address) return contacts;
  const addresses = JSON.parse(row.address) as string[];
  const columns = CONTACT_FIELDS.filter((f) => row[f] != null).map((f) => [f, JSON.parse(row[f]!) as unknown[]] as const);
  const keys = attributeKeysOf(read);
  const attributes = (keys ?? []).map((key, i) => [key, JSON.parse(row[`attribute_${i}`] ?? '[]') as unknown[]] as const);
  for (let i = 0; i < addresses.length; i++) {
    const contact: Record<string, unknown> = {};
    for (const [field, values] of columns) contact[field] = values[i];
    if (keys) {
      const own: Record<string, unknown> = {};
      for (const [key, values] of attributes) if (values[i] !== null && values[i] !== undefined) own[key] = values[i];
      contact.attributes = own;
    }
    contacts.set(addresses[i]!, contact as Omit<RecipientContactRow, 'address'>);
  }
  return contacts;
}
