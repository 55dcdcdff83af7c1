import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import {
  compareNewestFirst,
  expectError,
  expectGqlError,
  expectValidation,
  FORBIDDEN_BODY,
  GROUP_KEYS,
  makeContact,
  makeGroup,
  NOT_FOUND_BODY,
  sorted,
} from '../helpers/contacts-groups.js';
import { heraldWithOrgs, ISO_MS, signupOrg, UUID_RE, type Client, type Credential, type Org } from '../helpers/herald.js';
import { sleep } from '../helpers/time.js';

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential, otherAdmin: Credential;

const uniq = () => randomUUID().slice(0, 8);

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  admin = { token: org.token };
  otherAdmin = { token: other.token };
});
afterAll(() => herald?.stop());

const countGroups = async (orgId: string) => Number((await herald.db('groups').where({ organization_id: orgId }).count({ n: '*' }).first())!.n);

describe('POST /groups', () => {
  test('201 with every field', async () => {
    const name = `Customers ${uniq()}`;
    const res = await api.post('/groups', { name, description: 'Paying customers', color: 'bg-blue-500 text-white hover:bg-blue-600' }, admin);
    expect(res.status).toBe(201);
    const g = res.body;
    expect(sorted(g)).toEqual(GROUP_KEYS);
    expect(g).toMatchObject({ name, description: 'Paying customers', color: 'bg-blue-500 text-white hover:bg-blue-600', organization: org.orgId, contactCount: 0 });
    expect(g._id).toMatch(UUID_RE);
    expect(g.createdAt).toMatch(ISO_MS);
    expect(g.updatedAt).toBe(g.createdAt);
    expect((await api.get(`/groups/${g._id}`, admin)).body).toEqual(g);

    const bare = await api.post('/groups', { name: `Bare ${uniq()}`, color: 'bg-[#1da1f2]' }, admin);
    expect(bare.status).toBe(201);
    expect(bare.body.description).toBeNull();
  });

  test('name and color are required and validated; nothing is stored on a 400', async () => {
    const before = await countGroups(org.orgId);
    expectValidation(await api.post('/groups', { name: `No color ${uniq()}` }, admin), ['color']);
    expectValidation(await api.post('/groups', { name: `Empty color ${uniq()}`, color: '' }, admin), ['color']);
    expectValidation(await api.post('/groups', { name: `Long color ${uniq()}`, color: `bg-${'a'.repeat(98)}` }, admin), ['color']);
    expectValidation(await api.post('/groups', { name: `Bad color ${uniq()}`, color: 'bg-red-500; drop table' }, admin), ['color']);
    expectValidation(await api.post('/groups', { color: 'bg-red-500' }, admin), ['name']);
    expectValidation(await api.post('/groups', { name: '  ', color: 'bg-red-500' }, admin), ['name']);
    expectValidation(await api.post('/groups', { name: 'x'.repeat(101), color: 'bg-red-500' }, admin), ['name']);
    expectValidation(await api.post('/groups', { name: `Long desc ${uniq()}`, color: 'bg-red-500', description: 'd'.repeat(501) }, admin), ['description']);
    const both = await api.post('/groups', {}, admin);
    expectValidation(both, ['name', 'color']);
    for (const field of ['organization', '_id', 'contactCount', 'createdAt']) {
      expectValidation(await api.post('/groups', { name: `Extra ${uniq()}`, color: 'bg-red-500', [field]: other.orgId }, admin), [field]);
    }
    expect(await countGroups(org.orgId)).toBe(before);
  });

  test('names are unique within an organization, case-insensitively; another organization may reuse them', async () => {
    const name = `Friends ${uniq()}`;
    await makeGroup(api, admin, { name });
    const before = await countGroups(org.orgId);
    for (const dup of [name, name.toUpperCase(), name.toLowerCase(), `  ${name}  `]) {
      const res = await api.post('/groups', { name: dup, color: 'bg-red-500' }, admin);
      expectError(res, 400, /name/i);
    }
    expect(await countGroups(org.orgId)).toBe(before);

    const elsewhere = await api.post('/groups', { name, color: 'bg-red-500' }, otherAdmin);
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.organization).toBe(other.orgId);
  });
});

describe('GET /groups', () => {
  test('lists the organization groups newest first, with X-Total-Count', async () => {
    const fresh = await signupOrg(api);
    const cred = { token: fresh.token };
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await makeGroup(api, cred, { name: `List ${i}` }));
    await makeGroup(api, otherAdmin, { name: `Not mine ${uniq()}` });
    const res = await api.get('/groups', cred);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-total-count')).toBe('4');
    expect(res.body.map((g: any) => g._id)).toEqual([...made].sort(compareNewestFirst).map((g) => g._id));
    for (const g of res.body) expect(sorted(g)).toEqual(GROUP_KEYS);

    const page = await api.get('/groups?limit=3', cred);
    expect(page.body).toHaveLength(3);
    expect(page.headers.get('link')).toMatch(/rel="next"/);
    expectValidation(await api.get('/groups?limit=0', cred), ['limit']);
  });
});

describe('GET, PUT and DELETE /groups/:id', () => {
  test('a non-UUID or unknown id is 404', async () => {
    for (const id of ['nope', '42', randomUUID()]) {
      for (const res of [await api.get(`/groups/${id}`, admin), await api.put(`/groups/${id}`, { name: 'X' }, admin), await api.delete(`/groups/${id}`, admin)]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(NOT_FOUND_BODY);
      }
    }
  });

  test("another organization's group is 403, reveals nothing and stays unchanged", async () => {
    const theirs = await makeGroup(api, otherAdmin, { name: `Their VIPs ${uniq()}`, description: 'top secret list' });
    for (const res of [
      await api.get(`/groups/${theirs._id}`, admin),
      await api.put(`/groups/${theirs._id}`, { name: 'Hijacked' }, admin),
      await api.delete(`/groups/${theirs._id}`, admin),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN_BODY);
      expect(JSON.stringify(res.body)).not.toMatch(/Their VIPs|top secret/);
    }
    expect((await api.get(`/groups/${theirs._id}`, otherAdmin)).body).toEqual(theirs);
  });

  test('PUT is partial; renaming onto an existing name (any case) is 400; renaming its own case is fine', async () => {
    const a = await makeGroup(api, admin, { name: `Alpha ${uniq()}`, description: 'first' });
    const b = await makeGroup(api, admin, { name: `Beta ${uniq()}` });
    await sleep(5);
    const res = await api.put(`/groups/${a._id}`, { color: 'bg-pink-300' }, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...a, color: 'bg-pink-300', updatedAt: res.body.updatedAt });
    expect(res.body.updatedAt > a.updatedAt).toBe(true);

    for (const name of [b.name, b.name.toUpperCase()]) {
      const dup = await api.put(`/groups/${a._id}`, { name }, admin);
      expectError(dup, 400, /name/i);
    }
    expect((await api.get(`/groups/${a._id}`, admin)).body.name).toBe(a.name);

    const recased = await api.put(`/groups/${a._id}`, { name: a.name.toUpperCase(), description: null }, admin);
    expect(recased.status).toBe(200);
    expect(recased.body).toMatchObject({ name: a.name.toUpperCase(), description: null });

    expectValidation(await api.put(`/groups/${a._id}`, { color: '' }, admin), ['color']);
    expectValidation(await api.put(`/groups/${a._id}`, { organization: other.orgId }, admin), ['organization']);
    expectValidation(await api.put(`/groups/${a._id}`, { contactCount: 99 }, admin), ['contactCount']);
  });

  test('contactCount reflects memberships as they change', async () => {
    const g1 = await makeGroup(api, admin);
    const g2 = await makeGroup(api, admin);
    const c1 = await makeContact(api, admin, { groups: [g1._id, g2._id] });
    const c2 = await makeContact(api, admin, { groups: [g1._id] });
    const c3 = await makeContact(api, admin, { groups: [g1._id, g1._id] });
    const count = async (id: string) => (await api.get(`/groups/${id}`, admin)).body.contactCount;
    expect([await count(g1._id), await count(g2._id)]).toEqual([3, 1]);

    // The list says the same.
    const list = (await api.get('/groups?limit=1000', admin)).body;
    expect(list.find((g: any) => g._id === g1._id).contactCount).toBe(3);
    expect(list.find((g: any) => g._id === g2._id).contactCount).toBe(1);

    await api.put(`/contacts/${c2._id}`, { groups: [g2._id] }, admin);
    expect([await count(g1._id), await count(g2._id)]).toEqual([2, 2]);
    await api.delete(`/contacts/${c3._id}`, admin);
    expect([await count(g1._id), await count(g2._id)]).toEqual([1, 2]);
    await api.put(`/contacts/${c1._id}`, { groups: [] }, admin);
    expect([await count(g1._id), await count(g2._id)]).toEqual([0, 1]);

    // GraphQL agrees, and Group.contacts lists the members.
    const gql = await api.gql(`query ($id: ID!) { group(id: $id) { contactCount contacts(first: 10) { totalCount edges { node { _id } } } } }`, { id: g2._id }, admin);
    expect(gql.body.data.group).toEqual({ contactCount: 1, contacts: { totalCount: 1, edges: [{ node: { _id: c2._id } }] } });
  });

  test('DELETE removes the group from every contact and from contact_groups; the contacts stay', async () => {
    const doomed = await makeGroup(api, admin, { name: `Doomed ${uniq()}` });
    const kept = await makeGroup(api, admin, { name: `Kept ${uniq()}` });
    const members = await Promise.all([
      makeContact(api, admin, { groups: [doomed._id] }),
      makeContact(api, admin, { groups: [doomed._id, kept._id] }),
      makeContact(api, admin, { groups: [kept._id] }),
    ]);
    expect(await herald.db('contact_groups').where({ organization_id: org.orgId, group_id: doomed._id }).count({ n: '*' }).first()).toEqual({ n: 2 });

    const res = await api.delete(`/groups/${doomed._id}`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Group deleted successfully' });

    expect(await api.get(`/groups/${doomed._id}`, admin)).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    expect(await api.delete(`/groups/${doomed._id}`, admin)).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    expect(await herald.db('contact_groups').where({ group_id: doomed._id }).first()).toBeUndefined();
    expect(await herald.db('groups').where({ id: doomed._id }).first()).toBeUndefined();

    const after = await Promise.all(members.map((m) => api.get(`/contacts/${m._id}`, admin)));
    expect(after.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(after.map((r) => r.body.groups)).toEqual([[], [kept._id], [kept._id]]);
    const gql = await api.gql(`query ($id: ID!) { contact(id: $id) { groupIds groups { _id } } }`, { id: members[1]._id }, admin);
    expect(gql.body.data.contact).toEqual({ groupIds: [kept._id], groups: [{ _id: kept._id }] });
    expect((await api.get(`/groups/${kept._id}`, admin)).body.contactCount).toBe(2);

    // A contact can no longer be put into the deleted group.
    expectValidation(await api.put(`/contacts/${members[2]._id}`, { groups: [doomed._id] }, admin), ['groups']);
    // Its name is free again.
    expect((await api.post('/groups', { name: doomed.name, color: 'bg-red-500' }, admin)).status).toBe(201);
  });
});

describe('GraphQL door', () => {
  const FIELDS = '_id name description color organization contactCount createdAt updatedAt';

  test('createGroup, group, groups, updateGroup and deleteGroup', async () => {
    const name = `GQL ${uniq()}`;
    const created = await api.gql(`mutation ($i: CreateGroupInput!) { createGroup(input: $i) { ${FIELDS} } }`, { i: { name, color: 'bg-teal-400' } }, admin);
    expect(created.body.errors).toBeUndefined();
    const g = created.body.data.createGroup;
    expect(g).toMatchObject({ name, description: null, color: 'bg-teal-400', organization: org.orgId, contactCount: 0 });
    expect(g.createdAt).toMatch(ISO_MS);

    expect((await api.gql(`query ($id: ID!) { group(id: $id) { ${FIELDS} } }`, { id: g._id }, admin)).body.data.group).toEqual(g);
    const list = await api.gql(`{ groups(first: 50) { totalCount edges { node { _id } } } }`, undefined, admin);
    expect(list.body.data.groups.edges.map((e: any) => e.node._id)).toContain(g._id);

    const dup = await api.gql(`mutation ($i: CreateGroupInput!) { createGroup(input: $i) { _id } }`, { i: { name: name.toLowerCase(), color: 'bg-red-500' } }, admin);
    expectGqlError(dup, 400, 'BAD_REQUEST');
    const noColor = await api.gql(`mutation ($i: CreateGroupInput!) { createGroup(input: $i) { _id } }`, { i: { name: `x ${uniq()}`, color: '' } }, admin);
    const err = expectGqlError(noColor, 400, 'BAD_REQUEST');
    expect([...new Set(err.extensions.details.map((d: any) => d.field))]).toEqual(['color']);

    const upd = await api.gql(`mutation ($id: ID!) { updateGroup(id: $id, input: { description: "desc" }) { name description } }`, { id: g._id }, admin);
    expect(upd.body.data.updateGroup).toEqual({ name, description: 'desc' });

    const theirs = await makeGroup(api, otherAdmin);
    expectGqlError(await api.gql(`query ($id: ID!) { group(id: $id) { _id name } }`, { id: theirs._id }, admin), 403, 'FORBIDDEN', 'Insufficient permissions');
    expectGqlError(await api.gql(`mutation ($id: ID!) { deleteGroup(id: $id) { message } }`, { id: theirs._id }, admin), 403, 'FORBIDDEN');
    expectGqlError(await api.gql(`query ($id: ID!) { group(id: $id) { _id } }`, { id: 'nope' }, admin), 404, 'NOT_FOUND', 'Resource not found');

    const del = await api.gql(`mutation ($id: ID!) { deleteGroup(id: $id) { message } }`, { id: g._id }, admin);
    expect(del.body.data.deleteGroup).toEqual({ message: 'Group deleted successfully' });
    expectGqlError(await api.gql(`query ($id: ID!) { group(id: $id) { _id } }`, { id: g._id }, admin), 404, 'NOT_FOUND');
  });
});
