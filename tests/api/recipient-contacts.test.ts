// The contacts behind a chunk's addresses (`contactsFor`), read in one statement as one row of JSON
// columns: each address gets its own contact's fields, the oldest contact speaks for an address two
// share, an address no contact has gets none, and another organization's contacts are never read.
import pg from 'pg';
import { contactsFor, contactsOfEveryone, Personaliser } from '../../src/delivery/personalise.js';
import { contactsByAddress, contactsInRange } from '../../src/delivery/sql/recipients.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrgs, type Client, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization } from '../helpers/statements.js';

let herald: Herald, api: Client, org: Org, other: Org;
beforeAll(async () => ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2)));
afterAll(() => herald?.stop());

const contact = async (o: Org, body: Record<string, unknown>) => {
  const res = await api.post('/contacts', body, { token: o.token });
  expect(res.status).toBe(201);
  return res.body as { _id: string };
};

test("each address gets its contact's fields; the oldest of two speaks for their address; none for an unknown one", async () => {
  const ada = await contact(org, {
    name: 'Ada Lovelace', phone: '+254711000001', email: 'Ada@Example.com', organization: 'Engines',
    tags: ['vip', 'early'], attributes: { plan: 'gold', seats: 3, trial: false },
  });
  const first = await contact(org, { name: 'First Holder', phone: '+254711000002' });
  await contact(org, { name: 'Second Holder', phone: '+254711000002', attributes: { plan: 'silver' } });
  // The same number in another organization: never read for this one.
  await contact(other, { name: 'Elsewhere', phone: '+254711000003' });

  const bySms = await contactsFor(herald.db, org.orgId, 'sms', ['+254711000001', '+254711000002', '+254711000003', '+254799999999']);
  expect(bySms.get('+254711000001')).toEqual({
    id: ada._id, name: 'Ada Lovelace', email: 'ada@example.com', phone: '+254711000001', company: 'Engines',
    tags: ['vip', 'early'], attributes: { plan: 'gold', seats: 3, trial: false },
  });
  expect(bySms.get('+254711000002')).toMatchObject({ id: first._id, name: 'First Holder', attributes: {} });
  expect(bySms.has('+254711000003')).toBe(false);
  expect(bySms.has('+254799999999')).toBe(false);
  expect(bySms.size).toBe(2);

  // Only the fields asked for (the id too), found by the address as sends store it (lower-cased).
  const byEmail = await contactsFor(herald.db, org.orgId, 'email', ['ada@example.com'], { fields: ['name'], attributeKeys: null });
  expect(byEmail.get('ada@example.com')).toEqual({ name: 'Ada Lovelace' });
  expect((await contactsFor(herald.db, org.orgId, 'email', ['ada@example.com'], { fields: ['id', 'tags'], attributeKeys: null })).get('ada@example.com')).toEqual({
    id: ada._id,
    tags: ['vip', 'early'],
  });
  // Attributes read key by key: each contact's own values of those keys, with their JSON types; none it lacks.
  const byKey = await contactsFor(herald.db, org.orgId, 'sms', ['+254711000001', '+254711000002'], { fields: ['name', 'attributes'], attributeKeys: ['seats', 'plan', 'missing', 'trial'] });
  expect(byKey.get('+254711000001')).toEqual({ name: 'Ada Lovelace', attributes: { plan: 'gold', seats: 3, trial: false } });
  expect(byKey.get('+254711000002')).toEqual({ name: 'First Holder', attributes: {} });
  // No address has a contact: an empty map, not an error.
  expect((await contactsFor(herald.db, other.orgId, 'email', ['nobody@example.com'])).size).toBe(0);
});

test('the lookup stays with its organization', async () => {
  const client = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await client.connect();
  try {
    const statements = [
      contactsByAddress(false, { fields: ['name', 'attributes'], attributeKeys: null }),
      contactsByAddress(true, { fields: ['email', 'tags'], attributeKeys: null }),
      contactsByAddress(false, { fields: ['attributes'], attributeKeys: ['plan', 'seats'] }),
      contactsInRange(false, { fields: ['name', 'attributes'], attributeKeys: null }),
      contactsInRange(true, { fields: ['id'], attributeKeys: ['plan'] }),
    ].map((st) => ({
      sql: st.text,
      bindings: st.order.map((k) => ({ orgId: org.orgId, addresses: '{+254711000001,ada@example.com}', low: '+254711000001', high: '+254711000009', keys: '{plan,seats}' })[k]),
    }));
    await expectEachWithOrganization(client, statements, org.orgId);
  } finally {
    await client.end();
  }
});

test('a message reads the fields its text reads, and the id only when it carries an unsubscribe link', () => {
  const scope = { orgId: org.orgId, organizationName: 'Org', bulk: true };
  const read = (channel: 'sms' | 'email', body: string, bulk = true) => new Personaliser(herald.deps.config, channel, { body }, { ...scope, bulk }).contactRead;
  const fields = (channel: 'sms' | 'email', body: string, bulk = true) => read(channel, body, bulk).fields;
  expect(fields('sms', 'Hi {{ contact.firstName }}, {{ contact.attributes.plan }}')).toEqual(['name', 'attributes']);
  expect(fields('sms', 'Hi {{ contact.name }}. Stop: {{ unsubscribe_url }}')).toEqual(['name', 'id']);
  // A bulk email carries its List-Unsubscribe link whatever its text.
  expect(fields('email', 'Hi {{ contact.organization }}')).toEqual(['company', 'id']);
  expect(fields('email', 'Hi {{ contact.organization }}', false)).toEqual(['company']);
  expect(fields('sms', 'Hi {{ contact }}')).toContain('id');
  // A field a variable names could be any of them.
  expect(fields('sms', '{% assign name = "email" %}{{ contact[name] }}')).toEqual(['id', 'name', 'email', 'phone', 'company', 'tags', 'attributes']);
});

test('attributes are read key by key when every read names its key; otherwise whole', () => {
  const keys = (body: string) => new Personaliser(herald.deps.config, 'sms', { body }, { orgId: org.orgId, organizationName: 'Org', bulk: true }).contactRead.attributeKeys;
  expect(keys('{{ contact.attributes.plan }} {{ contact.attributes["seat count"] | plus: 1 }} {% if contact.attributes.plan %}!{% endif %}')).toEqual(['plan', 'seat count']);
  expect(keys('{{ contact.firstName }}')).toBeNull();
  // A key a variable holds, the attributes walked or handed on, their size, or the whole contact.
  expect(keys('{% assign k = "plan" %}{{ contact.attributes[k] }}')).toBeNull();
  expect(keys('{% for a in contact.attributes %}{{ a[0] }}{% endfor %}')).toBeNull();
  expect(keys('{% assign a = contact.attributes %}{{ a.plan }}')).toBeNull();
  expect(keys('{{ contact.attributes.size }}')).toBeNull();
  expect(keys('{{ contact.attributes.plan }} {{ contact }}')).toBeNull();
  expect(keys(Array.from({ length: 9 }, (_, i) => `{{ contact.attributes.k${i} }}`).join(''))).toBeNull();
});

test('a text rendered from attributes read key by key is the text rendered from the whole contact', async () => {
  await contact(org, { name: 'Keyed Reader', phone: '+254711000009', attributes: { plan: 'gold', seats: 12, trial: true, other: 'x' } });
  for (const body of [
    'Hi {{ contact.firstName }}: {{ contact.attributes.plan }} x{{ contact.attributes.seats }} {{ contact.attributes.trial }} [{{ contact.attributes.none }}]',
    '{{ contact.attributes.plan | upcase }} {% if contact.attributes.trial %}trial{% endif %} {{ contact.attributes.seats | plus: 1 }}',
  ]) {
    const personaliser = new Personaliser(herald.deps.config, 'sms', { body }, { orgId: org.orgId, organizationName: 'Org', bulk: true });
    expect(personaliser.contactRead.attributeKeys).not.toBeNull();
    const keyed = (await contactsFor(herald.db, org.orgId, 'sms', ['+254711000009'], personaliser.contactRead)).get('+254711000009')!;
    const whole = (await contactsFor(herald.db, org.orgId, 'sms', ['+254711000009'])).get('+254711000009')!;
    expect(keyed.attributes).not.toHaveProperty('other');
    expect(personaliser.forRecipient('+254711000009', keyed).body).toBe(personaliser.forRecipient('+254711000009', whole).body);
  }
});

test("a chunk of a campaign to all contacts, read as a range of the address index, finds what a lookup by address finds", async () => {
  const range = ['+254712000010', '+254712000020', '+254712000030', '+254712000040', '+254712000050'];
  await contact(org, { name: 'Range One', phone: range[0], attributes: { plan: 'gold' } });
  await contact(org, { name: 'Range Older', phone: range[1] });
  await contact(org, { name: 'Range Younger', phone: range[1], attributes: { plan: 'silver' } });
  const gone = await contact(org, { name: 'Range Gone', phone: range[2] });
  await contact(org, { name: 'Range Four', phone: range[3], attributes: { plan: 'basic' } });
  // Between the chunk's addresses but not among them (one who left the channel, or came since the launch).
  await contact(org, { name: 'Range Between', phone: '+254712000035' });
  await contact(org, { name: 'Range Five', phone: range[4] });
  // Another organization's contact inside the range, at an address this one has no contact for
  // (its contact is deleted below): never read for this one.
  await contact(other, { name: 'Range Elsewhere', phone: range[2] });
  // A contact deleted after the launch wrote its address into the chunk.
  expect((await api.delete(`/contacts/${gone._id}`, { token: org.token })).status).toBe(200);
  const read = new Personaliser(herald.deps.config, 'sms', { body: 'Hi {{ contact.firstName }} {{ contact.attributes.plan }}' }, { orgId: org.orgId, organizationName: 'Org', bulk: true }).contactRead;

  const expectSameAsLookup = async (addresses: string[]) => {
    const everyone = await contactsOfEveryone(herald.db, org.orgId, 'sms', addresses, read);
    const lookup = await contactsFor(herald.db, org.orgId, 'sms', addresses, read);
    for (const address of addresses) expect([address, everyone.get(address)]).toEqual([address, lookup.get(address)]);
    return everyone;
  };
  const chunk = await expectSameAsLookup(range);
  expect(chunk.get(range[1]!)).toEqual({ name: 'Range Older', attributes: {} });
  expect(chunk.get(range[3]!)).toEqual({ name: 'Range Four', attributes: { plan: 'basic' } });
  expect(chunk.has(range[2]!)).toBe(false);
  // Out of order (nothing Herald writes, but nothing is lost: the range answers nobody and each is
  // looked up), or with an address no contact has at the end (the range reaches to it).
  await expectSameAsLookup([...range].reverse());
  await expectSameAsLookup([...range, '+254799000000']);
  expect(await contactsOfEveryone(herald.db, org.orgId, 'sms', [], read)).toEqual(new Map());
  // By email, where the address is the lower-cased email.
  await contact(org, { name: 'Mail One', email: 'Range.A@example.com' });
  await contact(org, { name: 'Mail Two', email: 'range.b@example.com' });
  const byEmail = await contactsOfEveryone(herald.db, org.orgId, 'email', ['range.a@example.com', 'range.b@example.com'], read);
  expect([byEmail.get('range.a@example.com'), byEmail.get('range.b@example.com')]).toEqual([{ name: 'Mail One', attributes: {} }, { name: 'Mail Two', attributes: {} }]);
});
