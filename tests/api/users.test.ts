import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import {
  createApiKey,
  heraldWithClient,
  ISO_MS,
  randomClientAddress,
  signupOrg,
  uniqueEmail,
  USER_FIELDS,
  UUID_RE,
  type Client,
  type Credential,
  type Org,
  type Reply,
} from '../helpers/herald.js';
import { ERROR_KEYS, expectError, expectValidation, expectGqlError, sortedKeys as sorted } from '../helpers/expect.js';
import { sleep } from '../helpers/time.js';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient({ TRUST_PROXY: 'true' })));
afterAll(() => herald?.stop());

// Logins carry this file's own client address (see randomClientAddress).
const FROM_US = { 'x-forwarded-for': randomClientAddress() };

const USER_KEYS = [
  '_id',
  'countryCode',
  'createdAt',
  'email',
  'firstName',
  'isActive',
  'lastName',
  'organization',
  'phoneNumber',
  'role',
  'updatedAt',
];
const LISTED_KEYS = ['_id', 'createdAt', 'email', 'firstName', 'isActive', 'lastName', 'organization', 'role', 'updatedAt'];
const FORBIDDEN_BODY = { statusCode: 403, message: 'Insufficient permissions', error: 'Forbidden' };
const NOT_FOUND_BODY = { statusCode: 404, message: 'Resource not found', error: 'Not Found' };

/** A 400 about one query parameter: the error shape, with or without validation `details`. */
function expectBadParameter(res: Reply, param: string) {
  expect(res.status).toBe(400);
  const keys = sorted(res.body);
  expect([ERROR_KEYS, ['details', ...ERROR_KEYS].sort()]).toContainEqual(keys);
  expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  expect(res.body.message).toContain(param);
  if (res.body.details) expect(res.body.details.map((d: any) => d.field)).toEqual([param]);
}

function expectFullUser(u: any) {
  expect(sorted(u)).toEqual(USER_KEYS);
  expect(u._id).toMatch(UUID_RE);
  expect(u.createdAt).toMatch(ISO_MS);
  expect(u.updatedAt).toMatch(ISO_MS);
  expect(JSON.stringify(u)).not.toMatch(/password/i);
}

const login = (email: string, password: string) => api.post('/auth/login', { email, password }, undefined, FROM_US);

interface Member {
  token: string;
  user: any;
  email: string;
  password: string;
}

function memberBody(overrides: Record<string, unknown> = {}) {
  return {
    firstName: 'Grace',
    lastName: 'Hopper',
    email: uniqueEmail('member'),
    password: 'another good password',
    countryCode: '+254',
    phoneNumber: '700000001',
    ...overrides,
  };
}

/** Creates a user in the admin's organization through POST /users and logs them in. */
async function addMember(admin: { token: string }, role?: 'admin' | 'user', overrides: Record<string, unknown> = {}): Promise<Member> {
  const body = memberBody({ ...(role ? { role } : {}), ...overrides });
  const created = await api.post('/users', body, { token: admin.token });
  if (created.status !== 201) throw new Error(`create user failed: ${created.status} ${JSON.stringify(created.body)}`);
  const res = await login(body.email as string, body.password as string);
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.token, user: created.body, email: body.email as string, password: body.password as string };
}

async function listAll(admin: { token: string }): Promise<any[]> {
  const res = await api.get('/users?limit=1000', { token: admin.token });
  expect(res.status).toBe(200);
  return res.body;
}

async function findUser(admin: { token: string }, id: string) {
  return (await listAll(admin)).find((u) => u._id === id);
}

const gqlUserFields = `_id firstName lastName email countryCode phoneNumber role isActive createdAt updatedAt organization { _id }`;

/* ------------------------------------------------------------------------------------------ */

describe('GET /users', () => {
  let org: Org;
  let others: Member[];
  let foreign: Org;
  let foreignMember: Member;

  beforeAll(async () => {
    foreign = await signupOrg(api);
    foreignMember = await addMember(foreign);
    org = await signupOrg(api);
    others = [];
    for (let i = 0; i < 6; i++) {
      await sleep(3); // distinct milliseconds, so "newest first" has one right answer
      others.push(await addMember(org, i === 2 ? 'admin' : undefined));
    }
  });

  test('an admin gets exactly the documented fields of every user of the organization, newest first', async () => {
    const res = await api.get('/users', { token: org.token });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.headers.get('x-total-count')).toBe('7');
    expect(res.headers.get('link')).toBeNull();
    const expectedOrder = [...others.map((m) => m.user._id)].reverse().concat(org.user._id);
    expect(res.body.map((u: any) => u._id)).toEqual(expectedOrder);
    for (const u of res.body) {
      expect(sorted(u)).toEqual(LISTED_KEYS);
      expect(u.organization).toBe(org.orgId);
      expect(u._id).toMatch(UUID_RE);
      expect(u.createdAt).toMatch(ISO_MS);
      expect(u.updatedAt).toMatch(ISO_MS);
      expect(typeof u.isActive).toBe('boolean');
      expect(['admin', 'user']).toContain(u.role);
    }
    const created = others[0]!.user;
    expect(res.body.find((u: any) => u._id === created._id)).toEqual({
      _id: created._id,
      firstName: created.firstName,
      lastName: created.lastName,
      email: created.email,
      role: 'user',
      organization: org.orgId,
      isActive: true,
      createdAt: created.createdAt,
      updatedAt: created.updatedAt,
    });
    const ids = res.body.map((u: any) => u._id);
    expect(ids).not.toContain(foreign.user._id);
    expect(ids).not.toContain(foreignMember.user._id);
    const times = res.body.map((u: any) => Date.parse(u.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  test('limit and cursor walk every page once, following the Link header', async () => {
    const full = (await listAll(org)).map((u) => u._id);
    expect(full).toHaveLength(7);
    const seen: string[] = [];
    const sizes: number[] = [];
    let next: string | null = '/users?limit=2';
    while (next) {
      const res: Reply = await api.get(next, { token: org.token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total-count')).toBe('7');
      sizes.push(res.body.length);
      seen.push(...res.body.map((u: any) => u._id));
      const link = res.headers.get('link');
      if (link) {
        const m = /^<([^>]+)>; rel="next"$/.exec(link);
        expect(m).not.toBeNull();
        const url = new URL(m![1]!, herald.url);
        expect(url.searchParams.get('limit')).toBe('2');
        expect(url.searchParams.get('cursor')).toBeTruthy();
        next = url.pathname + url.search;
      } else {
        next = null;
      }
      expect(sizes.length).toBeLessThan(10);
    }
    expect(sizes).toEqual([2, 2, 2, 1]);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(full);
  });

  test('a page that holds the rest has no Link header', async () => {
    const res = await api.get('/users?limit=7', { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(7);
    expect(res.headers.get('link')).toBeNull();
    const big = await api.get('/users?limit=1000', { token: org.token });
    expect(big.status).toBe(200);
    expect(big.body).toHaveLength(7);
  });

  test.each(['0', '1001', 'abc', '-1', '1.5'])('limit=%p is 400', async (limit) => {
    expectBadParameter(await api.get(`/users?limit=${limit}`, { token: org.token }), 'limit');
  });

  test.each(['garbage', Buffer.from('not-a-date|not-a-uuid').toString('base64url'), 'x'.repeat(300)])('a bad cursor is 400', async (cursor) => {
    expectBadParameter(await api.get(`/users?cursor=${encodeURIComponent(cursor)}`, { token: org.token }), 'cursor');
  });

  test('the user role is 403 Insufficient permissions', async () => {
    const res = await api.get('/users', { token: others[0]!.token });
    expectError(res, 403, 'Insufficient permissions');
  });

  test.each(['admin', 'user'] as const)('an API key with role %s is 403', async (role) => {
    const { key } = await createApiKey(api, org, role);
    expectError(await api.get('/users', { apiKey: key }), 403, 'Insufficient permissions');
    expectError(await api.get('/users', { queryKey: key }), 403, 'Insufficient permissions');
  });

  test('no credential is 401', async () => {
    expectError(await api.get('/users'), 401);
  });

  test('GraphQL users is a connection that pages through the same list', async () => {
    const full = (await listAll(org)).map((u) => u._id);
    const q = `query($first: Int, $after: String) { users(first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${gqlUserFields} } } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res: Reply = await api.gql(q, { first: 3, after }, { token: org.token });
      expect(res.body.errors).toBeUndefined();
      const conn = res.body.data.users;
      expect(conn.totalCount).toBe(7);
      for (const edge of conn.edges) {
        expect(typeof edge.cursor).toBe('string');
        expect(edge.node.organization._id).toBe(org.orgId);
        expect(JSON.stringify(edge.node)).not.toMatch(/password/i);
      }
      seen.push(...conn.edges.map((e: any) => e.node._id));
      if (!conn.pageInfo.hasNextPage) break;
      expect(conn.pageInfo.endCursor).toBe(conn.edges[conn.edges.length - 1].cursor);
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual(full);

    const all = await api.gql(`{ users { totalCount pageInfo { hasNextPage } edges { node { _id } } } }`, undefined, { token: org.token });
    expect(all.body.data.users.edges.map((e: any) => e.node._id)).toEqual(full);
    expect(all.body.data.users.pageInfo.hasNextPage).toBe(false);
  });

  test('GraphQL users: bad first/after are 400, the user role and API keys are 403', async () => {
    const q = `query($first: Int, $after: String) { users(first: $first, after: $after) { totalCount } }`;
    expectGqlError(await api.gql(q, { first: 0 }, { token: org.token }), 400, 'BAD_REQUEST');
    expectGqlError(await api.gql(q, { first: 1001 }, { token: org.token }), 400, 'BAD_REQUEST');
    expectGqlError(await api.gql(q, { after: 'garbage' }, { token: org.token }), 400, 'BAD_REQUEST');
    const forbidden = await api.gql(q, {}, { token: others[0]!.token });
    expectGqlError(forbidden, 403, 'FORBIDDEN', 'Insufficient permissions');
    expect(forbidden.body.data).toBeNull();
    const { key } = await createApiKey(api, org, 'admin');
    expectGqlError(await api.gql(q, {}, { apiKey: key }), 403, 'FORBIDDEN');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('GET /users/me', () => {
  test('returns the caller with the organization embedded', async () => {
    const companyName = `Me Corp ${randomUUID().slice(0, 6)}`;
    const org = await signupOrg(api, { companyName, sector: 'Health', country: 'Kenya' });
    const res = await api.get('/users/me', { token: org.token });
    expect(res.status).toBe(200);
    expect(sorted(res.body)).toEqual(USER_KEYS);
    expect(res.body).toMatchObject({ _id: org.user._id, email: org.email, role: 'admin', isActive: true });
    expect(res.body.organization).toEqual({ _id: org.orgId, name: companyName, sector: 'Health', country: 'Kenya', credits: 100 });
    expect(JSON.stringify(res.body)).not.toMatch(/password/i);

    const member = await addMember(org);
    const mine = await api.get('/users/me', { token: member.token });
    expect(mine.status).toBe(200);
    expect(mine.body._id).toBe(member.user._id);
    expect(mine.body.role).toBe('user');
    expect(sorted(mine.body.organization)).toEqual(['_id', 'country', 'credits', 'name', 'sector']);
    expect(mine.body.organization._id).toBe(org.orgId);
  });

  test('API keys are 403, no credential 401', async () => {
    const org = await signupOrg(api);
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.get('/users/me', { apiKey: key }), 403, 'Insufficient permissions');
    expectError(await api.get('/users/me'), 401);
  });

  test('GraphQL me', async () => {
    const org = await signupOrg(api);
    const res = await api.gql(`{ me { ${gqlUserFields} organization { _id name sector country credits } } }`, undefined, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.me).toMatchObject({ _id: org.user._id, email: org.email, role: 'admin', isActive: true });
    expect(res.body.data.me.organization).toMatchObject({ _id: org.orgId, sector: 'Technology', country: 'KE', credits: 100 });
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('POST /users', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('creates an active user with the default role user', async () => {
    const body = memberBody({ firstName: 'Alan', lastName: 'Turing', phoneNumber: '711222333' });
    const res = await api.post('/users', body, { token: org.token });
    expect(res.status).toBe(201);
    expectFullUser(res.body);
    expect(res.body).toMatchObject({
      firstName: 'Alan',
      lastName: 'Turing',
      email: body.email,
      countryCode: '+254',
      phoneNumber: '711222333',
      role: 'user',
      organization: org.orgId,
      isActive: true,
    });
    const signedIn = await login(body.email, body.password);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.user).toMatchObject({ _id: res.body._id, role: 'user', organization: org.orgId });
    expect((await findUser(org, res.body._id))?.email).toBe(body.email);
  });

  test('role admin is allowed and the new admin can manage users', async () => {
    const admin = await addMember(org, 'admin');
    expect(admin.user.role).toBe('admin');
    expect((await api.get('/users', { token: admin.token })).status).toBe(200);
  });

  test('a duplicate email is 400 Email already exists, in any case and across organizations', async () => {
    const body = memberBody();
    expect((await api.post('/users', body, { token: org.token })).status).toBe(201);
    expectError(await api.post('/users', memberBody({ email: body.email }), { token: org.token }), 400, 'Email already exists');
    expectError(await api.post('/users', memberBody({ email: body.email.toUpperCase() }), { token: org.token }), 400, 'Email already exists');
    const other = await signupOrg(api);
    expectError(await api.post('/users', memberBody({ email: body.email }), { token: other.token }), 400, 'Email already exists');
    expectError(await api.post('/users', memberBody({ email: org.email }), { token: org.token }), 400, 'Email already exists');
  });

  test('validation names every failing field', async () => {
    const before = (await listAll(org)).length;
    expectValidation(await api.post('/users', {}, { token: org.token }), USER_FIELDS);
    expectValidation(
      await api.post(
        '/users',
        memberBody({ firstName: '', email: 'not-an-email', password: 'short', countryCode: '254', phoneNumber: 'abc', role: 'owner' }),
        { token: org.token },
      ),
      ['firstName', 'email', 'password', 'countryCode', 'phoneNumber', 'role'],
    );
    expectValidation(await api.post('/users', memberBody({ lastName: 'x'.repeat(101) }), { token: org.token }), ['lastName']);
    expectValidation(await api.post('/users', memberBody({ password: 'a'.repeat(73) }), { token: org.token }), ['password']);
    expectValidation(await api.post('/users', memberBody({ password: 'é'.repeat(37) }), { token: org.token }), ['password']);
    expectValidation(await api.post('/users', memberBody({ firstName: 42 }), { token: org.token }), ['firstName']);
    expect((await listAll(org)).length).toBe(before);
  });

  test('a password of exactly 72 bytes is accepted', async () => {
    const m = await addMember(org, undefined, { password: 'é'.repeat(36) });
    expect(m.token).toBeTruthy();
  });

  test.each([
    ['isActive', false],
    ['organization', '00000000-0000-4000-8000-000000000000'],
    ['_id', '00000000-0000-4000-8000-000000000001'],
    ['credits', 1000],
  ])('unknown field %s is 400 and nothing is created', async (field, value) => {
    const foreign = await signupOrg(api);
    const body = memberBody({ [field]: field === 'organization' ? foreign.orgId : value });
    const before = await listAll(org);
    const res = await api.post('/users', body, { token: org.token });
    expectValidation(res, [field]);
    const after = await listAll(org);
    expect(after.length).toBe(before.length);
    expect(after.map((u) => u.email)).not.toContain(body.email);
    expect((await listAll(foreign)).map((u) => u.email)).not.toContain(body.email);
  });

  test('the user role is 403 and nothing is created; API keys are 403', async () => {
    const member = await addMember(org);
    const before = (await listAll(org)).length;
    const body = memberBody();
    expectError(await api.post('/users', body, { token: member.token }), 403, 'Insufficient permissions');
    expectError(await api.post('/users', memberBody({ role: 'admin' }), { token: member.token }), 403, 'Insufficient permissions');
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.post('/users', memberBody(), { apiKey: key }), 403, 'Insufficient permissions');
    const after = await listAll(org);
    expect(after.length).toBe(before);
    expect(after.map((u) => u.email)).not.toContain(body.email);
  });

  test('GraphQL createUser', async () => {
    const m = `mutation($input: CreateUserInput!) { createUser(input: $input) { ${gqlUserFields} } }`;
    const body = memberBody();
    const res = await api.gql(m, { input: body }, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createUser).toMatchObject({ email: body.email, role: 'user', isActive: true, organization: { _id: org.orgId } });
    expect((await findUser(org, res.body.data.createUser._id))?.email).toBe(body.email);

    const admin = await api.gql(m, { input: memberBody({ role: 'admin' }) }, { token: org.token });
    expect(admin.body.data.createUser.role).toBe('admin');

    expectGqlError(await api.gql(m, { input: memberBody({ email: body.email }) }, { token: org.token }), 400, 'BAD_REQUEST', 'Email already exists');
    const invalid = await api.gql(m, { input: memberBody({ email: 'nope', password: 'short' }) }, { token: org.token });
    expectGqlError(invalid, 400, 'BAD_REQUEST');
    expect(invalid.body.errors![0].message).toContain('email');
    expect(invalid.body.errors![0].message).toContain('password');
    expect(invalid.body.errors![0].message).toContain('; ');

    const member = await addMember(org);
    const forbidden = await api.gql(m, { input: memberBody() }, { token: member.token });
    expectGqlError(forbidden, 403, 'FORBIDDEN', 'Insufficient permissions');
    expect(forbidden.body.data).toBeNull();
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('PUT /users/:id', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('updates only the given fields', async () => {
    const m = await addMember(org);
    const first = await api.put(`/users/${m.user._id}`, { firstName: 'Katherine' }, { token: org.token });
    expect(first.status).toBe(200);
    expectFullUser(first.body);
    expect(first.body).toMatchObject({
      _id: m.user._id,
      firstName: 'Katherine',
      lastName: m.user.lastName,
      phoneNumber: m.user.phoneNumber,
      email: m.email,
      role: 'user',
      isActive: true,
      createdAt: m.user.createdAt,
    });
    expect(Date.parse(first.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(m.user.updatedAt));

    const second = await api.put(`/users/${m.user._id}`, { lastName: 'Johnson', phoneNumber: '799888777' }, { token: org.token });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ firstName: 'Katherine', lastName: 'Johnson', phoneNumber: '799888777', role: 'user' });

    const listed = await findUser(org, m.user._id);
    expect(listed).toMatchObject({ firstName: 'Katherine', lastName: 'Johnson', role: 'user' });
  });

  test('role can be changed, and the new role applies', async () => {
    const m = await addMember(org);
    const res = await api.put(`/users/${m.user._id}`, { role: 'admin' }, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe('admin');
    const again = await login(m.email, m.password);
    expect((await api.get('/users', { token: again.body.token })).status).toBe(200);
    const back = await api.put(`/users/${m.user._id}`, { role: 'user' }, { token: org.token });
    expect(back.body.role).toBe('user');
    const fresh = await login(m.email, m.password);
    expectError(await api.get('/users', { token: fresh.body.token }), 403, 'Insufficient permissions');
  });

  test('email and other unlisted fields are 400 and change nothing', async () => {
    const m = await addMember(org);
    expectValidation(await api.put(`/users/${m.user._id}`, { email: uniqueEmail('new') }, { token: org.token }), ['email']);
    expectValidation(await api.put(`/users/${m.user._id}`, { firstName: 'Changed', isActive: false }, { token: org.token }), ['isActive']);
    expectValidation(await api.put(`/users/${m.user._id}`, { countryCode: '+1' }, { token: org.token }), ['countryCode']);
    expectValidation(await api.put(`/users/${m.user._id}`, { password: 'new password 123' }, { token: org.token }), ['password']);
    expectValidation(await api.put(`/users/${m.user._id}`, { phoneNumber: 'abc', role: 'root', firstName: '' }, { token: org.token }), [
      'phoneNumber',
      'role',
      'firstName',
    ]);
    const listed = await findUser(org, m.user._id);
    expect(listed).toMatchObject({ email: m.email, firstName: m.user.firstName, isActive: true, role: 'user' });
  });

  test('a path id that is not a UUID, or unknown, is 404 Resource not found', async () => {
    expectError(await api.put('/users/not-a-uuid', { firstName: 'X' }, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put('/users/12345', { firstName: 'X' }, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put(`/users/${randomUUID()}`, { firstName: 'X' }, { token: org.token }), 404, 'Resource not found');
  });

  test("another organization's user is 403 and stays unchanged", async () => {
    const other = await signupOrg(api);
    const victim = await addMember(other);
    const res = await api.put(`/users/${victim.user._id}`, { firstName: 'Hacked', role: 'admin' }, { token: org.token });
    expect(res.body).toEqual(FORBIDDEN_BODY);
    expect(res.status).toBe(403);
    const seen = await findUser(other, victim.user._id);
    expect(seen).toMatchObject({ firstName: victim.user.firstName, role: 'user', isActive: true, updatedAt: victim.user.updatedAt });
  });

  test('the user role is 403, also on itself; API keys are 403', async () => {
    const m = await addMember(org);
    expectError(await api.put(`/users/${m.user._id}`, { role: 'admin' }, { token: m.token }), 403, 'Insufficient permissions');
    expectError(await api.put(`/users/${org.user._id}`, { firstName: 'X' }, { token: m.token }), 403, 'Insufficient permissions');
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.put(`/users/${m.user._id}`, { firstName: 'X' }, { apiKey: key }), 403, 'Insufficient permissions');
    expect(await findUser(org, m.user._id)).toMatchObject({ role: 'user', firstName: m.user.firstName });
  });

  test('GraphQL updateUser', async () => {
    const m = await addMember(org);
    const q = `mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { ${gqlUserFields} } }`;
    const res = await api.gql(q, { id: m.user._id, input: { lastName: 'Lamarr' } }, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateUser).toMatchObject({ _id: m.user._id, firstName: m.user.firstName, lastName: 'Lamarr', role: 'user' });
    expectGqlError(await api.gql(q, { id: randomUUID(), input: { lastName: 'X' } }, { token: org.token }), 404, 'NOT_FOUND', 'Resource not found');
    expectGqlError(await api.gql(q, { id: 'nope', input: { lastName: 'X' } }, { token: org.token }), 404, 'NOT_FOUND', 'Resource not found');
    expectGqlError(await api.gql(q, { id: m.user._id, input: { phoneNumber: 'abc' } }, { token: org.token }), 400, 'BAD_REQUEST');
    expectGqlError(await api.gql(q, { id: m.user._id, input: { role: 'admin' } }, { token: m.token }), 403, 'FORBIDDEN');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('deactivate and reactivate', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('deactivation stops logins and tokens; reactivation restores logins', async () => {
    const m = await addMember(org);
    const off = await api.put(`/users/${m.user._id}/deactivate`, undefined, { token: org.token });
    expect(off.status).toBe(200);
    expectFullUser(off.body);
    expect(off.body).toMatchObject({ _id: m.user._id, isActive: false, email: m.email });
    expect((await findUser(org, m.user._id))?.isActive).toBe(false);

    expectError(await login(m.email, m.password), 401, 'Invalid credentials');
    expectError(await api.get('/users/me', { token: m.token }), 401);

    const on = await api.put(`/users/${m.user._id}/reactivate`, undefined, { token: org.token });
    expect(on.status).toBe(200);
    expectFullUser(on.body);
    expect(on.body.isActive).toBe(true);
    expect((await findUser(org, m.user._id))?.isActive).toBe(true);
    const back = await login(m.email, m.password);
    expect(back.status).toBe(200);
    expect((await api.get('/users/me', { token: back.body.token })).status).toBe(200);
  });

  test('bad, unknown ids are 404; the user role and API keys are 403', async () => {
    const m = await addMember(org);
    for (const action of ['deactivate', 'reactivate']) {
      expectError(await api.put(`/users/abc/${action}`, undefined, { token: org.token }), 404, 'Resource not found');
      expectError(await api.put(`/users/${randomUUID()}/${action}`, undefined, { token: org.token }), 404, 'Resource not found');
      expectError(await api.put(`/users/${org.user._id}/${action}`, undefined, { token: m.token }), 403, 'Insufficient permissions');
    }
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.put(`/users/${m.user._id}/deactivate`, undefined, { apiKey: key }), 403, 'Insufficient permissions');
    expect((await findUser(org, org.user._id))?.isActive).toBe(true);
    expect((await findUser(org, m.user._id))?.isActive).toBe(true);
  });

  test('GraphQL deactivateUser / reactivateUser', async () => {
    const m = await addMember(org);
    const off = await api.gql(`mutation($id: ID!) { deactivateUser(id: $id) { _id isActive } }`, { id: m.user._id }, { token: org.token });
    expect(off.body).toEqual({ data: { deactivateUser: { _id: m.user._id, isActive: false } } });
    expectError(await login(m.email, m.password), 401, 'Invalid credentials');
    const on = await api.gql(`mutation($id: ID!) { reactivateUser(id: $id) { _id isActive } }`, { id: m.user._id }, { token: org.token });
    expect(on.body).toEqual({ data: { reactivateUser: { _id: m.user._id, isActive: true } } });
    expect((await login(m.email, m.password)).status).toBe(200);
    expectGqlError(
      await api.gql(`mutation($id: ID!) { deactivateUser(id: $id) { _id } }`, { id: randomUUID() }, { token: org.token }),
      404,
      'NOT_FOUND',
    );
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('DELETE /users/:id', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('deletes permanently', async () => {
    const m = await addMember(org);
    const res = await api.delete(`/users/${m.user._id}`, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'User Deleted Successfully' });

    expect((await listAll(org)).map((u) => u._id)).not.toContain(m.user._id);
    expect(await herald.db('users').where({ id: m.user._id }).first()).toBeUndefined();
    expectError(await api.delete(`/users/${m.user._id}`, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put(`/users/${m.user._id}`, { firstName: 'Z' }, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put(`/users/${m.user._id}/reactivate`, undefined, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put(`/users/${m.user._id}/password`, { newPassword: 'whatever 12345' }, { token: org.token }), 404, 'Resource not found');
    expectError(await api.get(`/users/${m.user._id}`, { token: org.token }), 404, 'Resource not found');
    expectError(await api.get('/users/me', { token: m.token }), 401);
    expectError(await login(m.email, m.password), 401, 'Invalid credentials');
  });

  test('bad, unknown ids are 404; the user role and API keys are 403', async () => {
    const m = await addMember(org);
    const victim = await addMember(org);
    expectError(await api.delete('/users/zzz', { token: org.token }), 404, 'Resource not found');
    expectError(await api.delete(`/users/${randomUUID()}`, { token: org.token }), 404, 'Resource not found');
    expectError(await api.delete(`/users/${victim.user._id}`, { token: m.token }), 403, 'Insufficient permissions');
    expectError(await api.delete(`/users/${m.user._id}`, { token: m.token }), 403, 'Insufficient permissions');
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.delete(`/users/${victim.user._id}`, { apiKey: key }), 403, 'Insufficient permissions');
    const ids = (await listAll(org)).map((u) => u._id);
    expect(ids).toContain(victim.user._id);
    expect(ids).toContain(m.user._id);
  });

  test('GraphQL deleteUser', async () => {
    const m = await addMember(org);
    const q = `mutation($id: ID!) { deleteUser(id: $id) { message } }`;
    const res = await api.gql(q, { id: m.user._id }, { token: org.token });
    expect(res.body).toEqual({ data: { deleteUser: { message: 'User Deleted Successfully' } } });
    expectGqlError(await api.gql(q, { id: m.user._id }, { token: org.token }), 404, 'NOT_FOUND', 'Resource not found');
    const user = await api.gql(`query($id: ID!) { user(id: $id) { _id } }`, { id: m.user._id }, { token: org.token });
    expectGqlError(user, 404, 'NOT_FOUND');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('the last active admin', () => {
  function expectConflict(res: Reply) {
    expectError(res, 409);
    expect(res.body.error).toBe('Conflict');
  }

  test('can not be demoted, deactivated or deleted', async () => {
    const org = await signupOrg(api);
    const member = await addMember(org);
    expectConflict(await api.put(`/users/${org.user._id}`, { role: 'user' }, { token: org.token }));
    expectConflict(await api.put(`/users/${org.user._id}/deactivate`, undefined, { token: org.token }));
    expectConflict(await api.delete(`/users/${org.user._id}`, { token: org.token }));
    const me = await api.get('/users/me', { token: org.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ role: 'admin', isActive: true });
    // A plain user can still be changed freely.
    expect((await api.put(`/users/${member.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    // A change that keeps the role is no conflict.
    const renamed = await api.put(`/users/${org.user._id}`, { firstName: 'Still', role: 'admin' }, { token: org.token });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ firstName: 'Still', role: 'admin' });
  });

  test('an inactive second admin does not count', async () => {
    const org = await signupOrg(api);
    const second = await addMember(org, 'admin');
    expect((await api.put(`/users/${second.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    expectConflict(await api.put(`/users/${org.user._id}`, { role: 'user' }, { token: org.token }));
    expectConflict(await api.put(`/users/${org.user._id}/deactivate`, undefined, { token: org.token }));
    expectConflict(await api.delete(`/users/${org.user._id}`, { token: org.token }));
    // Deleting or demoting the inactive admin is fine: it is not an active admin.
    expect((await api.put(`/users/${second.user._id}`, { role: 'user' }, { token: org.token })).status).toBe(200);
  });

  test('with a second active admin, demotion, deactivation and deletion work until one admin is left', async () => {
    const org = await signupOrg(api);
    const second = await addMember(org, 'admin');
    const third = await addMember(org, 'admin');

    const demoted = await api.put(`/users/${org.user._id}`, { role: 'user' }, { token: second.token });
    expect(demoted.status).toBe(200);
    expect(demoted.body.role).toBe('user');

    const off = await api.put(`/users/${third.user._id}/deactivate`, undefined, { token: second.token });
    expect(off.status).toBe(200);
    expect(off.body.isActive).toBe(false);
    // `second` is now the only active admin.
    expectConflict(await api.put(`/users/${second.user._id}`, { role: 'user' }, { token: second.token }));
    expectConflict(await api.put(`/users/${second.user._id}/deactivate`, undefined, { token: second.token }));
    expectConflict(await api.delete(`/users/${second.user._id}`, { token: second.token }));

    const on = await api.put(`/users/${third.user._id}/reactivate`, undefined, { token: second.token });
    expect(on.body.isActive).toBe(true);
    const thirdAgain = await login(third.email, third.password);
    const deleted = await api.delete(`/users/${second.user._id}`, { token: thirdAgain.body.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'User Deleted Successfully' });

    const users = await listAll({ token: thirdAgain.body.token });
    expect(users.filter((u) => u.role === 'admin' && u.isActive).map((u) => u._id)).toEqual([third.user._id]);
  });

  test('GraphQL answers 409 CONFLICT', async () => {
    const org = await signupOrg(api);
    const update = await api.gql(
      `mutation($id: ID!) { updateUser(id: $id, input: { role: user }) { _id role } }`,
      { id: org.user._id },
      { token: org.token },
    );
    expectGqlError(update, 409, 'CONFLICT');
    expect(update.body.data).toBeNull();
    expectGqlError(await api.gql(`mutation($id: ID!) { deactivateUser(id: $id) { _id } }`, { id: org.user._id }, { token: org.token }), 409, 'CONFLICT');
    expectGqlError(await api.gql(`mutation($id: ID!) { deleteUser(id: $id) { message } }`, { id: org.user._id }, { token: org.token }), 409, 'CONFLICT');
    expect((await api.get('/users/me', { token: org.token })).body).toMatchObject({ role: 'admin', isActive: true });
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('an admin acting on themself', () => {
  test('can not deactivate or delete themself (400), while another admin can', async () => {
    const org = await signupOrg(api);
    const second = await addMember(org, 'admin');
    expectError(await api.put(`/users/${org.user._id}/deactivate`, undefined, { token: org.token }), 400, 'You can not deactivate yourself: ask another admin');
    expectError(await api.delete(`/users/${org.user._id}`, { token: org.token }), 400, 'You can not delete yourself: ask another admin');
    expect(await findUser(org, org.user._id)).toMatchObject({ isActive: true });
    const audit = await api.get('/audit-log?action=user.&limit=1000', { token: org.token });
    expect(audit.body.filter((e: any) => e.resourceId === org.user._id && /deactivated|deleted/.test(e.action))).toEqual([]);

    // Demoting oneself stays allowed while another admin remains; another admin deactivates and deletes.
    expect((await api.put(`/users/${second.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    expect((await api.put(`/users/${second.user._id}/reactivate`, undefined, { token: org.token })).status).toBe(200);
    expect((await api.delete(`/users/${org.user._id}`, { token: second.token })).status).toBe(200);
  });

  test('GraphQL answers 400 BAD_REQUEST', async () => {
    const org = await signupOrg(api);
    await addMember(org, 'admin');
    expectGqlError(
      await api.gql(`mutation($id: ID!) { deactivateUser(id: $id) { _id } }`, { id: org.user._id }, { token: org.token }),
      400,
      'BAD_REQUEST',
      'You can not deactivate yourself: ask another admin',
    );
    expectGqlError(
      await api.gql(`mutation($id: ID!) { deleteUser(id: $id) { message } }`, { id: org.user._id }, { token: org.token }),
      400,
      'BAD_REQUEST',
      'You can not delete yourself: ask another admin',
    );
    expect((await api.get('/users/me', { token: org.token })).body).toMatchObject({ isActive: true });
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('PUT /users/:id/password', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('a self-change needs the correct old password', async () => {
    const m = await addMember(org);
    const path = `/users/${m.user._id}/password`;
    expectValidation(await api.put(path, { newPassword: 'brand new password' }, { token: m.token }), ['oldPassword']);
    expectError(await api.put(path, { oldPassword: 'wrong password!', newPassword: 'brand new password' }, { token: m.token }), 400, 'Old password is incorrect');
    expectValidation(await api.put(path, { oldPassword: m.password, newPassword: 'short' }, { token: m.token }), ['newPassword']);
    expectValidation(await api.put(path, { oldPassword: m.password, newPassword: 'a'.repeat(73) }, { token: m.token }), ['newPassword']);
    expectValidation(await api.put(path, { oldPassword: m.password, newPassword: 'é'.repeat(37) }, { token: m.token }), ['newPassword']);
    expectValidation(await api.put(path, { oldPassword: m.password }, { token: m.token }), ['newPassword']);
    expectValidation(await api.put(path, { oldPassword: m.password, newPassword: 'brand new password', role: 'admin' }, { token: m.token }), ['role']);
    // Nothing changed yet.
    const still = await login(m.email, m.password);
    expect(still.status).toBe(200);

    const res = await api.put(path, { oldPassword: m.password, newPassword: 'brand new password' }, { token: still.body.token });
    expect(res.status).toBe(200);
    expectFullUser(res.body);
    expect(res.body).toMatchObject({ _id: m.user._id, email: m.email, role: 'user', isActive: true });

    expectError(await login(m.email, m.password), 401, 'Invalid credentials');
    const fresh = await login(m.email, 'brand new password');
    expect(fresh.status).toBe(200);
    expect((await api.get('/users/me', { token: fresh.body.token })).status).toBe(200);
  });

  test('a new password of exactly 72 bytes works', async () => {
    const m = await addMember(org);
    const pw = 'é'.repeat(36);
    const res = await api.put(`/users/${m.user._id}/password`, { oldPassword: m.password, newPassword: pw }, { token: m.token });
    expect(res.status).toBe(200);
    expect((await login(m.email, pw)).status).toBe(200);
  });

  test('an admin resets another user of the organization without the old password', async () => {
    const m = await addMember(org);
    const res = await api.put(`/users/${m.user._id}/password`, { newPassword: 'reset by the admin' }, { token: org.token });
    expect(res.status).toBe(200);
    expectFullUser(res.body);
    expect(res.body._id).toBe(m.user._id);
    expect((await login(m.email, 'reset by the admin')).status).toBe(200);
    // The admin's own password is untouched.
    expect((await login(org.email, org.password)).status).toBe(200);
  });

  test('an admin changing their own password still needs the old one', async () => {
    const admin = await addMember(org, 'admin');
    const path = `/users/${admin.user._id}/password`;
    expectValidation(await api.put(path, { newPassword: 'admin new password' }, { token: admin.token }), ['oldPassword']);
    expectError(await api.put(path, { oldPassword: 'not the password', newPassword: 'admin new password' }, { token: admin.token }), 400, 'Old password is incorrect');
    expect((await login(admin.email, admin.password)).status).toBe(200);
  });

  test("a user changing someone else's password is 403", async () => {
    const m = await addMember(org);
    const other = await addMember(org);
    expectError(await api.put(`/users/${other.user._id}/password`, { oldPassword: other.password, newPassword: 'taken over 123' }, { token: m.token }), 403, 'Insufficient permissions');
    expectError(await api.put(`/users/${org.user._id}/password`, { newPassword: 'taken over 123' }, { token: m.token }), 403, 'Insufficient permissions');
    expect((await login(other.email, other.password)).status).toBe(200);
    expect((await login(org.email, org.password)).status).toBe(200);
  });

  test('bad or unknown ids are 404; API keys are 403', async () => {
    expectError(await api.put('/users/nope/password', { newPassword: 'whatever 12345' }, { token: org.token }), 404, 'Resource not found');
    expectError(await api.put(`/users/${randomUUID()}/password`, { newPassword: 'whatever 12345' }, { token: org.token }), 404, 'Resource not found');
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.put(`/users/${org.user._id}/password`, { newPassword: 'whatever 12345' }, { apiKey: key }), 403, 'Insufficient permissions');
  });

  test('GraphQL changePassword', async () => {
    const m = await addMember(org);
    const q = `mutation($id: ID!, $input: ChangePasswordInput!) { changePassword(id: $id, input: $input) { ${gqlUserFields} } }`;
    expectGqlError(
      await api.gql(q, { id: m.user._id, input: { oldPassword: 'incorrect!!', newPassword: 'graph new password' } }, { token: m.token }),
      400,
      'BAD_REQUEST',
      'Old password is incorrect',
    );
    const res = await api.gql(q, { id: m.user._id, input: { oldPassword: m.password, newPassword: 'graph new password' } }, { token: m.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.changePassword._id).toBe(m.user._id);
    expect((await login(m.email, 'graph new password')).status).toBe(200);
    const other = await addMember(org);
    expectGqlError(await api.gql(q, { id: other.user._id, input: { newPassword: 'graph new password' } }, { token: (await login(m.email, 'graph new password')).body.token }), 403, 'FORBIDDEN');
    const reset = await api.gql(q, { id: other.user._id, input: { newPassword: 'admin graph reset' } }, { token: org.token });
    expect(reset.body.errors).toBeUndefined();
    expect((await login(other.email, 'admin graph reset')).status).toBe(200);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('tenant isolation', () => {
  let a: Org;
  let aUser: Member;
  let b: Org;
  let bUser: Member;

  beforeAll(async () => {
    a = await signupOrg(api);
    aUser = await addMember(a, undefined, { firstName: 'Secretive', lastName: 'Tenant', phoneNumber: '798765432' });
    b = await signupOrg(api);
    bUser = await addMember(b);
  });

  const restOps = (id: string): [string, string, unknown][] => [
    ['GET', `/users/${id}`, undefined],
    ['PUT', `/users/${id}`, { firstName: 'Hacked' }],
    ['PUT', `/users/${id}`, { role: 'user' }],
    ['PUT', `/users/${id}/deactivate`, undefined],
    ['PUT', `/users/${id}/reactivate`, undefined],
    ['PUT', `/users/${id}/password`, { newPassword: 'hijacked password' }],
    ['PUT', `/users/${id}/password`, { oldPassword: 'another good password', newPassword: 'hijacked password' }],
    ['DELETE', `/users/${id}`, undefined],
  ];

  function leaksNothing(body: unknown, target: Member | Org) {
    const text = JSON.stringify(body);
    expect(text).not.toContain(target.email);
    expect(text).not.toContain('Secretive');
    expect(text).not.toContain('798765432');
    expect(text).not.toContain(a.orgId);
  }

  test.each(['admin', 'user'] as const)("org B's %s gets 403 and nothing of A on every REST user operation", async (who) => {
    const caller: Credential = { token: who === 'admin' ? b.token : bUser.token };
    for (const target of [aUser, a]) {
      for (const [method, path, body] of restOps(target.user._id)) {
        const res = await api.raw(method, path, body, caller);
        // A plain user is refused for admin-only operations whatever the id; what matters is 403 and no data.
        expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
        expect(res.body).toEqual(FORBIDDEN_BODY);
        leaksNothing(res.body, target);
      }
    }
    // A's users are untouched and can still sign in with their passwords.
    const users = await listAll(a);
    expect(users.find((u) => u._id === aUser.user._id)).toMatchObject({
      firstName: 'Secretive',
      role: 'user',
      isActive: true,
      updatedAt: aUser.user.updatedAt,
    });
    expect(users.find((u) => u._id === a.user._id)).toMatchObject({ role: 'admin', isActive: true });
    expect((await login(aUser.email, aUser.password)).status).toBe(200);
    expect((await login(a.email, a.password)).status).toBe(200);
  });

  test("org B's admin gets 403 and nothing of A on every GraphQL user operation", async () => {
    const id = aUser.user._id;
    const ops: [string, Record<string, unknown>][] = [
      [`query($id: ID!) { user(id: $id) { ${gqlUserFields} } }`, { id }],
      [`mutation($id: ID!) { updateUser(id: $id, input: { firstName: "Hacked" }) { ${gqlUserFields} } }`, { id }],
      [`mutation($id: ID!) { deactivateUser(id: $id) { ${gqlUserFields} } }`, { id }],
      [`mutation($id: ID!) { reactivateUser(id: $id) { ${gqlUserFields} } }`, { id }],
      [`mutation($id: ID!) { deleteUser(id: $id) { message } }`, { id }],
      [`mutation($id: ID!) { changePassword(id: $id, input: { newPassword: "hijacked password" }) { ${gqlUserFields} } }`, { id }],
    ];
    for (const [q, vars] of ops) {
      const res = await api.gql(q, vars, { token: b.token });
      expectGqlError(res, 403, 'FORBIDDEN', 'Insufficient permissions');
      expect(res.body.data).toBeNull();
      leaksNothing(res.body, aUser);
    }
    expect(await findUser(a, id)).toMatchObject({ firstName: 'Secretive', isActive: true, updatedAt: aUser.user.updatedAt });
    expect((await login(aUser.email, aUser.password)).status).toBe(200);
  });

  test('a user reads only themself through GraphQL user(id); an admin reads anyone of the organization', async () => {
    const q = `query($id: ID!) { user(id: $id) { _id email } }`;
    expect((await api.gql(q, { id: aUser.user._id }, { token: a.token })).body.data.user).toEqual({ _id: aUser.user._id, email: aUser.email });
    expect((await api.gql(q, { id: bUser.user._id }, { token: bUser.token })).body.data.user._id).toBe(bUser.user._id);
    expectGqlError(await api.gql(q, { id: b.user._id }, { token: bUser.token }), 403, 'FORBIDDEN');
    expectGqlError(await api.gql(q, { id: randomUUID() }, { token: a.token }), 404, 'NOT_FOUND', 'Resource not found');
    expectGqlError(await api.gql(q, { id: 'not-a-uuid' }, { token: a.token }), 404, 'NOT_FOUND', 'Resource not found');
  });
});
