import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { CONTACT_KEYS, expectGqlError, FORBIDDEN_BODY, makeContact, makeGroup, sorted } from '../helpers/contacts-groups.js';
import { expectValidation } from '../helpers/expect.js';
import { heraldWithOrgs, signupOrg, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { isCitus, tenantStatementsOf } from '../helpers/statements.js';

/** platform.md, "Personalised messages": contacts' `attributes`, through both doors. */

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential, theirs: Credential;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { signup: { country: 'KE' } }));
  admin = { token: org.token };
  theirs = { token: other.token };
});
afterAll(() => herald?.stop());

// A set: the helper's list may name `attributes` itself.
const KEYS_WITH_ATTRIBUTES = [...new Set([...CONTACT_KEYS, 'attributes'])].sort();
const FIELDS = '_id name email tags attributes groupIds';
const CREATE = `mutation ($input: CreateContactInput!) { createContact(input: $input) { ${FIELDS} } }`;
const UPDATE = `mutation ($id: ID!, $input: UpdateContactInput!) { updateContact(id: $id, input: $input) { ${FIELDS} } }`;
const LIST = `query ($filter: ContactFilter) { contacts(first: 1000, filter: $filter) { totalCount edges { node { _id attributes } } } }`;

/** A value no other test of the run has: filters on it see only the contacts made for them. */
const unique = () => randomBytes(6).toString('hex');
const countContacts = async (orgId: string) => Number((await herald.db('contacts').where({ organization_id: orgId }).count({ n: '*' }).first())!.n);
const stored = async (id: string) => (await herald.db('contacts').where({ id }).first('attributes'))!.attributes;
const keys = (n: number, prefix = 'k') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));
const ids = (res: Reply) => (res.body as { _id: string }[]).map((c) => c._id).sort();

describe('create', () => {
  test('REST: stored as given and answered on create and get; none is {}', async () => {
    const attributes = { plan: 'pro', seats: 3, ratio: 0.25, trial: true, note: 'héllo "quoted"', A_9: '' };
    const res = await api.post('/contacts', { name: 'Attr', email: 'attr@example.com', attributes }, admin);
    expect(res.status).toBe(201);
    expect(sorted(res.body)).toEqual(KEYS_WITH_ATTRIBUTES);
    expect(res.body.attributes).toEqual(attributes);
    expect(await stored(res.body._id)).toEqual(attributes);
    expect((await api.get(`/contacts/${res.body._id}`, admin)).body).toEqual(res.body);

    const plain = await makeContact(api, admin);
    expect(plain.attributes).toEqual({});
    expect((await api.get(`/contacts/${plain._id}`, admin)).body.attributes).toEqual({});
  });

  test('a key given as null on create is left out', async () => {
    const c = await makeContact(api, admin, { attributes: { kept: 1, dropped: null } });
    expect(c.attributes).toEqual({ kept: 1 });
  });

  test('GraphQL: from a variable and from an inline object literal; REST sees the same', async () => {
    const res = await api.gql(CREATE, { input: { name: 'Graph Attr', email: 'graph.attr@example.com', attributes: { plan: 'pro', seats: 3, trial: false } } }, admin);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createContact.attributes).toEqual({ plan: 'pro', seats: 3, trial: false });
    const id = res.body.data.createContact._id;
    expect((await api.get(`/contacts/${id}`, admin)).body.attributes).toEqual({ plan: 'pro', seats: 3, trial: false });

    const inline = await api.gql(`mutation { createContact(input: { name: "Inline", phone: "0712345678", attributes: { tier: "gold", score: 9.5, vip: true, gone: null } }) { attributes } }`, {}, admin);
    expect(inline.body.errors).toBeUndefined();
    expect(inline.body.data.createContact.attributes).toEqual({ tier: 'gold', score: 9.5, vip: true });

    const none = await api.gql(CREATE, { input: { name: 'No Attr', email: 'no.attr@example.com' } }, admin);
    expect(none.body.data.createContact.attributes).toEqual({});
  });
});

describe('update merges', () => {
  test('REST: values set their keys, null removes, others are kept; leaving attributes out keeps them', async () => {
    const c = await makeContact(api, admin, { attributes: { plan: 'pro', seats: 3, trial: true } });
    const res = await api.put(`/contacts/${c._id}`, { attributes: { seats: 4, region: 'eu', trial: null, never: null } }, admin);
    expect(res.status).toBe(200);
    expect(sorted(res.body)).toEqual(KEYS_WITH_ATTRIBUTES);
    expect(res.body.attributes).toEqual({ plan: 'pro', seats: 4, region: 'eu' });
    expect(await stored(c._id)).toEqual({ plan: 'pro', seats: 4, region: 'eu' });

    const renamed = await api.put(`/contacts/${c._id}`, { name: 'Renamed' }, admin);
    expect(renamed.body.attributes).toEqual({ plan: 'pro', seats: 4, region: 'eu' });
    const empty = await api.put(`/contacts/${c._id}`, { attributes: {} }, admin);
    expect(empty.body.attributes).toEqual({ plan: 'pro', seats: 4, region: 'eu' });
    const cleared = await api.put(`/contacts/${c._id}`, { attributes: { plan: null, seats: null, region: null } }, admin);
    expect(cleared.body.attributes).toEqual({});
  });

  test('GraphQL: the same merge', async () => {
    const c = await makeContact(api, admin, { attributes: { plan: 'pro', seats: 3 } });
    const res = await api.gql(UPDATE, { id: c._id, input: { attributes: { plan: null, seats: 5, vip: true } } }, admin);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateContact.attributes).toEqual({ seats: 5, vip: true });
    expect((await api.get(`/contacts/${c._id}`, admin)).body.attributes).toEqual({ seats: 5, vip: true });
    // `attributes: null` is "not given", as for every optional GraphQL input.
    const kept = await api.gql(UPDATE, { id: c._id, input: { name: 'Still', attributes: null } }, admin);
    expect(kept.body.data.updateContact.attributes).toEqual({ seats: 5, vip: true });
  });
});

describe('rules: a 400 naming attributes, nothing stored', () => {
  const bad: [string, unknown][] = [
    ['an empty key', { '': 1 }],
    ['a key of 51 characters', { ['k'.repeat(51)]: 1 }],
    ['a key with a dash', { 'a-b': 1 }],
    ['a key with a space', { 'a b': 1 }],
    ['a key with a letter outside ASCII', { ümlaut: 1 }],
    ['a nested object', { nested: { a: 1 } }],
    ['an array value', { list: [1, 2] }],
    ['51 keys', keys(51)],
    ['8 KiB and one byte of JSON', { k: 'x'.repeat(8185) }],
    ['over 8 KiB in bytes, under it in characters', { k: 'é'.repeat(4093) }],
    ['a string', 'plan=pro'],
    ['an array', [{ plan: 'pro' }]],
    ['a number', 42],
    ['null', null],
  ];

  test.each(bad)('create with %s', async (_label, attributes) => {
    const before = await countContacts(org.orgId);
    const res = await api.post('/contacts', { name: 'Bad Attr', email: 'bad.attr@example.com', attributes }, admin);
    expectValidation(res, ['attributes']);
    expect(res.body.message).toMatch(/^attributes /);
    expect(await countContacts(org.orgId)).toBe(before);
  });

  test.each(bad)('update with %s', async (_label, attributes) => {
    const c = await makeContact(api, admin, { attributes: { plan: 'pro' } });
    expectValidation(await api.put(`/contacts/${c._id}`, { name: 'Changed', attributes }, admin), ['attributes']);
    expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(c);
  });

  test('the boundaries are accepted: 50 keys, keys of 50 characters, 8 KiB of JSON', async () => {
    expect((await makeContact(api, admin, { attributes: keys(50) })).attributes).toEqual(keys(50));
    expect((await makeContact(api, admin, { attributes: { ['K_9'.repeat(16) + 'ab']: 'x' } })).attributes).toEqual({ ['K_9'.repeat(16) + 'ab']: 'x' });
    expect((await makeContact(api, admin, { attributes: { k: 'x'.repeat(8184) } })).attributes.k).toHaveLength(8184);
    expect((await makeContact(api, admin, { attributes: { k: 'é'.repeat(4092) } })).attributes.k).toHaveLength(4092);
  });

  test('named in one answer with the other fields that fail', async () => {
    const res = await api.post('/contacts', { name: '', email: 'nope', attributes: { 'bad-key': 1, nested: {} } }, admin);
    expectValidation(res, ['name', 'email', 'attributes']);
    expect(res.body.message).toContain('"bad-key"');
    expect(res.body.message).toContain('"nested"');
  });

  test('a value Postgres can not store is named by its key', async () => {
    const res = await api.post('/contacts', { name: 'Nul', email: 'nul@example.com', attributes: { plan: 'a\u0000b' } }, admin);
    expectValidation(res, ['attributes.plan']);
  });

  test('GraphQL: BAD_REQUEST naming attributes; a value that is not an object is refused by the scalar', async () => {
    const before = await countContacts(org.orgId);
    for (const attributes of [{ 'a-b': 1 }, keys(51), { nested: { a: 1 } }]) {
      const err = expectGqlError(await api.gql(CREATE, { input: { name: 'G', email: 'g.bad@example.com', attributes } }, admin), 400, 'BAD_REQUEST');
      expect(err.extensions.details.map((d: { field: string }) => d.field)).toEqual(['attributes']);
    }
    for (const attributes of ['x', [1], 3]) {
      const res = await api.gql(CREATE, { input: { name: 'G', email: 'g.bad@example.com', attributes } }, admin);
      expect(res.status).toBe(400);
      expect(res.body.errors?.[0]?.extensions?.statusCode).toBe(400);
    }
    const literal = await api.gql(`mutation { createContact(input: { name: "G", email: "g@example.com", attributes: { big: 1e999 } }) { _id } }`, {}, admin);
    expect(literal.body.errors?.[0]?.extensions).toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    expect(await countContacts(org.orgId)).toBe(before);
  });
});

describe('update: the limits apply to the merged result', () => {
  test('a merge past 50 keys is a 400 naming attributes, and nothing of the update is made', async () => {
    const g1 = await makeGroup(api, admin);
    const g2 = await makeGroup(api, admin);
    const c = await makeContact(api, admin, { attributes: keys(45), groups: [g1._id] });
    const res = await api.put(`/contacts/${c._id}`, { name: 'Not renamed', groups: [g2._id], tags: ['no'], attributes: keys(6, 'n') }, admin);
    expectValidation(res, ['attributes']);
    expect(res.body.message).toBe('attributes must have at most 50 keys once merged with the stored ones (would have 51)');
    expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(c);

    // Removing one in the same change makes room; setting stored keys adds none.
    const ok = await api.put(`/contacts/${c._id}`, { attributes: { ...keys(6, 'n'), k0: null } }, admin);
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body.attributes)).toHaveLength(50);
    const same = await api.put(`/contacts/${c._id}`, { attributes: { k1: 'changed', k2: false } }, admin);
    expect(same.body.attributes).toMatchObject({ k1: 'changed', k2: false });
    expectValidation(await api.put(`/contacts/${c._id}`, { attributes: { one_more: 1 } }, admin), ['attributes']);
  });

  test('a merge past 8 KiB is refused the same way', async () => {
    const c = await makeContact(api, admin, { attributes: { big: 'x'.repeat(8000) } });
    const res = await api.put(`/contacts/${c._id}`, { attributes: { more: 'y'.repeat(200) } }, admin);
    expectValidation(res, ['attributes']);
    expect(res.body.message).toMatch(/^attributes must be at most 8 KiB of JSON once merged with the stored ones \(would be \d+ bytes\)$/);
    expect(await stored(c._id)).toEqual({ big: 'x'.repeat(8000) });
    // Replacing the big value with a smaller one is fine.
    expect((await api.put(`/contacts/${c._id}`, { attributes: { big: 'small', more: 'y'.repeat(200) } }, admin)).status).toBe(200);
  });

  test('named with the other failing fields in one answer', async () => {
    const c = await makeContact(api, admin, { attributes: keys(50) });
    expectValidation(await api.put(`/contacts/${c._id}`, { phone: '12345', attributes: { extra: 1 } }, admin), ['phone', 'attributes']);
  });

  test('concurrent updates can not pass the limit together: each merge is judged in its own transaction', async () => {
    const c = await makeContact(api, admin, { attributes: keys(48) });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => api.put(`/contacts/${c._id}`, { attributes: { [`new${i}`]: i } }, admin)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 400, 400, 400, 400]);
    for (const r of results.filter((r) => r.status === 400)) expectValidation(r, ['attributes']);
    expect(Object.keys(await stored(c._id))).toHaveLength(50);
  });

  test('GraphQL: BAD_REQUEST naming attributes, nothing changed', async () => {
    const c = await makeContact(api, admin, { attributes: keys(50) });
    const err = expectGqlError(await api.gql(UPDATE, { id: c._id, input: { name: 'No', attributes: { extra: 1 } } }, admin), 400, 'BAD_REQUEST');
    expect(err.extensions.details).toEqual([{ field: 'attributes', message: 'attributes must have at most 50 keys once merged with the stored ones (would have 51)' }]);
    expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(c);
  });
});

describe('the list filter', () => {
  const batch = unique();
  let a: any, b: any, c: any, d: any, e: any, foreign: any;

  beforeAll(async () => {
    a = await makeContact(api, admin, { tags: ['t'], attributes: { batch, plan: 'pro', seats: 30, trial: true, city: 'Nairobi West' } });
    b = await makeContact(api, admin, { attributes: { batch, plan: 'basic', seats: '30', trial: false } });
    c = await makeContact(api, admin, { tags: ['t'], attributes: { batch, plan: 'pro', seats: 5, trial: 'true' } });
    d = await makeContact(api, admin, { attributes: { batch } });
    e = await makeContact(api, admin);
    foreign = await makeContact(api, theirs, { attributes: { batch, plan: 'pro', seats: 30, trial: true } });
  });

  const list = (query: string, cred: Credential = admin) => api.get(`/contacts?limit=1000&attributes.batch=${batch}${query}`, cred);

  test.each([
    ['a string', '&attributes.plan=pro', () => [a, c]],
    ['a number: stored numbers equal to it and the same string', '&attributes.seats=30', () => [a, b]],
    ['a number written another way matches the number only', '&attributes.seats=30.0', () => [a]],
    ['true: the boolean and the string', '&attributes.trial=true', () => [a, c]],
    ['false', '&attributes.trial=false', () => [b]],
    ['two filters together', '&attributes.plan=pro&attributes.seats=30', () => [a]],
    ['an encoded value', `&attributes.city=${encodeURIComponent('Nairobi West')}`, () => [a]],
    ['with the tag filter', '&tag=t&attributes.trial=true', () => [a, c]],
    ['a value no contact has', '&attributes.plan=enterprise', () => []],
    ['a key no contact has', '&attributes.missing=x', () => []],
    ['only the batch', '', () => [a, b, c, d]],
  ])('%s', async (_label, query, expected) => {
    const res = await list(query);
    expect(res.status).toBe(200);
    const want = expected().map((x: any) => x._id).sort();
    expect(ids(res)).toEqual(want);
    expect(res.headers.get('x-total-count')).toBe(String(want.length));
    // Every contact of the list shows its attributes.
    for (const item of res.body) expect(sorted(item)).toEqual(KEYS_WITH_ATTRIBUTES);
    expect(ids(res)).not.toContain(e._id);
  });

  test('every listed contact shows attributes, {} when none', async () => {
    const res = await api.get('/contacts?limit=1000', admin);
    for (const item of res.body) expect(item.attributes).toEqual(expect.any(Object));
    expect(res.body.find((x: any) => x._id === e._id).attributes).toEqual({});
    expect(res.body.find((x: any) => x._id === a._id).attributes).toEqual(a.attributes);
  });

  test("an organization's filter never sees another's contacts", async () => {
    expect(ids(await list('&attributes.plan=pro'))).not.toContain(foreign._id);
    expect(ids(await list('&attributes.plan=pro', theirs))).toEqual([foreign._id]);
    expect(ids(await list('', theirs))).toEqual([foreign._id]);
  });

  test('a bad key, a repeated key or more keys than a contact can hold is a 400', async () => {
    for (const query of ['&attributes.bad-key=1', '&attributes.=x', `&attributes.${'k'.repeat(51)}=x`, '&attributes.plan=a&attributes.plan=b', '&attributes=x']) {
      expectValidation(await list(query), ['attributes']);
    }
    const many = Array.from({ length: 50 }, (_, i) => `&attributes.k${i}=x`).join('');
    expectValidation(await list(many), ['attributes']);
    expectValidation(await api.get('/contacts?attributes.plan=%00', admin), ['attributes.plan']);
  });

  test('GraphQL: an object of key -> value, all to match; typed values match their type', async () => {
    const query = async (attributes: unknown) => {
      const res = await api.gql(LIST, { filter: { attributes: { batch, ...(attributes as object) } } }, admin);
      expect(res.body.errors).toBeUndefined();
      const nodes = res.body.data.contacts.edges.map((edge: any) => edge.node);
      expect(res.body.data.contacts.totalCount).toBe(nodes.length);
      for (const node of nodes) expect(node.attributes).toEqual(expect.objectContaining({ batch }));
      return nodes.map((n: any) => n._id).sort();
    };
    expect(await query({ plan: 'pro' })).toEqual([a._id, c._id].sort());
    expect(await query({ seats: 30 })).toEqual([a._id]);
    expect(await query({ seats: '30' })).toEqual([a._id, b._id].sort());
    expect(await query({ trial: true })).toEqual([a._id]);
    expect(await query({ plan: 'pro', seats: 30 })).toEqual([a._id]);
    expect(await query({})).toEqual([a._id, b._id, c._id, d._id].sort());

    const inline = await api.gql(`{ contacts(filter: { attributes: { batch: "${batch}", plan: "basic" } }) { edges { node { _id } } } }`, {}, admin);
    expect(inline.body.data.contacts.edges.map((x: any) => x.node._id)).toEqual([b._id]);

    const other = await api.gql(LIST, { filter: { attributes: { batch } } }, theirs);
    expect(other.body.data.contacts.edges.map((x: any) => x.node._id)).toEqual([foreign._id]);

    for (const attributes of [{ 'bad-key': 1 }, { plan: ['a'] }, { plan: null }, { nested: {} }]) {
      const err = expectGqlError(await api.gql(LIST, { filter: { attributes } }, admin), 400, 'BAD_REQUEST');
      expect(err.extensions.details.map((x: { field: string }) => x.field)).toEqual(['attributes']);
    }
  });
});

test('every contact of every GraphQL answer shows attributes', async () => {
  const g = await makeGroup(api, admin);
  const c = await makeContact(api, admin, { groups: [g._id], attributes: { shown: 'yes' } });
  const res = await api.gql(
    `query ($id: ID!, $g: ID!) {
      contact(id: $id) { attributes }
      contacts(first: 1000) { edges { node { _id attributes } } }
      group(id: $g) { contacts(first: 10) { edges { node { attributes } } } }
    }`,
    { id: c._id, g: g._id },
    admin,
  );
  expect(res.body.errors).toBeUndefined();
  expect(res.body.data.contact.attributes).toEqual({ shown: 'yes' });
  expect(res.body.data.group.contacts.edges.map((x: any) => x.node.attributes)).toEqual([{ shown: 'yes' }]);
  for (const edge of res.body.data.contacts.edges) expect(edge.node.attributes).toEqual(expect.any(Object));
});

test("another organization's contact: 403 on an attributes update, unchanged", async () => {
  const mine = await makeContact(api, theirs, { attributes: { secret: 'value' } });
  const res = await api.put(`/contacts/${mine._id}`, { attributes: { secret: null, hijacked: true } }, admin);
  expect(res.status).toBe(403);
  expect(res.body).toEqual(FORBIDDEN_BODY);
  expect(await stored(mine._id)).toEqual({ secret: 'value' });
});

// That attribute statements stay with the organization (one shard on Citus): tests/citus-routing.test.ts.
describe('statements', () => {
  test("the filter is answered from the organization's attributes index", async () => {
    const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
    await explain.connect();
    try {
      if (await isCitus(explain)) return; // there the plans are the workers'; the index is the same
      const many = await signupOrg(api);
      await herald.db.raw(
        `INSERT INTO contacts (organization_id, name, email, attributes)
         SELECT ?, 'Many ' || i, 'many' || i || '@example.com', jsonb_build_object('n', i, 'plan', 'p' || (i % 5000)) FROM generate_series(1, 20000) i`,
        [many.orgId],
      );
      // As autovacuum would leave it: statistics and the visibility map current.
      await herald.db.raw('VACUUM ANALYZE contacts');
      const { result, statements } = await tenantStatementsOf(herald.db, () => api.get('/contacts?attributes.plan=p7', { token: many.token }));
      expect(result.status).toBe(200);
      const filtered = statements.filter((s) => s.sql.includes('@>'));
      expect(filtered.length).toBeGreaterThan(0);
      // Few rows for a planner: a sequential scan would still be cheaper, so it is taken off the table.
      await explain.query('SET enable_seqscan = off');
      for (const s of filtered) {
        const { rows } = await explain.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${s.sql}`, s.bindings);
        expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('contacts_org_attributes_idx');
      }
    } finally {
      await explain.end();
    }
  });
});

test('random attributes: never a 5xx; what is accepted is stored as the merge says', async () => {
  const key = fc.oneof(
    fc.constantFrom('plan', 'seats', 'trial', '__proto__', 'constructor', 'A_1', 'k'.repeat(50), 'k'.repeat(51), '', 'a-b', 'é', '\u0000', '\ud800'),
    fc.string({ maxLength: 8 }),
  );
  const leaf = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.constantFrom('\u0000', '\udc00', 'x'.repeat(9000)));
  const value = fc.oneof({ weight: 5, arbitrary: leaf }, { weight: 1, arbitrary: fc.array(leaf, { maxLength: 2 }) }, { weight: 1, arbitrary: fc.dictionary(key, leaf, { maxKeys: 2 }) });
  const change = fc.oneof({ weight: 8, arbitrary: fc.dictionary(key, value, { maxKeys: 8 }) }, { weight: 1, arbitrary: leaf });
  const c = await makeContact(api, admin, { attributes: { start: 1 } });
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(change, fc.boolean(), async (attributes, viaGraphql) => {
      const before = await stored(c._id);
      const res = viaGraphql
        ? await api.gql(`mutation ($id: ID!, $a: JSONObject) { updateContact(id: $id, input: { attributes: $a }) { attributes } }`, { id: c._id, a: attributes }, admin)
        : await api.put(`/contacts/${c._id}`, { attributes }, admin);
      expect(res.status).toBeLessThan(500);
      const after = await stored(c._id);
      const ok = viaGraphql ? !res.body.errors : res.status === 200;
      if (!ok) {
        expect(after).toEqual(before);
        if (!viaGraphql) expect(res.status).toBe(400);
        else expect(res.body.errors.map((x: any) => x.extensions.statusCode)).toEqual([400]);
        return;
      }
      accepted++;
      // GraphQL takes `attributes: null` as not given.
      const given = (attributes ?? {}) as Record<string, unknown>;
      const expected = JSON.parse(JSON.stringify({ ...before, ...given }));
      for (const [k, v] of Object.entries(given)) if (v === null) delete expected[k];
      expect(after).toEqual(expected);
      // Keep room for more merges.
      if (Object.keys(after).length > 40 || JSON.stringify(after).length > 6000) await herald.db('contacts').where({ id: c._id }).update({ attributes: '{}' });
      const filter = Object.entries(after).slice(0, 2).map(([k, v]) => `attributes.${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&');
      const listed = await api.get(`/contacts?limit=1000&${filter}`, admin);
      expect(listed.status).toBe(200);
      if (filter && Object.keys(after).length <= 40 && JSON.stringify(after).length <= 6000) expect(ids(listed)).toContain(c._id);
    }),
    { numRuns: 150, seed: 20261125 },
  );
  expect(accepted).toBeGreaterThan(10);
}, 120_000);
