import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import {
  CONTACT_KEYS,
  expectError,
  expectGqlError,
  expectValidation,
  FORBIDDEN_BODY,
  makeContact,
  makeGroup,
  NOT_FOUND_BODY,
  sorted,
} from '../helpers/contacts-groups.js';
import { addUser, createApiKey, heraldWithOrgs, ISO_MS, signupOrg, UUID_RE, type Client, type Credential, type Org } from '../helpers/herald.js';
import { sleep } from '../helpers/time.js';

let herald: Herald, api: Client;
let org: Org, other: Org; // both in country KE
let admin: Credential;

const CONTACT_FIELDS = '_id name email phone countryCode organization tags groupIds ServiceOrganization createdAt updatedAt';

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { signup: { country: 'KE' } }));
  admin = { token: org.token };
});
afterAll(() => herald?.stop());

const countContacts = async (orgId: string) => Number((await herald.db('contacts').where({ organization_id: orgId }).count({ n: '*' }).first())!.n);

describe('POST /contacts', () => {
  test('an email on a domain without a dot (a private relay) is accepted while private hosts are allowed', async () => {
    const res = await api.post('/contacts', { name: 'Root', email: 'Root@localhost' }, admin);
    expect(res.status).toBe(201);
    expect(res.body.email).toBe('root@localhost');
  });

  test('201 with every field; email lowercased, phone in E.164, tags deduplicated, groups stored', async () => {
    const g1 = await makeGroup(api, admin);
    const g2 = await makeGroup(api, admin);
    const res = await api.post(
      '/contacts',
      {
        name: 'Jane Doe',
        email: '  Jane.Doe@Example.COM ',
        phone: '0712345678',
        countryCode: '+254',
        organization: 'Globex Corp',
        tags: ['vip', 'lead', 'vip'],
        groups: [g1._id, g2._id, g1._id],
      },
      admin,
    );
    expect(res.status).toBe(201);
    const c = res.body;
    expect(sorted(c)).toEqual(CONTACT_KEYS);
    expect(c._id).toMatch(UUID_RE);
    expect(c).toMatchObject({
      name: 'Jane Doe',
      email: 'jane.doe@example.com',
      phone: '+254712345678',
      countryCode: '+254',
      organization: 'Globex Corp',
      tags: ['vip', 'lead'],
      ServiceOrganization: org.orgId,
    });
    expect([...c.groups].sort()).toEqual([g1._id, g2._id].sort());
    expect(c.createdAt).toMatch(ISO_MS);
    expect(c.updatedAt).toMatch(ISO_MS);
    expect(c.updatedAt).toBe(c.createdAt);

    // GET by id answers the same contact.
    const got = await api.get(`/contacts/${c._id}`, admin);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(c);

    // Stored as said: one membership row per group, in the caller's organization.
    const rows = await herald.db('contact_groups').where({ contact_id: c._id }).select('organization_id', 'group_id');
    expect(rows.map((r) => r.group_id).sort()).toEqual([g1._id, g2._id].sort());
    expect(new Set(rows.map((r) => r.organization_id))).toEqual(new Set([org.orgId]));
  });

  test('only name and one address are needed; the rest default to null or empty', async () => {
    const res = await api.post('/contacts', { name: 'Minimal', phone: '+14155552671' }, admin);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email: null, phone: '+14155552671', countryCode: null, organization: null, tags: [], groups: [] });
  });

  test('name is required (missing, empty or blank)', async () => {
    const before = await countContacts(org.orgId);
    expectValidation(await api.post('/contacts', { email: 'a@example.com' }, admin), ['name']);
    expectValidation(await api.post('/contacts', { name: '', email: 'a@example.com' }, admin), ['name']);
    expectValidation(await api.post('/contacts', { name: '   ', email: 'a@example.com' }, admin), ['name']);
    expectValidation(await api.post('/contacts', { name: 'x'.repeat(101), email: 'a@example.com' }, admin), ['name']);
    expectValidation(await api.post('/contacts', { name: 42, email: 'a@example.com' }, admin), ['name']);
    expect(await countContacts(org.orgId)).toBe(before);
  });

  test('at least one of email or phone is required', async () => {
    const before = await countContacts(org.orgId);
    for (const body of [{ name: 'No Address' }, { name: 'No Address', email: null, phone: null }]) {
      const res = await api.post('/contacts', body, admin);
      expectValidation(res, [/^(email|phone)$/]);
      expect(res.body.message).toMatch(/email/);
      expect(res.body.message).toMatch(/phone/);
    }
    expect(await countContacts(org.orgId)).toBe(before);
  });

  test('email is validated', async () => {
    for (const email of ['not-an-email', 'missing-at.example.com', 'a@', '@example.com', `${'a'.repeat(250)}@example.com`, 12]) {
      const res = await api.post('/contacts', { name: 'Bad Email', email }, admin);
      expectValidation(res, ['email']);
    }
  });

  describe('phone normalisation to E.164', () => {
    test.each([
      ['national with a calling code', { phone: '0712345678', countryCode: '+254' }, '+254712345678'],
      ['national with a region code', { phone: '0712 345-678', countryCode: 'KE' }, '+254712345678'],
      ['national, another country by calling code', { phone: '07400123456', countryCode: '+44' }, '+447400123456'],
      ['national without countryCode: the organization country (KE)', { phone: '0712345678' }, '+254712345678'],
      ['international with plus', { phone: '+14155552671' }, '+14155552671'],
      ['international without plus, same country', { phone: '254712345678' }, '+254712345678'],
      ['international without plus, another country', { phone: '14155552671' }, '+14155552671'],
    ])('%s', async (_label, fields, expected) => {
      const res = await api.post('/contacts', { name: 'Phone Person', ...fields }, admin);
      expect(res.status).toBe(201);
      expect(res.body.phone).toBe(expected);
      expect(res.body.countryCode).toBe((fields as { countryCode?: string }).countryCode ?? null);
    });

    test('national without countryCode in an organization whose country is a name (Kenya)', async () => {
      const kenya = await signupOrg(api, { country: 'Kenya' });
      const res = await api.post('/contacts', { name: 'Wanjiru', phone: '0712345678' }, { token: kenya.token });
      expect(res.status).toBe(201);
      expect(res.body.phone).toBe('+254712345678');
      expect(res.body.ServiceOrganization).toBe(kenya.orgId);
    });

    test('a national number in an organization with another country takes that country', async () => {
      const us = await signupOrg(api, { country: 'US', countryCode: '+1', phoneNumber: '4155550100' });
      const res = await api.post('/contacts', { name: 'Sam', phone: '415 555 2671' }, { token: us.token });
      expect(res.status).toBe(201);
      expect(res.body.phone).toBe('+14155552671');
    });

    test('invalid numbers are 400 naming phone, and nothing is stored', async () => {
      const before = await countContacts(org.orgId);
      for (const phone of ['12345', 'abc', '+1', '0712345678999999', '']) {
        const res = await api.post('/contacts', { name: 'Bad Phone', phone }, admin);
        expectValidation(res, ['phone']);
      }
      // A national number with no region to read it in (no countryCode, an organization country that is not one).
      const nowhere = await signupOrg(api, { country: 'Atlantis' });
      expectValidation(await api.post('/contacts', { name: 'Lost', phone: '0712345678' }, { token: nowhere.token }), ['phone']);
      expectValidation(await api.post('/contacts', { name: 'Bad code', phone: '0712345678', countryCode: 'Kenya!' }, admin), ['countryCode']);
      expect(await countContacts(org.orgId)).toBe(before);
    });
  });

  describe('tags', () => {
    test('at most 50 tags of at most 50 characters; boundaries accepted', async () => {
      const fifty = Array.from({ length: 50 }, (_, i) => `t${i}`.padEnd(50, 'x'));
      const ok = await api.post('/contacts', { name: 'Tagged', email: 'tagged@example.com', tags: fifty }, admin);
      expect(ok.status).toBe(201);
      expect(ok.body.tags).toEqual(fifty);

      const before = await countContacts(org.orgId);
      const many = Array.from({ length: 51 }, (_, i) => `t${i}`);
      expectValidation(await api.post('/contacts', { name: 'Too many', email: 'x@example.com', tags: many }, admin), ['tags']);
      expectValidation(await api.post('/contacts', { name: 'Too long', email: 'x@example.com', tags: ['ok', 'y'.repeat(51)] }, admin), [/^tags(\.1)?$/]);
      expectValidation(await api.post('/contacts', { name: 'Empty tag', email: 'x@example.com', tags: [''] }, admin), [/^tags/]);
      expectValidation(await api.post('/contacts', { name: 'Not a list', email: 'x@example.com', tags: 'vip' }, admin), ['tags']);
      expect(await countContacts(org.orgId)).toBe(before);
    });

    test('duplicate tags are collapsed, on create and update', async () => {
      const c = await makeContact(api, admin, { tags: ['a', 'b', 'a', 'b', 'c'] });
      expect(c.tags).toEqual(['a', 'b', 'c']);
      const upd = await api.put(`/contacts/${c._id}`, { tags: ['z', 'z', 'y'] }, admin);
      expect(upd.status).toBe(200);
      expect(upd.body.tags).toEqual(['z', 'y']);
    });
  });

  describe('groups', () => {
    test("another organization's group id is 400 and nothing is created", async () => {
      const theirs = await makeGroup(api, { token: other.token });
      const mine = await makeGroup(api, admin);
      const before = await countContacts(org.orgId);
      const beforeMemberships = await herald.db('contact_groups').where({ group_id: theirs._id }).count({ n: '*' }).first();
      const res = await api.post('/contacts', { name: 'Sneaky', email: 'sneaky@example.com', groups: [mine._id, theirs._id] }, admin);
      expectValidation(res, ['groups']);
      expect(res.body.message).toContain(theirs._id);
      expect(await countContacts(org.orgId)).toBe(before);
      expect(await herald.db('contacts').where({ organization_id: org.orgId, email: 'sneaky@example.com' }).first()).toBeUndefined();
      expect(await herald.db('contact_groups').where({ group_id: theirs._id }).count({ n: '*' }).first()).toEqual(beforeMemberships);
      expect((await api.get(`/groups/${mine._id}`, admin)).body.contactCount).toBe(0);
    });

    test('an unknown group id is 400 and nothing is created; a malformed one too', async () => {
      const before = await countContacts(org.orgId);
      const unknown = randomUUID();
      const res = await api.post('/contacts', { name: 'Ghost', email: 'ghost@example.com', groups: [unknown] }, admin);
      expectValidation(res, ['groups']);
      expect(res.body.message).toContain(unknown);
      expectValidation(await api.post('/contacts', { name: 'Ghost', email: 'ghost@example.com', groups: ['not-a-uuid'] }, admin), [/^groups/]);
      expect(await countContacts(org.orgId)).toBe(before);
    });

    test('a group id written in upper case is the same group: joined once, answered as stored', async () => {
      const mine = await makeGroup(api, admin);
      const res = await api.post('/contacts', { name: 'Caps', email: 'caps@example.com', groups: [mine._id.toUpperCase(), mine._id] }, admin);
      expect(res.status).toBe(201);
      expect(res.body.groups).toEqual([mine._id]);
      expect((await api.get(`/contacts/${res.body._id}`, admin)).body).toEqual(res.body);
      const updated = await api.put(`/contacts/${res.body._id}`, { groups: [mine._id.toUpperCase()] }, admin);
      expect(updated.status).toBe(200);
      expect(updated.body.groups).toEqual([mine._id]);
    });

    test("updating into another organization's group is 400 and the contact keeps its groups", async () => {
      const theirs = await makeGroup(api, { token: other.token });
      const mine = await makeGroup(api, admin);
      const c = await makeContact(api, admin, { groups: [mine._id] });
      expectValidation(await api.put(`/contacts/${c._id}`, { groups: [theirs._id], name: 'Renamed' }, admin), ['groups']);
      expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(c);
    });
  });

  test('unknown body fields are 400 naming the field, never stored', async () => {
    const before = await countContacts(org.orgId);
    const cases: Record<string, unknown> = {
      ServiceOrganization: other.orgId,
      _id: randomUUID(),
      createdAt: '2020-01-01T00:00:00.000Z',
      updatedAt: '2020-01-01T00:00:00.000Z',
      organization_id: other.orgId,
      groupIds: [],
    };
    for (const [field, value] of Object.entries(cases)) {
      const res = await api.post('/contacts', { name: 'Extra', email: 'extra@example.com', [field]: value }, admin);
      expectValidation(res, [field]);
    }
    expect(await countContacts(org.orgId)).toBe(before);

    const c = await makeContact(api, admin);
    for (const [field, value] of Object.entries(cases)) {
      expectValidation(await api.put(`/contacts/${c._id}`, { name: 'Changed', [field]: value }, admin), [field]);
    }
    expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(c);
  });

  test('a body that is not a JSON object is 400', async () => {
    expectError(await api.post('/contacts', '{"name": ', admin), 400);
    const arr = await api.post('/contacts', [{ name: 'x', email: 'x@example.com' }], admin);
    expect(arr.status).toBe(400);
    expect(arr.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  });
});

describe('GET, PUT and DELETE /contacts/:id', () => {
  test('a non-UUID or unknown id is 404 Resource not found', async () => {
    for (const id of ['not-a-uuid', '123', `${randomUUID()}x`, randomUUID()]) {
      for (const res of [
        await api.get(`/contacts/${id}`, admin),
        await api.put(`/contacts/${id}`, { name: 'Nobody' }, admin),
        await api.delete(`/contacts/${id}`, admin),
      ]) {
        expectError(res, 404, 'Resource not found');
        expect(res.body).toEqual(NOT_FOUND_BODY);
      }
    }
  });

  test("another organization's contact is 403 with nothing of it returned, and stays unchanged", async () => {
    const g = await makeGroup(api, { token: other.token });
    const theirs = await makeContact(api, { token: other.token }, {
      name: 'Secret Person',
      email: 'secret.person@example.com',
      phone: '+254712000111',
      tags: ['classified'],
      groups: [g._id],
    });
    const attempts = [
      await api.get(`/contacts/${theirs._id}`, admin),
      await api.put(`/contacts/${theirs._id}`, { name: 'Hijacked', email: 'hijacked@example.com', tags: [] }, admin),
      await api.delete(`/contacts/${theirs._id}`, admin),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN_BODY);
      const text = JSON.stringify(res.body);
      for (const secret of [theirs._id, 'Secret Person', 'secret.person', '712000111', 'classified', g._id, other.orgId]) {
        expect(text).not.toContain(secret);
      }
    }
    const after = await api.get(`/contacts/${theirs._id}`, { token: other.token });
    expect(after.status).toBe(200);
    expect(after.body).toEqual(theirs);
    // And it never shows in the caller's list.
    const list = await api.get('/contacts?limit=1000', admin);
    expect(list.body.map((c: any) => c._id)).not.toContain(theirs._id);
  });

  test('PUT is partial: only the given fields change, updatedAt moves', async () => {
    const g1 = await makeGroup(api, admin);
    const g2 = await makeGroup(api, admin);
    const c = await makeContact(api, admin, {
      name: 'Partial',
      email: 'partial@example.com',
      phone: '0712345670',
      countryCode: '+254',
      organization: 'Initech',
      tags: ['one'],
      groups: [g1._id],
    });
    await sleep(5);
    const res = await api.put(`/contacts/${c._id}`, { name: 'Partial Renamed' }, admin);
    expect(res.status).toBe(200);
    expect(sorted(res.body)).toEqual(CONTACT_KEYS);
    expect(res.body).toEqual({ ...c, name: 'Partial Renamed', updatedAt: res.body.updatedAt });
    expect(res.body.updatedAt).toMatch(ISO_MS);
    expect(res.body.updatedAt > c.updatedAt).toBe(true);

    // Email is lowercased, a national phone takes the stored countryCode, groups are replaced.
    const more = await api.put(`/contacts/${c._id}`, { email: 'New.Address@Example.ORG', phone: '0798765432', groups: [g2._id] }, admin);
    expect(more.status).toBe(200);
    expect(more.body).toMatchObject({ email: 'new.address@example.org', phone: '+254798765432', countryCode: '+254', groups: [g2._id], tags: ['one'] });
    expect((await api.get(`/groups/${g1._id}`, admin)).body.contactCount).toBe(0);
    expect((await api.get(`/groups/${g2._id}`, admin)).body.contactCount).toBe(1);

    // groups: [] clears the memberships.
    const cleared = await api.put(`/contacts/${c._id}`, { groups: [] }, admin);
    expect(cleared.body.groups).toEqual([]);
    expect(await herald.db('contact_groups').where({ contact_id: c._id }).first()).toBeUndefined();

    // An invalid phone or email on update is a 400 and changes nothing.
    const before = (await api.get(`/contacts/${c._id}`, admin)).body;
    expectValidation(await api.put(`/contacts/${c._id}`, { phone: '12345' }, admin), ['phone']);
    expectValidation(await api.put(`/contacts/${c._id}`, { email: 'nope' }, admin), ['email']);
    expectValidation(await api.put(`/contacts/${c._id}`, { name: '' }, admin), ['name']);
    expectValidation(await api.put(`/contacts/${c._id}`, { name: null }, admin), ['name']);
    expect((await api.get(`/contacts/${c._id}`, admin)).body).toEqual(before);
  });

  test('PUT that removes the only address is 400; removing one of two is fine', async () => {
    const emailOnly = await makeContact(api, admin, { email: 'only.email@example.com' });
    const res = await api.put(`/contacts/${emailOnly._id}`, { email: null }, admin);
    expectValidation(res, [/^(email|phone)$/]);
    expect((await api.get(`/contacts/${emailOnly._id}`, admin)).body).toEqual(emailOnly);

    const phoneOnly = await makeContact(api, admin, { email: undefined, phone: '+254712345699' });
    expect(phoneOnly.email).toBeNull();
    expectValidation(await api.put(`/contacts/${phoneOnly._id}`, { phone: null }, admin), [/^(email|phone)$/]);
    expect((await api.get(`/contacts/${phoneOnly._id}`, admin)).body).toEqual(phoneOnly);

    const both = await makeContact(api, admin, { email: 'both@example.com', phone: '+254712345698' });
    const dropped = await api.put(`/contacts/${both._id}`, { email: null }, admin);
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ email: null, phone: '+254712345698' });
    // Now phone is the only address left.
    expectValidation(await api.put(`/contacts/${both._id}`, { phone: null }, admin), [/^(email|phone)$/]);
    // Swapping in one request is fine.
    const swapped = await api.put(`/contacts/${both._id}`, { phone: null, email: 'Swapped@Example.com' }, admin);
    expect(swapped.status).toBe(200);
    expect(swapped.body).toMatchObject({ email: 'swapped@example.com', phone: null });
  });

  test('DELETE answers the message, then the contact is gone (404) with its memberships', async () => {
    const g = await makeGroup(api, admin);
    const c = await makeContact(api, admin, { groups: [g._id] });
    const res = await api.delete(`/contacts/${c._id}`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Contact deleted successfully' });
    expect(await api.get(`/contacts/${c._id}`, admin)).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    expect(await api.put(`/contacts/${c._id}`, { name: 'Zombie' }, admin)).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    expect(await api.delete(`/contacts/${c._id}`, admin)).toMatchObject({ status: 404, body: NOT_FOUND_BODY });
    expect(await herald.db('contacts').where({ id: c._id }).first()).toBeUndefined();
    expect(await herald.db('contact_groups').where({ contact_id: c._id }).first()).toBeUndefined();
    expect((await api.get(`/groups/${g._id}`, admin)).body.contactCount).toBe(0);
    // The group itself stays.
    expect((await api.get(`/groups/${g._id}`, admin)).status).toBe(200);
  });
});

describe('GraphQL door', () => {
  const create = `mutation ($input: CreateContactInput!) { createContact(input: $input) { ${CONTACT_FIELDS} groups { _id name } } }`;

  test('createContact, contact, updateContact and deleteContact follow the same rules', async () => {
    const g = await makeGroup(api, admin, { name: `GQL group ${randomUUID().slice(0, 6)}` });
    const res = await api.gql(
      create,
      { input: { name: 'Graph Q', email: 'Graph.Q@Example.com', phone: '0712345678', tags: ['x', 'x', 'y'], groups: [g._id], organization: 'Hooli' } },
      admin,
    );
    expect(res.body.errors).toBeUndefined();
    const c = res.body.data.createContact;
    expect(c).toMatchObject({
      name: 'Graph Q',
      email: 'graph.q@example.com',
      phone: '+254712345678',
      countryCode: null,
      organization: 'Hooli',
      tags: ['x', 'y'],
      groupIds: [g._id],
      groups: [{ _id: g._id, name: g.name }],
      ServiceOrganization: org.orgId,
    });
    expect(c._id).toMatch(UUID_RE);
    expect(c.createdAt).toMatch(ISO_MS);

    // The REST door sees the same contact.
    const rest = (await api.get(`/contacts/${c._id}`, admin)).body;
    expect(rest).toMatchObject({ _id: c._id, phone: c.phone, email: c.email, groups: [g._id], createdAt: c.createdAt });

    const got = await api.gql(`query ($id: ID!) { contact(id: $id) { ${CONTACT_FIELDS} } }`, { id: c._id }, admin);
    const { groups: _groups, ...plain } = c;
    expect(got.body.data.contact).toEqual(plain);

    const upd = await api.gql(
      `mutation ($id: ID!, $input: UpdateContactInput!) { updateContact(id: $id, input: $input) { name email phone groupIds } }`,
      { id: c._id, input: { name: 'Graph R', email: 'R@Example.com', groups: [] } },
      admin,
    );
    expect(upd.body.data.updateContact).toEqual({ name: 'Graph R', email: 'r@example.com', phone: '+254712345678', groupIds: [] });

    const del = await api.gql(`mutation ($id: ID!) { deleteContact(id: $id) { message } }`, { id: c._id }, admin);
    expect(del.body.data.deleteContact).toEqual({ message: 'Contact deleted successfully' });
    expectGqlError(await api.gql(`query ($id: ID!) { contact(id: $id) { _id } }`, { id: c._id }, admin), 404, 'NOT_FOUND', 'Resource not found');
  });

  test('validation errors carry statusCode 400, code BAD_REQUEST and details naming the field', async () => {
    const before = await countContacts(org.orgId);
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ name: 'P', phone: '12345' }, 'phone'],
      [{ name: 'E', email: 'nope' }, 'email'],
      [{ name: '', email: 'a@example.com' }, 'name'],
      [{ name: 'N' }, /^(email|phone)$/],
      [{ name: 'T', email: 'a@example.com', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
      [{ name: 'G', email: 'a@example.com', groups: [randomUUID()] }, 'groups'],
    ];
    for (const [input, field] of cases) {
      const err = expectGqlError(await api.gql(create, { input }, admin), 400, 'BAD_REQUEST');
      const fields = (err.extensions.details as { field: string }[]).map((d) => d.field);
      expect(fields.some((f) => (typeof field === 'string' ? f === field : field.test(f)))).toBe(true);
    }
    // Fields the input type does not have are refused by the schema itself.
    const extra = await api.gql(create, { input: { name: 'X', email: 'x@example.com', ServiceOrganization: other.orgId } }, admin);
    expect(extra.body.errors?.[0]?.extensions?.statusCode).toBe(400);
    expect(await countContacts(org.orgId)).toBe(before);
  });

  test("ids: malformed or unknown is 404, another organization's is 403 with no data", async () => {
    const theirs = await makeContact(api, { token: other.token }, { name: 'Their Secret', email: 'their.secret@example.com' });
    for (const id of ['nope', randomUUID()]) {
      expectGqlError(await api.gql(`query ($id: ID!) { contact(id: $id) { _id name } }`, { id }, admin), 404, 'NOT_FOUND', 'Resource not found');
    }
    const ops = [
      api.gql(`query ($id: ID!) { contact(id: $id) { _id name email } }`, { id: theirs._id }, admin),
      api.gql(`mutation ($id: ID!) { updateContact(id: $id, input: { name: "Hijacked" }) { _id name } }`, { id: theirs._id }, admin),
      api.gql(`mutation ($id: ID!) { deleteContact(id: $id) { message } }`, { id: theirs._id }, admin),
    ];
    for (const res of await Promise.all(ops)) {
      expectGqlError(res, 403, 'FORBIDDEN', 'Insufficient permissions');
      expect(JSON.stringify(res.body)).not.toMatch(/Their Secret|their\.secret/);
    }
    expect((await api.get(`/contacts/${theirs._id}`, { token: other.token })).body).toEqual(theirs);
  });
});

describe('role matrix for contacts and groups', () => {
  let contact: any;
  let group: any;
  let userJwt: Credential;
  let userKey: string;
  let adminKey: string;

  beforeAll(async () => {
    group = await makeGroup(api, admin, { name: `Role group ${randomUUID().slice(0, 6)}` });
    contact = await makeContact(api, admin, { name: 'Role Contact', groups: [group._id] });
    const member = await addUser(api, org, 'user');
    userJwt = { token: member.token };
    userKey = (await createApiKey(api, org, 'user')).key;
    adminKey = (await createApiKey(api, org, 'admin')).key;
  });

  const readers = () =>
    [
      ['user JWT', userJwt],
      ['user API key (header)', { apiKey: userKey }],
      ['user API key (?apikey=)', { queryKey: userKey }],
    ] as [string, Credential][];

  test.each([0, 1, 2])('user-role caller #%i reads contacts and groups over REST', async (i) => {
    const [, cred] = readers()[i]!;
    const list = await api.get('/contacts?limit=1000', cred);
    expect(list.status).toBe(200);
    expect(list.body.map((c: any) => c._id)).toContain(contact._id);
    expect(await api.get(`/contacts/${contact._id}`, cred)).toMatchObject({ status: 200, body: { _id: contact._id, name: 'Role Contact' } });
    const groups = await api.get('/groups?limit=1000', cred);
    expect(groups.status).toBe(200);
    expect(groups.body.map((g: any) => g._id)).toContain(group._id);
    expect(await api.get(`/groups/${group._id}`, cred)).toMatchObject({ status: 200, body: { _id: group._id, contactCount: 1 } });
    const filtered = await api.get(`/contacts?group=${group._id}`, cred);
    expect(filtered.body.map((c: any) => c._id)).toEqual([contact._id]);
  });

  test.each([0, 1, 2])('user-role caller #%i gets 403 on every contact and group write over REST, and nothing changes', async (i) => {
    const [, cred] = readers()[i]!;
    const contactsBefore = await countContacts(org.orgId);
    const groupsBefore = (await api.get('/groups?limit=1000', admin)).body.length;
    const attempts = [
      await api.post('/contacts', { name: 'Forbidden', email: 'forbidden@example.com' }, cred),
      await api.put(`/contacts/${contact._id}`, { name: 'Forbidden' }, cred),
      await api.delete(`/contacts/${contact._id}`, cred),
      await api.post('/groups', { name: `Forbidden ${i}`, color: 'bg-red-500' }, cred),
      await api.put(`/groups/${group._id}`, { name: 'Forbidden' }, cred),
      await api.delete(`/groups/${group._id}`, cred),
    ];
    for (const res of attempts) {
      expectError(res, 403, 'Insufficient permissions');
    }
    expect(await countContacts(org.orgId)).toBe(contactsBefore);
    expect((await api.get('/groups?limit=1000', admin)).body.length).toBe(groupsBefore);
    expect((await api.get(`/contacts/${contact._id}`, admin)).body).toEqual(contact);
    expect((await api.get(`/groups/${group._id}`, admin)).body).toMatchObject({ name: group.name, contactCount: 1 });
  });

  test.each([0, 1, 2])('user-role caller #%i reads over GraphQL and gets FORBIDDEN on mutations', async (i) => {
    const [, cred] = readers()[i]!;
    const read = await api.gql(
      `query ($id: ID!, $g: ID!) { contact(id: $id) { _id } group(id: $g) { _id contactCount } contacts(first: 50) { totalCount } groups(first: 50) { totalCount } }`,
      { id: contact._id, g: group._id },
      cred,
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.contact._id).toBe(contact._id);
    expect(read.body.data.group).toEqual({ _id: group._id, contactCount: 1 });
    const mutations = [
      [`mutation { createContact(input: { name: "F", email: "f@example.com" }) { _id } }`, {}],
      [`mutation ($id: ID!) { updateContact(id: $id, input: { name: "F" }) { _id } }`, { id: contact._id }],
      [`mutation ($id: ID!) { deleteContact(id: $id) { message } }`, { id: contact._id }],
      [`mutation { createGroup(input: { name: "F${i}", color: "bg-red-500" }) { _id } }`, {}],
      [`mutation ($id: ID!) { updateGroup(id: $id, input: { name: "F" }) { _id } }`, { id: group._id }],
      [`mutation ($id: ID!) { deleteGroup(id: $id) { message } }`, { id: group._id }],
    ] as const;
    for (const [m, vars] of mutations) {
      expectGqlError(await api.gql(m, vars, cred), 403, 'FORBIDDEN', 'Insufficient permissions');
    }
    expect((await api.get(`/contacts/${contact._id}`, admin)).body).toEqual(contact);
  });

  test('an admin-role API key creates, updates and deletes contacts and groups', async () => {
    for (const cred of [{ apiKey: adminKey }, { queryKey: adminKey }] as Credential[]) {
      const g = await api.post('/groups', { name: `Key group ${randomUUID().slice(0, 6)}`, color: 'bg-green-500' }, cred);
      expect(g.status).toBe(201);
      expect(g.body.organization).toBe(org.orgId);
      const c = await api.post('/contacts', { name: 'Key Contact', phone: '0712345600', groups: [g.body._id] }, cred);
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({ ServiceOrganization: org.orgId, phone: '+254712345600', groups: [g.body._id] });
      expect((await api.put(`/contacts/${c.body._id}`, { name: 'Key Contact 2' }, cred)).body.name).toBe('Key Contact 2');
      expect((await api.put(`/groups/${g.body._id}`, { description: 'by key' }, cred)).body.description).toBe('by key');
      expect((await api.delete(`/contacts/${c.body._id}`, cred)).body).toEqual({ message: 'Contact deleted successfully' });
      expect((await api.delete(`/groups/${g.body._id}`, cred)).body).toEqual({ message: 'Group deleted successfully' });
    }
    const gql = await api.gql(`mutation { createContact(input: { name: "Key GQL", email: "key.gql@example.com" }) { ServiceOrganization } }`, {}, { apiKey: adminKey });
    expect(gql.body.data.createContact.ServiceOrganization).toBe(org.orgId);
  });

  test('a user-role JWT can not escalate by sending both a token and a key', async () => {
    const res = await api.post('/contacts', { name: 'Two creds', email: 'two@example.com' }, { headers: { authorization: `Bearer ${(userJwt as { token: string }).token}`, 'unified-api-key': adminKey } });
    expectError(res, 400, 'Provide exactly one credential');
  });
});
