import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { compareNewestFirst, expectError, expectGqlError, expectValidation, makeContact, makeGroup, nextLink } from '../helpers/contacts-groups.js';
import { client, createApiKey, signupOrg, startTestHerald, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';

let herald: Herald;
let api: Client;
let big: Org; // 250 contacts
let bigCred: Credential;

const TOTAL = 250;
const T0 = Date.parse('2025-06-01T00:00:00.000Z');
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

beforeAll(async () => {
  herald = await startTestHerald();
  api = client(herald.url);
  big = await signupOrg(api);
  bigCred = { token: big.token };
  // Inserted directly: three contacts share each timestamp, so ties must be broken by id.
  const rows = Array.from({ length: TOTAL }, (_, i) => ({
    organization_id: big.orgId,
    name: `Paged ${String(i).padStart(3, '0')}`,
    email: `paged${i}@example.com`,
    created_at: new Date(T0 + Math.floor(i / 3) * 1000),
    updated_at: new Date(T0 + Math.floor(i / 3) * 1000),
  }));
  await herald.db('contacts').insert(rows);
  // Noise in another organization, interleaved in time: never part of the walk.
  const noise = await signupOrg(api);
  await herald.db('contacts').insert(
    Array.from({ length: 20 }, (_, i) => ({ organization_id: noise.orgId, name: `Noise ${i}`, email: `noise${i}@example.com`, created_at: new Date(T0 + i * 7000) })),
  );
});
afterAll(() => herald.stop());

/** The organization's contact ids in the documented order, read straight from the table. */
async function expectedOrder(orgId: string): Promise<string[]> {
  const rows = await herald.db('contacts').where({ organization_id: orgId }).orderBy([
    { column: 'created_at', order: 'desc' },
    { column: 'id', order: 'desc' },
  ]).select('id');
  return rows.map((r) => r.id);
}

interface Walked {
  items: any[];
  pages: Reply[];
}

/** Follows `Link: rel="next"` from `start` until it is absent; `between` runs before each next page. */
async function walkRest(start: string, cred: Credential, between?: (page: number) => Promise<void>): Promise<Walked> {
  const items: any[] = [];
  const pages: Reply[] = [];
  let path: string | null = start;
  while (path) {
    if (pages.length > 50) throw new Error('runaway pagination');
    const res = await api.get(path, cred);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    pages.push(res);
    items.push(...res.body);
    path = nextLink(res);
    if (path && between) await between(pages.length);
  }
  return { items, pages };
}

const badCursors: [string, string][] = [
  ['garbage', 'garbage'],
  ['base64 of garbage', b64('garbage')],
  ['base64 (standard alphabet) of garbage', Buffer.from('this is not a cursor at all').toString('base64')],
  ['base64 of a bad date', b64(`yesterday|${randomUUID()}`)],
  ['base64 of a bad id', b64('2026-01-05T09:30:00.000Z|42')],
  ['base64 with an extra part', b64(`2026-01-05T09:30:00.000Z|${randomUUID()}|x`)],
  ['base64 of an impossible calendar date', b64(`2026-02-30T00:00:00.000Z|${randomUUID()}`)],
  ['base64 of an out-of-range hour', b64(`2026-01-05T25:00:00.000Z|${randomUUID()}`)],
  ['too long', 'A'.repeat(300)],
];

const GQL_PAGE = `query ($after: String, $filter: ContactFilter) {
  contacts(first: 37, after: $after, filter: $filter) {
    totalCount pageInfo { hasNextPage endCursor } edges { cursor node { _id createdAt } }
  }
}`;

describe('REST: GET /contacts pages by Link headers', () => {
  test('limit=37: every contact exactly once, newest first (ties by _id desc), X-Total-Count on every page', async () => {
    const expected = await expectedOrder(big.orgId);
    expect(expected).toHaveLength(TOTAL);
    const { items, pages } = await walkRest('/contacts?limit=37', bigCred);
    expect(pages.map((p) => p.body.length)).toEqual([37, 37, 37, 37, 37, 37, 28]);
    for (const p of pages) expect(p.headers.get('x-total-count')).toBe(String(TOTAL));
    const ids = items.map((c) => c._id);
    expect(new Set(ids).size).toBe(TOTAL);
    expect(ids).toEqual(expected);
    // The order is the documented one, checked on the answered fields themselves.
    expect([...items].sort(compareNewestFirst).map((c) => c._id)).toEqual(ids);
    expect(items.every((c) => c.ServiceOrganization === big.orgId)).toBe(true);
    // Ties exist, so the id tie-break was exercised.
    expect(new Set(items.map((c) => c.createdAt)).size).toBeLessThan(TOTAL);
    // The Link is a relative URL keeping the limit.
    const link = nextLink(pages[0]!)!;
    expect(link.startsWith('/contacts?')).toBe(true);
    expect(new URL(link, 'http://x').searchParams.get('limit')).toBe('37');
  });

  test('no empty trailing page when the total is a multiple of the limit; default limit is 100', async () => {
    const fifty = await walkRest('/contacts?limit=50', bigCred);
    expect(fifty.pages.map((p) => p.body.length)).toEqual([50, 50, 50, 50, 50]);
    expect(fifty.pages[4]!.headers.get('link')).toBeNull();
    const all = await walkRest('/contacts?limit=1000', bigCred);
    expect(all.pages).toHaveLength(1);
    expect(all.items).toHaveLength(TOTAL);
    const dflt = await api.get('/contacts', bigCred);
    expect(dflt.body).toHaveLength(100);
    expect(dflt.headers.get('link')).toMatch(/rel="next"/);
  });

  test('the Link header never carries the ?apikey= credential', async () => {
    const key = (await createApiKey(api, big, 'user')).key;
    const res = await api.get('/contacts?limit=10', { queryKey: key });
    expect(res.status).toBe(200);
    const link = nextLink(res)!;
    expect(link).not.toMatch(/apikey/i);
    expect(link).not.toContain(key);
    const next = await api.get(link, { queryKey: key });
    expect(next.status).toBe(200);
    expect(next.body).toHaveLength(10);
  });

  test('contacts added while walking: nothing repeated, nothing that existed at the start missed', async () => {
    const org = await signupOrg(api);
    const cred = { token: org.token };
    await herald.db('contacts').insert(
      Array.from({ length: 120 }, (_, i) => ({
        organization_id: org.orgId,
        name: `Moving ${i}`,
        email: `moving${i}@example.com`,
        created_at: new Date(T0 + Math.floor(i / 2) * 1000),
      })),
    );
    const initial = await expectedOrder(org.orgId);
    let added = 0;
    const { items } = await walkRest('/contacts?limit=37', cred, async (page) => {
      // New contacts (newest of all) through the API, and one backdated older than everything.
      await Promise.all([0, 1, 2].map((k) => makeContact(api, cred, { name: `Arrival ${page}.${k}` })));
      await herald.db('contacts').insert({ organization_id: org.orgId, name: `Backdated ${page}`, email: `back${page}@example.com`, created_at: new Date(T0 - page * 1000) });
      added += 4;
    });
    const ids = items.map((c) => c._id);
    expect(added).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    const seen = new Set(ids);
    expect(initial.filter((id) => !seen.has(id))).toEqual([]);
    // The ones that were there keep their relative order.
    expect(ids.filter((id) => initial.includes(id))).toEqual(initial);
    expect([...items].sort(compareNewestFirst).map((c) => c._id)).toEqual(ids);
  });

  test.each(['0', '1001', '-1', 'abc', '1.5', '', '10abc', '%20'])('limit=%s is 400 naming limit', async (limit) => {
    const res = await api.get(`/contacts?limit=${limit}`, bigCred);
    expectValidation(res, ['limit']);
  });

  test.each(badCursors)('cursor %s is 400', async (_label, cursor) => {
    const res = await api.get(`/contacts?limit=10&cursor=${encodeURIComponent(cursor)}`, bigCred);
    expect(res.status).toBe(400);
    expect([
      ['error', 'message', 'statusCode'],
      ['details', 'error', 'message', 'statusCode'],
    ]).toContainEqual(Object.keys(res.body).sort());
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(res.body.message).toMatch(/cursor/);
  });
});

describe('GraphQL: contacts(first, after)', () => {
  test('the same walk through the connection', async () => {
    const expected = await expectedOrder(big.orgId);
    const seen: string[] = [];
    let after: string | null = null;
    const sizes: number[] = [];
    for (let page = 0; page < 20; page++) {
      const res: Reply = await api.gql(GQL_PAGE, { after }, bigCred);
      expect(res.body.errors).toBeUndefined();
      const conn = res.body.data.contacts;
      expect(conn.totalCount).toBe(TOTAL);
      sizes.push(conn.edges.length);
      seen.push(...conn.edges.map((e: any) => e.node._id));
      // Every edge's cursor resumes right after its node.
      expect(conn.pageInfo.endCursor).toBe(conn.edges[conn.edges.length - 1].cursor);
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(sizes).toEqual([37, 37, 37, 37, 37, 37, 28]);
    expect(seen).toEqual(expected);

    // Any edge cursor works as `after`.
    const first = (await api.gql(GQL_PAGE, { after: null }, bigCred)).body.data.contacts;
    const mid = first.edges[9];
    const resumed = (await api.gql(GQL_PAGE, { after: mid.cursor }, bigCred)).body.data.contacts;
    expect(resumed.edges[0].node._id).toBe(expected[10]);

    // The REST door and the GraphQL door share cursors.
    const rest = await api.get(`/contacts?limit=5&cursor=${encodeURIComponent(mid.cursor)}`, bigCred);
    expect(rest.body.map((c: any) => c._id)).toEqual(expected.slice(10, 15));
  });

  test('bad first and after are 400', async () => {
    const q = `query ($first: Int, $after: String) { contacts(first: $first, after: $after) { totalCount } }`;
    for (const first of [0, 1001, -1]) {
      const err = expectGqlError(await api.gql(q, { first }, bigCred), 400, 'BAD_REQUEST');
      expect(err.message).toMatch(/limit|first/);
    }
    const typed = await api.gql(q, { first: 'abc' }, bigCred);
    expect(typed.body.errors?.[0]?.extensions?.statusCode).toBe(400);
    for (const [, cursor] of badCursors) {
      const err = expectGqlError(await api.gql(q, { first: 5, after: cursor }, bigCred), 400, 'BAD_REQUEST');
      expect(err.message).toMatch(/cursor/);
    }
  });
});

describe('filters: group, tag and search, in both doors', () => {
  let org: Org;
  let cred: Credential;
  let gA: any;
  let gB: any;
  let gEmpty: any;
  const c: Record<string, any> = {};

  beforeAll(async () => {
    org = await signupOrg(api);
    cred = { token: org.token };
    [gA, gB, gEmpty] = [await makeGroup(api, cred), await makeGroup(api, cred), await makeGroup(api, cred)];
    const specs: Record<string, Record<string, unknown>> = {
      alice: { name: 'Alice Smith', email: 'alice@wonderland.example', tags: ['vip', 'beta'], groups: [gA._id] },
      bob: { name: 'Bob 100% Real', email: 'bob@example.com', tags: ['vip'], groups: [gA._id, gB._id] },
      carol: { name: 'Carol_Underscore', email: null, phone: '0712345678', tags: [], groups: [gB._id] },
      dave: { name: 'Dave Plain', email: 'dave@example.net', phone: '+14155552671', tags: ['other'] },
      eve: { name: 'Eve Back\\slash', email: 'eve@example.com', tags: ['beta'], groups: [gA._id] },
      frank: { name: 'Frank Hundred', email: 'frank.100@example.org', tags: ['vipx'] },
      gina: { name: 'Gina X', email: 'gina_x@example.org', tags: ['newsletter'] },
    };
    for (const [key, spec] of Object.entries(specs)) c[key] = await makeContact(api, cred, spec);
    // Another organization's look-alikes must never show.
    const stranger = await signupOrg(api);
    await makeContact(api, { token: stranger.token }, { name: 'Alice Stranger', email: 'alice.stranger@example.com', tags: ['vip'] });
  });

  const ids = (...keys: string[]) =>
    keys
      .map((k) => c[k])
      .sort(compareNewestFirst)
      .map((x) => x._id);

  const cases: [string, Record<string, string>, string[]][] = [
    ['group A', { group: 'A' }, ['alice', 'bob', 'eve']],
    ['group B', { group: 'B' }, ['bob', 'carol']],
    ['an empty group', { group: 'EMPTY' }, []],
    ['tag vip (the whole tag, not vipx)', { tag: 'vip' }, ['alice', 'bob']],
    ['tag beta', { tag: 'beta' }, ['alice', 'eve']],
    ['search by name, any case', { search: 'aLiCe' }, ['alice']],
    ['search by name substring', { search: 'smith' }, ['alice']],
    ['search by email substring', { search: 'WONDERLAND' }, ['alice']],
    ['search by phone substring', { search: '712345' }, ['carol']],
    ['search by phone with plus', { search: '+1415' }, ['dave']],
    ['search for % is literal', { search: '%' }, ['bob']],
    ['search for 100% is literal', { search: '100%' }, ['bob']],
    ['search for _ is literal', { search: '_' }, ['carol', 'gina']],
    ['search for l_u is literal', { search: 'l_u' }, ['carol']],
    ['search for a backslash is literal', { search: '\\' }, ['eve']],
    ['search with no match', { search: 'zzz-nothing' }, []],
    ['group and tag together', { group: 'A', tag: 'beta' }, ['alice', 'eve']],
    ['group and search together', { group: 'B', search: 'bob' }, ['bob']],
    ['tag and search together', { tag: 'vip', search: 'example.com' }, ['bob']],
  ];

  const resolve = (f: Record<string, string>) =>
    Object.fromEntries(Object.entries(f).map(([k, v]) => [k, k === 'group' ? { A: gA._id, B: gB._id, EMPTY: gEmpty._id }[v]! : v]));

  test.each(cases)('REST: %s', async (_label, filter, keys) => {
    const qs = new URLSearchParams(resolve(filter)).toString();
    const res = await api.get(`/contacts?${qs}`, cred);
    expect(res.status).toBe(200);
    expect(res.body.map((x: any) => x._id)).toEqual(ids(...keys));
    expect(res.headers.get('x-total-count')).toBe(String(keys.length));
  });

  test.each(cases)('GraphQL: %s', async (_label, filter, keys) => {
    const res = await api.gql(GQL_PAGE, { filter: resolve(filter) }, cred);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.contacts.edges.map((e: any) => e.node._id)).toEqual(ids(...keys));
    expect(res.body.data.contacts.totalCount).toBe(keys.length);
  });

  test('a filtered list pages with its filter kept in the Link', async () => {
    const { items, pages } = await walkRest(`/contacts?group=${gA._id}&limit=2`, cred);
    expect(pages.map((p) => p.body.length)).toEqual([2, 1]);
    expect(items.map((x) => x._id)).toEqual(ids('alice', 'bob', 'eve'));
    for (const p of pages) expect(p.headers.get('x-total-count')).toBe('3');
    const link = new URL(nextLink(pages[0]!)!, 'http://x');
    expect(link.searchParams.get('group')).toBe(gA._id);

    const gql1 = (await api.gql(`query ($f: ContactFilter) { contacts(first: 2, filter: $f) { pageInfo { hasNextPage endCursor } edges { node { _id } } } }`, { f: { tag: 'vip' } }, cred)).body.data.contacts;
    expect(gql1.pageInfo.hasNextPage).toBe(false);
    expect(gql1.edges.map((e: any) => e.node._id)).toEqual(ids('alice', 'bob'));
  });

  test("another organization's group as a filter reveals none of its contacts", async () => {
    const stranger = await signupOrg(api);
    const theirGroup = await makeGroup(api, { token: stranger.token });
    await makeContact(api, { token: stranger.token }, { groups: [theirGroup._id] });
    const res = await api.get(`/contacts?group=${theirGroup._id}`, cred);
    if (res.status === 200) {
      expect(res.body).toEqual([]);
      expect(res.headers.get('x-total-count')).toBe('0');
    } else {
      expect([403, 404]).toContain(res.status);
    }
  });

  test('bad filters are 400 naming the filter; unknown query parameters too', async () => {
    expectValidation(await api.get('/contacts?group=not-a-uuid', cred), ['group']);
    expectValidation(await api.get(`/contacts?search=${'s'.repeat(101)}`, cred), ['search']);
    expectValidation(await api.get(`/contacts?tag=${'t'.repeat(51)}`, cred), ['tag']);
    expectValidation(await api.get('/contacts?colour=red', cred), ['colour']);
    const gql = await api.gql(GQL_PAGE, { filter: { group: 'not-a-uuid' } }, cred);
    const err = expectGqlError(gql, 400, 'BAD_REQUEST');
    expect(err.extensions.details.map((d: any) => d.field)).toEqual(['group']);
    expectError(await api.get('/contacts?limit=5', undefined), 401);
  });
});
