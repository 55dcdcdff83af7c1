import type { Herald } from '../../src/server.js';
import { makeGroup, nextLink } from '../helpers/contacts-groups.js';
import { heraldWithOrg, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';

/**
 * `GET /contacts` is written as JSON by Postgres (`contactJsonSql`), each contact as `toContactDto`
 * writes it for `GET /contacts/:id`: the same fields, values and order for every kind of contact
 * (every field set or none, consent left and given back, attributes of every kind, text that
 * needs escaping), its pages, cursors and counts as before, and its filters (one of them with a
 * `?` operator) as before.
 */

let herald: Herald, api: Client, org: Org, cred: Credential;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  cred = { token: org.token };
});
afterAll(() => herald?.stop());

async function ok(res: Promise<Reply>, status = 200): Promise<Reply> {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

test('each contact of the list is written as its own page writes it, field for field and in order', async () => {
  const vip = await makeGroup(api, cred, { name: 'VIP' });
  const staff = await makeGroup(api, cred, { name: 'Staff' });
  await ok(
    api.post(
      '/contacts',
      {
        name: 'Zoë "Z" O\'Brien \\ ✓ 🚀',
        email: 'Zoe.Obrien@Example.com',
        phone: '0712399001',
        countryCode: '+254',
        organization: 'Acme <b>& Co</b>',
        tags: ['vip', 'line\nbreak'],
        attributes: { plan: 'gold', seats: 3, ratio: 0.25, active: true, note: 'line\nbreak "quoted" ✓', big: 12345678901234 },
        groups: [vip._id, staff._id],
        subscriptions: { sms: 'unsubscribed' },
        timezone: 'Asia/Dubai',
      },
      cred,
    ),
    201,
  );
  await ok(api.post('/contacts', { name: 'Only email', email: 'only@example.com' }, cred), 201);
  const phoneOnly = (await ok(api.post('/contacts', { name: 'Only phone', phone: '+12025550199' }, cred), 201)).body;
  // Consent left and given back.
  await ok(api.put(`/contacts/${phoneOnly._id}`, { subscriptions: { sms: 'unsubscribed', whatsapp: 'unsubscribed' } }, cred));
  await ok(api.put(`/contacts/${phoneOnly._id}`, { subscriptions: { sms: 'subscribed' } }, cred));

  const listed = await ok(api.get('/contacts?limit=1000', cred));
  expect(listed.headers.get('content-type')).toMatch(/^application\/json/);
  expect(listed.headers.get('x-total-count')).toBe('3');
  expect(listed.body).toHaveLength(3);
  for (const contact of listed.body) {
    const own = (await ok(api.get(`/contacts/${contact._id}`, cred))).body;
    expect(JSON.stringify(contact)).toBe(JSON.stringify(own));
  }
  // GraphQL reads the same list through its own door.
  const gql = await api.post('/graphql', { query: '{ contacts(first: 10) { edges { node { _id name createdAt updatedAt subscriptions { sms { status } } } } } }' }, cred);
  expect(gql.body.data.contacts.edges.map((e: any) => e.node._id)).toEqual(listed.body.map((c: any) => c._id));
  expect(gql.body.data.contacts.edges.map((e: any) => e.node.createdAt)).toEqual(listed.body.map((c: any) => c.createdAt));
});

test('pages, cursors, counts and filters are as before', async () => {
  const all = (await ok(api.get('/contacts?limit=1000', cred))).body as any[];
  const first = await ok(api.get('/contacts?limit=2', cred));
  expect(first.body).toEqual(all.slice(0, 2));
  expect(first.headers.get('x-total-count')).toBe(String(all.length));
  const next = nextLink(first)!;
  const second = await ok(api.get(next, cred));
  expect(second.body).toEqual(all.slice(2, 4));
  expect(nextLink(second)).toBeFalsy();
  // A filter with a jsonb `?` in its SQL: those that left SMS.
  const left = (await ok(api.get('/contacts?unsubscribed=sms', cred))).body as any[];
  expect(left.map((c) => c.name)).toEqual(['Zoë "Z" O\'Brien \\ ✓ 🚀']);
  expect((await ok(api.get('/contacts?search=only&limit=1', cred))).headers.get('x-total-count')).toBe('2');
  expect((await ok(api.get('/contacts?attributes.plan=gold', cred))).body).toHaveLength(1);
  expect((await ok(api.get('/contacts?search=nobody', cred))).body).toEqual([]);
  expect((await api.get('/contacts?limit=0', cred)).status).toBe(400);
  expect((await api.get('/contacts?cursor=bad', cred)).status).toBe(400);
});
