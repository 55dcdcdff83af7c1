import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithOrgs, ISO_MS, UUID_RE, type Client, type Credential, type Org } from '../helpers/herald.js';

/*
 * The email suppression list as an organization's admin meets it, through both doors: addresses
 * added by hand (a duplicate 409, an invalid one 400), listed newest first and searched, removed,
 * imported from a CSV (duplicates and invalid lines counted); each write in the audit log; members
 * read it and may not change it; another organization's never seen nor touched.
 */

let herald: Herald;
let api: Client;
let org: Org;
let other: Org;
let admin: Credential;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  admin = { token: org.token };
}, 60_000);
afterAll(() => herald?.stop());

const csvBody = (cred: Credential, csv: string) => api.raw('POST', '/suppressions/import', csv, cred, { 'content-type': 'text/csv' });
const listed = async (cred: Credential, query = '') => (await api.get(`/suppressions${query}`, cred)).body as { _id: string; address: string; reason: string }[];
const auditOf = async (prefix: string) =>
  (await api.get(`/audit-log?action=${prefix}`, admin)).body as { action: string; resourceType: string; resourceId: string | null; details: Record<string, unknown> }[];

const SUPPRESSION_FIELDS = `_id channel address reason bounceType detail createdAt`;

describe('REST', () => {
  test('an admin adds an address by hand: stored trimmed and lower-case, reason manual, audited with the address', async () => {
    const res = await api.post('/suppressions', { address: '  Ada.Rest@Example.com ', detail: 'asked by phone' }, admin);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ _id: expect.stringMatching(UUID_RE), channel: 'email', address: 'ada.rest@example.com', reason: 'manual', bounceType: null, detail: 'asked by phone', createdAt: expect.stringMatching(ISO_MS) });
    const [entry] = await auditOf('suppression.added');
    expect(entry).toMatchObject({ action: 'suppression.added', resourceType: 'suppression', resourceId: res.body._id, details: { address: 'ada.rest@example.com', reason: 'manual' } });
  });

  test('the same address again, in any case, is a 409 naming it, and nothing is added', async () => {
    const before = (await api.get('/suppressions', admin)).headers.get('x-total-count');
    const res = await api.post('/suppressions', { address: 'ADA.REST@example.com' }, admin);
    expect(res.status).toBe(409);
    expect(res.body.message).toContain('ada.rest@example.com');
    expect((await api.get('/suppressions', admin)).headers.get('x-total-count')).toBe(before);
    expect((await auditOf('suppression.added')).length).toBe(1);
  });

  test('an invalid address, a missing one and an unknown field are 400s naming the field', async () => {
    const invalid = await api.post('/suppressions', { address: 'not-an-email' }, admin);
    expect(invalid.status).toBe(400);
    expect(invalid.body.details).toEqual([{ field: 'address', message: expect.stringContaining('address') }]);
    expect((await api.post('/suppressions', {}, admin)).body.details).toEqual([expect.objectContaining({ field: 'address' })]);
    expect((await api.post('/suppressions', { address: 'a@example.com', reason: 'bounce' }, admin)).status).toBe(400);
    expect((await api.post('/suppressions', { address: 'a@example.com', detail: 'x'.repeat(501) }, admin)).body.details).toEqual([expect.objectContaining({ field: 'detail' })]);
  });

  test('the list is newest first, paged, and searched by a substring of the address in any case', async () => {
    for (const address of ['bob.list@example.com', 'carol.list@example.org', 'dan_list@example.net']) expect((await api.post('/suppressions', { address }, admin)).status).toBe(201);
    const all = await listed(admin);
    expect(all.slice(0, 3).map((s) => s.address)).toEqual(['dan_list@example.net', 'carol.list@example.org', 'bob.list@example.com']);

    const page = await api.get('/suppressions?limit=2', admin);
    expect(page.body.length).toBe(2);
    expect(page.headers.get('x-total-count')).toBe('4');
    const next = /<([^>]+)>/.exec(page.headers.get('link') ?? '')![1]!;
    expect((await api.get(next, admin)).body.map((s: { address: string }) => s.address)).toEqual(['bob.list@example.com', 'ada.rest@example.com']);

    expect((await listed(admin, '?search=.LIST@EXAMPLE.')).map((s) => s.address)).toEqual(['carol.list@example.org', 'bob.list@example.com']);
    // `_` is a character, not a wildcard.
    expect((await listed(admin, '?search=_list')).map((s) => s.address)).toEqual(['dan_list@example.net']);
    expect(await listed(admin, '?search=nobody')).toEqual([]);
    expect((await api.get('/suppressions?colour=red', admin)).status).toBe(400);
  });

  test('removing one allows it again: gone from the list, audited, and it can be added anew', async () => {
    const [carol] = await listed(admin, '?search=carol');
    const res = await api.delete(`/suppressions/${carol!._id}`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Suppression removed' });
    expect(await listed(admin, '?search=carol')).toEqual([]);
    expect((await auditOf('suppression.removed'))[0]).toMatchObject({ resourceId: carol!._id, details: { address: 'carol.list@example.org', reason: 'manual' } });
    expect((await api.delete(`/suppressions/${carol!._id}`, admin)).status).toBe(404);
    expect((await api.delete('/suppressions/not-an-id', admin)).status).toBe(404);
    expect((await api.post('/suppressions', { address: 'carol.list@example.org' }, admin)).status).toBe(201);
  });

  test('a CSV import adds the new addresses, counts those already there, names the invalid lines, and is audited once', async () => {
    const csv = ['Name,E-mail ignored,EMAIL,Reason', 'Bob,x,bob.list@example.com,again', 'Eve,x, Eve.Import@Example.com ,asked to stop', 'Zed,x,not an email,', '', 'Fay,x,fay.import@example.com,', 'Fay2,x,FAY.IMPORT@example.com,twice', 'Nil,x,,'].join('\n');
    const res = await csvBody(admin, csv);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      added: 2,
      alreadySuppressed: 2,
      invalidCount: 2,
      invalid: [
        { line: 4, value: 'not an email' },
        { line: 8, value: '' },
      ],
    });
    const [eve] = (await api.get('/suppressions?search=eve.import', admin)).body;
    expect(eve).toMatchObject({ address: 'eve.import@example.com', reason: 'import', detail: 'asked to stop' });
    expect((await listed(admin, '?search=fay.import')).length).toBe(1);
    // The address already there keeps its reason.
    expect((await listed(admin, '?search=bob.list'))[0]!.reason).toBe('manual');
    const entries = await auditOf('suppression.imported');
    expect(entries.length).toBe(1);
    expect(entries[0]).toMatchObject({ resourceType: 'suppression', resourceId: null, details: { reason: 'import', added: 2, alreadySuppressed: 2, invalid: 2 } });

    // The same file again adds nothing and changes nothing: no second entry.
    expect((await csvBody(admin, csv)).body).toMatchObject({ added: 0, alreadySuppressed: 4, invalidCount: 2 });
    expect((await auditOf('suppression.imported')).length).toBe(1);
  });

  test('a file without an address column, an empty one, one too large or not CSV is refused', async () => {
    const noColumn = await csvBody(admin, 'name,phone\nAda,+254712000000\n');
    expect(noColumn.status).toBe(400);
    expect(noColumn.body.message).toMatch(/email.*address/);
    expect((await csvBody(admin, '')).status).toBe(400);
    const big = `address\n${'a'.repeat(1024 * 1024)}@example.com\n`;
    expect((await csvBody(admin, big)).status).toBe(413);
    expect((await api.raw('POST', '/suppressions/import', '{}', admin, { 'content-type': 'application/json' })).status).toBe(415);
    // A semicolon-separated file with an `address` column is read too.
    expect((await csvBody(admin, 'address;detail\nsemi.colon@example.com;from the shop\n')).body).toMatchObject({ added: 1, alreadySuppressed: 0, invalidCount: 0 });
  });
});

describe('GraphQL', () => {
  const LIST = `query ($first: Int, $after: String, $search: String) { suppressions(first: $first, after: $after, search: $search) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${SUPPRESSION_FIELDS} } } } }`;
  const ADD = `mutation ($address: String!, $detail: String) { addSuppression(address: $address, detail: $detail) { ${SUPPRESSION_FIELDS} } }`;
  const REMOVE = `mutation ($id: ID!) { removeSuppression(id: $id) { message } }`;
  const IMPORT = `mutation ($csv: String!) { importSuppressions(csv: $csv) { added alreadySuppressed invalidCount invalid { line value } } }`;

  test('add, duplicate, invalid, search, page, remove and import, as REST does', async () => {
    const added = await api.gql(ADD, { address: 'Gql.One@Example.com', detail: null }, admin);
    expect(added.body.data.addSuppression).toEqual({ _id: expect.stringMatching(UUID_RE), channel: 'email', address: 'gql.one@example.com', reason: 'manual', bounceType: null, detail: null, createdAt: expect.stringMatching(ISO_MS) });

    const dup = await api.gql(ADD, { address: 'gql.one@example.com' }, admin);
    expect(dup.body.errors![0]).toMatchObject({ message: expect.stringContaining('gql.one@example.com'), extensions: { code: 'CONFLICT', statusCode: 409 } });
    const bad = await api.gql(ADD, { address: 'nope' }, admin);
    expect(bad.body.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
    expect(bad.body.errors![0].message).toContain('address');

    const imported = await api.gql(IMPORT, { csv: 'email,detail\ngql.two@example.com,from GraphQL\ngql.one@example.com,\nbroken@\n' }, admin);
    expect(imported.body.data.importSuppressions).toEqual({ added: 1, alreadySuppressed: 1, invalidCount: 1, invalid: [{ line: 4, value: 'broken@' }] });

    const searched = await api.gql(LIST, { search: 'GQL.', first: 1 }, admin);
    const page = searched.body.data.suppressions;
    expect(page.totalCount).toBe(2);
    expect(page.edges.map((e: any) => e.node.address)).toEqual(['gql.two@example.com']);
    expect(page.edges[0].node).toMatchObject({ reason: 'import', detail: 'from GraphQL' });
    const rest = await api.gql(LIST, { search: 'gql.', first: 1, after: page.pageInfo.endCursor }, admin);
    expect(rest.body.data.suppressions.edges.map((e: any) => e.node.address)).toEqual(['gql.one@example.com']);
    expect(rest.body.data.suppressions.pageInfo.hasNextPage).toBe(false);

    const removed = await api.gql(REMOVE, { id: added.body.data.addSuppression._id }, admin);
    expect(removed.body.data.removeSuppression).toEqual({ message: 'Suppression removed' });
    expect((await api.gql(LIST, { search: 'gql.one' }, admin)).body.data.suppressions.totalCount).toBe(0);
    expect((await auditOf('suppression.')).slice(0, 3).map((e) => [e.action, e.details.address ?? e.details.added])).toEqual([
      ['suppression.removed', 'gql.one@example.com'],
      ['suppression.imported', 1],
      ['suppression.added', 'gql.one@example.com'],
    ]);
  });
});

describe('who may', () => {
  test('a member and a user-role API key read the list but may not change it (403); an admin key may', async () => {
    const member = await addUser(api, org, 'user');
    const userKey = await createApiKey(api, org, 'user');
    const adminKey = await createApiKey(api, org, 'admin');
    const [one] = await listed(admin);
    for (const cred of [{ token: member.token }, { apiKey: userKey.key }] as Credential[]) {
      expect((await api.get('/suppressions', cred)).status).toBe(200);
      expect((await api.post('/suppressions', { address: 'member@example.com' }, cred)).status).toBe(403);
      expect((await api.delete(`/suppressions/${one!._id}`, cred)).status).toBe(403);
      expect((await csvBody(cred, 'email\nmember@example.com\n')).status).toBe(403);
      expect((await api.gql('mutation { importSuppressions(csv: "email\\nm@example.com") { added } }', undefined, cred)).body.errors![0].extensions.statusCode).toBe(403);
    }
    expect((await listed(admin, '?search=member@')).length).toBe(0);
    const byKey = await api.post('/suppressions', { address: 'by.key@example.com' }, { apiKey: adminKey.key });
    expect(byKey.status).toBe(201);
    expect((await auditOf('suppression.added'))[0]).toMatchObject({ resourceId: byKey.body._id });
    expect((await api.get('/suppressions')).status).toBe(401);
  });

  test('another organization never sees the list; its ids are 403 there, unknown ones 404', async () => {
    const theirs = await api.post('/suppressions', { address: 'ada.rest@example.com' }, { token: other.token });
    // The same address in two organizations is two suppressions.
    expect(theirs.status).toBe(201);
    expect((await listed({ token: other.token })).map((s) => s.address)).toEqual(['ada.rest@example.com']);
    const mine = await listed(admin, '?search=ada.rest');
    expect(mine.length).toBe(1);
    expect(mine[0]!._id).not.toBe(theirs.body._id);
    expect((await api.delete(`/suppressions/${mine[0]!._id}`, { token: other.token })).status).toBe(403);
    expect((await api.gql('mutation ($id: ID!) { removeSuppression(id: $id) { message } }', { id: mine[0]!._id }, { token: other.token })).body.errors![0].extensions.statusCode).toBe(403);
    expect((await api.delete('/suppressions/00000000-0000-4000-8000-000000000000', { token: other.token })).status).toBe(404);
    expect((await listed(admin, '?search=ada.rest')).length).toBe(1);
    // Imports into one organization leave the other's alone.
    expect((await csvBody({ token: other.token }, 'email\nbob.list@example.com\n')).body).toMatchObject({ added: 1 });
    expect((await listed({ token: other.token })).length).toBe(2);
  });
});
