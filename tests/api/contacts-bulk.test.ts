import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { makeContact, makeGroup } from '../helpers/contacts-groups.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { addUser, createApiKey, heraldWithOrgs, signupOrg, type Client, type Credential, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization, tenantStatementsOf, type Statement } from '../helpers/statements.js';
import { sleep } from '../helpers/time.js';

/**
 * platform.md, "Contacts in bulk": `POST /contacts/bulk` applies one action to contacts named by id
 * or matched by a list filter, in one transaction, and answers how many contacts it changed;
 * GraphQL's `bulkContacts` is the same operation.
 */

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { signup: { country: 'KE' } }));
  admin = { token: org.token };
});
afterAll(() => herald?.stop());


/** A fresh organization, so that `filter: {}` and counts are this test's own. */
async function freshOrg() {
  const o = await signupOrg(api, { country: 'KE' });
  return { org: o, cred: { token: o.token } as Credential };
}

async function contacts(cred: Credential, n: number, overrides: (i: number) => Record<string, unknown> = () => ({})) {
  const made = [];
  for (let i = 0; i < n; i++) made.push(await makeContact(api, cred, { phone: `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999)).slice(-8)}`, ...overrides(i) }));
  return made;
}

const bulk = async (body: Record<string, unknown>, cred: Credential = admin) => api.post('/contacts/bulk', body, cred);
const get = async (id: string, cred: Credential = admin) => (await api.get(`/contacts/${id}`, cred)).body;

async function expectCount(body: Record<string, unknown>, count: number, cred: Credential = admin) {
  const res = await bulk(body, cred);
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { action: body.action, count } });
}

const eventsOf = async (orgId: string) =>
  (await herald.db('webhook_events').where({ organization_id: orgId, type: 'contact.unsubscribed' }).orderBy('data')).map((e) => e.data);

describe('every action, on ids', () => {
  test('addToGroup and removeFromGroup count the memberships that changed; updatedAt moves on those only', async () => {
    const group = await makeGroup(api, admin);
    const [a, b, c] = await contacts(admin, 3);
    await api.put(`/contacts/${a._id}`, { groups: [group._id] }, admin);
    const before = await get(c._id);
    await sleep(5);
    await expectCount({ action: 'addToGroup', ids: [a._id, b._id], group: group._id }, 1);
    expect((await get(b._id)).groups).toEqual([group._id]);
    expect((await get(b._id)).updatedAt > b.updatedAt).toBe(true);
    expect(await get(c._id)).toEqual(before);
    await expectCount({ action: 'addToGroup', ids: [a._id, b._id], group: group._id }, 0);
    await expectCount({ action: 'removeFromGroup', ids: [a._id, b._id, c._id], group: group._id }, 2);
    expect((await get(a._id)).groups).toEqual([]);
    expect((await api.get(`/groups/${group._id}`, admin)).body.contactCount).toBe(0);
  });

  test('addTag and removeTag count the contacts that gained or lost the tag; repeats of ids count once', async () => {
    const [a, b] = await contacts(admin, 2, (i) => ({ tags: i ? ['vip'] : ['other'] }));
    await expectCount({ action: 'addTag', ids: [a._id, b._id, a._id], tag: 'vip' }, 1);
    expect((await get(a._id)).tags).toEqual(['other', 'vip']);
    expect((await get(b._id)).tags).toEqual(['vip']);
    await expectCount({ action: 'addTag', ids: [a._id, b._id], tag: ' vip ' }, 0);
    await expectCount({ action: 'removeTag', ids: [a._id, b._id], tag: 'vip' }, 2);
    expect((await get(a._id)).tags).toEqual(['other']);
    await expectCount({ action: 'removeTag', ids: [a._id, b._id], tag: 'vip' }, 0);
  });

  test('unsubscribe (source api, every channel by default) and resubscribe count contacts, with one contact.unsubscribed event per channel left', async () => {
    const { org: o, cred } = await freshOrg();
    const [a, b] = await contacts(cred, 2, (i) => ({ email: `leaver${i}@example.com` }));
    await api.put(`/contacts/${b._id}`, { subscriptions: { sms: 'unsubscribed' } }, cred);
    const smsLeft = (await get(b._id, cred)).subscriptions.sms;
    const endpoint = await api.post('/webhooks', { url: 'https://hooks.example.com/herald', eventTypes: ['contact.unsubscribed'] }, cred);
    expect(endpoint.status).toBe(201);

    await expectCount({ action: 'unsubscribe', ids: [a._id, b._id] }, 2, cred);
    const left = await get(b._id, cred);
    expect(left.subscriptions.sms).toEqual(smsLeft);
    expect(left.subscriptions.email).toMatchObject({ status: 'unsubscribed', source: 'api' });
    expect(left.subscriptions.whatsapp).toMatchObject({ status: 'unsubscribed', source: 'api' });
    const events = await eventsOf(o.orgId);
    const ofContact = (id: string) => events.filter((e) => e.contactId === id).map((e) => e.channel).sort();
    expect(ofContact(a._id)).toEqual(['email', 'sms', 'whatsapp']);
    expect(ofContact(b._id)).toEqual(['email', 'whatsapp']);
    expect(events.find((e) => e.contactId === a._id && e.channel === 'email')).toEqual({ contactId: a._id, channel: 'email', address: 'leaver0@example.com', source: 'api' });
    expect(events.find((e) => e.contactId === a._id && e.channel === 'sms')).toEqual({ contactId: a._id, channel: 'sms', address: a.phone, source: 'api' });
    const deliveries = await herald.db('webhook_deliveries').where({ organization_id: o.orgId, endpoint_id: endpoint.body._id }).count({ n: '*' }).first();
    expect(Number(deliveries!.n)).toBe(5);

    await expectCount({ action: 'unsubscribe', ids: [a._id, b._id] }, 0, cred);
    expect(await eventsOf(o.orgId)).toHaveLength(5);
    await expectCount({ action: 'resubscribe', ids: [a._id], channels: ['sms'] }, 1, cred);
    expect((await get(a._id, cred)).subscriptions.sms.status).toBe('subscribed');
    expect((await get(a._id, cred)).subscriptions.email.status).toBe('unsubscribed');
    await expectCount({ action: 'unsubscribe', ids: [a._id, b._id], channels: ['sms', 'email'] }, 1, cred);
    await expectCount({ action: 'resubscribe', ids: [a._id, b._id] }, 2, cred);
    expect(Object.values((await get(b._id, cred)).subscriptions).map((s: any) => s.status)).toEqual(['subscribed', 'subscribed', 'subscribed']);
  });

  test('delete counts the contacts deleted, with their memberships', async () => {
    const group = await makeGroup(api, admin);
    const [a, b, c] = await contacts(admin, 3, () => ({ groups: [group._id] }));
    await expectCount({ action: 'delete', ids: [a._id, b._id, randomUUID()] }, 2);
    expect((await api.get(`/contacts/${a._id}`, admin)).status).toBe(404);
    expect((await get(c._id)).groups).toEqual([group._id]);
    expect(await herald.db('contact_groups').whereIn('contact_id', [a._id, b._id])).toEqual([]);
    await expectCount({ action: 'delete', ids: [a._id] }, 0);
  });
});

describe('on a filter', () => {
  test('each action applies to the contacts the list filter matches; filter {} is every contact', async () => {
    const { org: o, cred } = await freshOrg();
    const group = await makeGroup(api, cred);
    const gold = await contacts(cred, 3, () => ({ tags: ['gold'], attributes: { plan: 'pro' } }));
    const plain = await contacts(cred, 2, () => ({ attributes: { plan: 'free' } }));

    await expectCount({ action: 'addToGroup', filter: { tag: 'gold' }, group: group._id }, 3, cred);
    await expectCount({ action: 'addTag', filter: { group: group._id }, tag: 'member' }, 3, cred);
    await expectCount({ action: 'removeFromGroup', filter: { attributes: { plan: 'pro' } }, group: group._id }, 3, cred);
    await expectCount({ action: 'unsubscribe', filter: { search: plain[0].name }, channels: ['email'] }, 1, cred);
    await expectCount({ action: 'resubscribe', filter: { unsubscribed: 'email' } }, 1, cred);
    await expectCount({ action: 'removeTag', filter: {}, tag: 'member' }, 3, cred);
    await expectCount({ action: 'addTag', filter: {}, tag: 'everyone' }, 5, cred);
    for (const c of [...gold, ...plain]) expect((await get(c._id, cred)).tags).toContain('everyone');
    await expectCount({ action: 'delete', filter: { tag: 'gold' } }, 3, cred);
    await expectCount({ action: 'delete', filter: {} }, 2, cred);
    expect((await api.get('/contacts', cred)).body).toEqual([]);
    expect(o.orgId).toBeDefined();
  });

  test('GraphQL-shaped filters work on REST too (attributes as an object), and the REST query form attributes.<key> in a body is the same', async () => {
    const { cred } = await freshOrg();
    await contacts(cred, 2, (i) => ({ attributes: { seats: i ? 30 : 5 } }));
    await expectCount({ action: 'addTag', filter: { attributes: { seats: 30 } }, tag: 'big' }, 1, cred);
    await expectCount({ action: 'addTag', filter: { 'attributes.seats': '5' }, tag: 'small' }, 1, cred);
  });
});

describe('refusals', () => {
  test('exactly one of ids and filter, with the fields each action needs and none it has no use for, all named in one 400', async () => {
    const group = await makeGroup(api, admin);
    const [c] = await contacts(admin, 1);
    expectValidation(await bulk({ action: 'delete' }), ['ids']);
    expectValidation(await bulk({ action: 'delete', ids: [c._id], filter: {} }), ['filter']);
    expectValidation(await bulk({ action: 'addToGroup', ids: [c._id] }), ['group']);
    expectValidation(await bulk({ action: 'addTag', filter: {} }), ['tag']);
    expectValidation(await bulk({ action: 'delete', ids: [c._id], group: group._id, tag: 'x', channels: ['sms'] }), ['group', 'tag', 'channels']);
    expectValidation(await bulk({ action: 'explode', ids: [c._id] }), ['action']);
    expectValidation(await bulk({ ids: [c._id] }), ['action']);
    expectValidation(await bulk({ action: 'delete', ids: ['not-a-uuid'] }), ['ids.0']);
    expectValidation(await bulk({ action: 'delete', ids: Array.from({ length: 10_001 }, () => randomUUID()) }), ['ids']);
    expectValidation(await bulk({ action: 'delete', filter: { colour: 'red' } }), ['filter.colour']);
    expectValidation(await bulk({ action: 'delete', filter: { attributes: { 'bad key': 1 } } }), ['filter.attributes']);
    expectValidation(await bulk({ action: 'unsubscribe', ids: [c._id], channels: ['fax'] }), ['channels.0']);
    expectValidation(await bulk({ action: 'unsubscribe', ids: [c._id], channels: [] }), ['channels']);
    expectValidation(await bulk({ action: 'addTag', ids: [c._id], tag: 'x'.repeat(51) }), ['tag']);
    expectValidation(await bulk({ action: 'delete', ids: [c._id], everything: true }), ['everything']);
    expectValidation(await bulk({ action: 'delete', ids: 'all' }), ['ids']);
    // Several problems at once, each named.
    expectValidation(await bulk({ action: 'addToGroup', ids: ['x'], filter: {} }), ['ids.0', 'filter', 'group']);
    expect(await get(c._id)).toMatchObject({ _id: c._id });
  });

  test('an unknown group, or another organization\'s, is a 400 naming group', async () => {
    const [c] = await contacts(admin, 1);
    const theirs = await makeGroup(api, { token: other.token });
    for (const group of [randomUUID(), theirs._id]) {
      const res = await bulk({ action: 'addToGroup', ids: [c._id], group });
      expectValidation(res, ['group']);
      expect(res.body.message).toBe(`group is an unknown group id: ${group}`);
    }
    expectValidation(await bulk({ action: 'removeFromGroup', filter: {}, group: theirs._id }), ['group']);
  });

  test('a tag some contact has no room for (50 tags) is a 400, and no contact gains it', async () => {
    const full = Array.from({ length: 50 }, (_, i) => `t${i}`);
    const [a, b] = await contacts(admin, 2, (i) => ({ tags: i ? full : [] }));
    const res = await bulk({ action: 'addTag', ids: [a._id, b._id], tag: 'one-more' });
    expectValidation(res, ['tag']);
    expect(res.body.message).toBe('tag can not be added: 1 of the contacts already have 50 tags');
    expect((await get(a._id)).tags).toEqual([]);
    // A tag the full contact has already is no change for it.
    await expectCount({ action: 'addTag', ids: [a._id, b._id], tag: 't3' }, 1);
  });

  test('admins only (an admin API key too); no credential is 401', async () => {
    const [c] = await contacts(admin, 1);
    const user = await addUser(api, org, 'user');
    const userKey = await createApiKey(api, org, 'user');
    const adminKey = await createApiKey(api, org, 'admin');
    const body = { action: 'addTag', ids: [c._id], tag: 'keyed' };
    expectError(await bulk(body, { token: user.token }), 403, 'Insufficient permissions');
    expectError(await bulk(body, { apiKey: userKey.key }), 403, 'Insufficient permissions');
    expectError(await api.post('/contacts/bulk', body), 401);
    await expectCount(body, 1, { apiKey: adminKey.key });
    expect((await get(c._id)).tags).toEqual(['keyed']);
  });
});

describe('tenant isolation', () => {
  test("ids of another organization's contacts match nothing, and a filter reaches only the caller's contacts", async () => {
    const { cred: mine } = await freshOrg();
    const { cred: theirs } = await freshOrg();
    const [own] = await contacts(mine, 1, () => ({ tags: ['shared'] }));
    const [foreign] = await contacts(theirs, 1, () => ({ tags: ['shared'] }));
    const before = await get(foreign._id, theirs);
    for (const action of ['addTag', 'removeTag', 'unsubscribe', 'delete']) {
      await expectCount({ action, ids: [foreign._id], ...(action.endsWith('Tag') && { tag: 'shared' }) }, 0, mine);
    }
    expect(await get(foreign._id, theirs)).toEqual(before);
    await expectCount({ action: 'delete', filter: { tag: 'shared' } }, 1, mine);
    expect((await api.get(`/contacts/${own._id}`, mine)).status).toBe(404);
    expect(await get(foreign._id, theirs)).toEqual(before);
  });
});

describe('one transaction of set-based statements', () => {
  /** Makes updating the contact named `name` fail inside the database, for the time of `fn`. */
  async function failingUpdatesOf<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const fn_ = `herald_test_fail_${randomUUID().replace(/-/g, '')}`;
    await herald.db.raw(`CREATE FUNCTION ${fn_}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'sabotaged'; END $$`);
    // On Citus, a trigger on a distributed table (taken to its shards) is allowed only when asked for.
    await herald.db.transaction(async (trx) => {
      await trx.raw('SET LOCAL citus.enable_unsafe_triggers = on');
      await trx.raw(`CREATE TRIGGER ${fn_} BEFORE UPDATE ON contacts FOR EACH ROW WHEN (NEW.name = '${name}') EXECUTE FUNCTION ${fn_}()`);
    });
    try {
      return await fn();
    } finally {
      await herald.db.transaction(async (trx) => {
        await trx.raw('SET LOCAL citus.enable_unsafe_triggers = on');
        await trx.raw(`DROP TRIGGER ${fn_} ON contacts`);
      });
      await herald.db.raw(`DROP FUNCTION ${fn_}()`);
    }
  }

  test('a failure on one contact changes none of them: memberships, tags, consent and events all roll back', async () => {
    const { org: o, cred } = await freshOrg();
    await api.post('/webhooks', { url: 'https://hooks.example.com/herald' }, cred);
    const group = await makeGroup(api, cred);
    const saboteur = `Saboteur ${randomUUID()}`;
    const made = await contacts(cred, 4, (i) => ({ groups: [group._id], ...(i === 3 && { name: saboteur }) }));
    const ids = made.map((c) => c._id);
    const before = await Promise.all(ids.map((id) => get(id, cred)));
    await failingUpdatesOf(saboteur, async () => {
      for (const body of [
        { action: 'removeFromGroup', ids, group: group._id },
        { action: 'addTag', filter: {}, tag: 'never' },
        { action: 'unsubscribe', ids },
      ]) {
        expect((await bulk(body, cred)).status).toBe(500);
      }
    });
    expect(await Promise.all(ids.map((id) => get(id, cred)))).toEqual(before);
    expect(await eventsOf(o.orgId)).toEqual([]);
  });

  test('the statements are as many for 300 contacts as for 3, and each stays with the organization', async () => {
    const { org: o, cred } = await freshOrg();
    const own = (statements: Statement[]) => statements.filter((s) => s.bindings.includes(o.orgId));
    const group = await makeGroup(api, cred);
    await herald.db.raw(`INSERT INTO contacts (organization_id, name, phone) SELECT ?, 'Many ' || i, '+25470' || lpad(i::text, 7, '0') FROM generate_series(1, 300) AS i`, [o.orgId]);
    const all = (await api.get('/contacts?limit=1000', cred)).body.map((c: any) => c._id) as string[];
    const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
    await explain.connect();
    try {
      for (const body of [
        { action: 'addToGroup', group: group._id },
        { action: 'removeFromGroup', group: group._id },
        { action: 'addTag', tag: 'x' },
        { action: 'removeTag', tag: 'x' },
        { action: 'unsubscribe' },
        { action: 'resubscribe', channels: ['sms'] },
      ]) {
        const few = await tenantStatementsOf(herald.db, () => bulk({ ...body, ids: all.slice(0, 3) }, cred));
        const many = await tenantStatementsOf(herald.db, () => bulk({ ...body, filter: {} }, cred));
        expect(few.result.status).toBe(200);
        expect(many.result.body.count).toBeGreaterThan(3);
        // Counted for this organization only: the capture also sees other organizations' queued work meanwhile.
        expect({ action: body.action, statements: own(many.statements).length }).toEqual({ action: body.action, statements: own(few.statements).length });
        await expectEachWithOrganization(explain, [...few.statements, ...many.statements], o.orgId);
      }
      const deleted = await tenantStatementsOf(herald.db, () => bulk({ action: 'delete', ids: all }, cred));
      expect(deleted.result.body).toEqual({ action: 'delete', count: 300 });
      expect(own(deleted.statements)).toHaveLength(1);
      await expectEachWithOrganization(explain, deleted.statements, o.orgId);
    } finally {
      await explain.end();
    }
  });

  test('10,000 ids in one request', async () => {
    const { org: o, cred } = await freshOrg();
    await herald.db.raw(`INSERT INTO contacts (organization_id, name, email) SELECT ?, 'Ten ' || i, 'ten' || i || '@example.com' FROM generate_series(1, 10000) AS i`, [o.orgId]);
    const ids = (await herald.db('contacts').where({ organization_id: o.orgId }).select('id')).map((r) => r.id);
    await expectCount({ action: 'addTag', ids, tag: 'ten-thousand' }, 10_000, cred);
    expect((await api.get('/contacts?tag=ten-thousand&limit=1', cred)).headers.get('x-total-count')).toBe('10000');
  });
});

describe('GraphQL bulkContacts', () => {
  const BULK = `mutation ($input: ContactBulkInput!) { bulkContacts(input: $input) { action count } }`;

  test('the same operation: the same counts and refusals', async () => {
    const { cred } = await freshOrg();
    const group = await makeGroup(api, cred);
    const [a, b] = await contacts(cred, 2);
    const run = (input: Record<string, unknown>, c: Credential = cred) => api.gql(BULK, { input }, c);
    expect((await run({ action: 'addToGroup', ids: [a._id, b._id], group: group._id })).body).toEqual({ data: { bulkContacts: { action: 'addToGroup', count: 2 } } });
    expect((await run({ action: 'unsubscribe', filter: { group: group._id }, channels: ['whatsapp'] })).body.data.bulkContacts.count).toBe(2);
    expect((await get(a._id, cred)).subscriptions.whatsapp.source).toBe('api');
    expect((await run({ action: 'addTag', filter: {}, tag: 'gql' })).body.data.bulkContacts.count).toBe(2);
    expect((await run({ action: 'delete', ids: [a._id] })).body.data.bulkContacts).toEqual({ action: 'delete', count: 1 });

    const missing = await run({ action: 'delete' });
    expect(missing.body.errors![0].extensions).toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    expect(missing.body.errors![0].message).toBe('ids or filter is required (filter {} for every contact)');
    const unknown = await run({ action: 'addToGroup', ids: [b._id], group: randomUUID() });
    expect(unknown.body.errors![0].extensions).toMatchObject({ statusCode: 400 });
    const user = await addUser(api, org, 'user');
    const denied = await run({ action: 'delete', ids: [b._id] }, { token: user.token });
    expect(denied.body.errors![0].extensions).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });
  });
});
