import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Herald } from '../../src/server.js';
import {
  addUser,
  client,
  createApiKey,
  heraldWithClient,
  ISO_MS,
  randomClientAddress,
  signupBody,
  signupOrg,
  startTestHerald,
  TEST_JWT_SECRET,
  uniqueEmail,
  USER_FIELDS,
  UUID_RE,
  type Client,
  type Org,
  type Reply,
} from '../helpers/herald.js';
import { expectError, expectValidation, expectGqlError, sortedKeys as sorted } from '../helpers/expect.js';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient({ TRUST_PROXY: 'true' })));
afterAll(() => herald?.stop());

// Every login here carries one of this file's own client addresses (see randomClientAddress).
const FROM_US = { 'x-forwarded-for': randomClientAddress() };

const USER_KEYS = ['_id', 'countryCode', 'createdAt', 'email', 'firstName', 'isActive', 'lastName', 'organization', 'phoneNumber', 'role', 'updatedAt'];
const LOGIN_USER_KEYS = ['_id', 'email', 'firstName', 'isActive', 'lastName', 'organization', 'role'];
const now = () => Math.floor(Date.now() / 1000);

const login = (email: string, password: string, from: Record<string, string> = FROM_US) =>
  api.post('/auth/login', { email, password }, undefined, from);
const me = (headers: Record<string, string>) => api.get('/users/me', { headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const gqlWith = (query: string, variables: Record<string, unknown>, headers: Record<string, string>) =>
  api.raw<{ data?: any; errors?: any[] }>('POST', '/graphql', { query, variables }, undefined, headers);

const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
/** A token assembled by hand: any header, signed with HMAC over the usual signing input. */
function handToken(header: Record<string, unknown>, payload: Record<string, unknown>, hmac: 'sha256' | 'sha512' | null = 'sha256', secret = TEST_JWT_SECRET) {
  const input = `${b64url(header)}.${b64url(payload)}`;
  const sig = hmac ? createHmac(hmac, secret).update(input).digest('base64url') : '';
  return `${input}.${sig}`;
}
const claimsOf = (org: Org, extra: Record<string, unknown> = {}) => ({
  userId: org.user._id,
  orgId: org.orgId,
  role: 'admin',
  iat: now(),
  exp: now() + 3600,
  ...extra,
});
const decode = (token: string) => {
  const [h, p, s] = token.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), payload: JSON.parse(Buffer.from(p!, 'base64url').toString()), sig: s };
};

const orgsNamed = (name: string) => herald.db('organizations').where({ name }).count<{ count: string }[]>('* as count').then((r) => Number(r[0]!.count));
const usersWithEmail = (email: string) =>
  herald.db('users').whereRaw('lower(email) = lower(?)', [email]).count<{ count: string }[]>('* as count').then((r) => Number(r[0]!.count));

/* ------------------------------------------------------------------------------------------ */

describe('POST /auth/signup', () => {
  test('creates the organization and its first admin, answering 201 with a token and the user', async () => {
    const body = signupBody({ companyName: `Signup ${randomUUID().slice(0, 8)}`, sector: 'Health', country: 'Kenya' });
    const res = await api.post('/auth/signup', body);
    expect(res.status).toBe(201);
    expect(sorted(res.body)).toEqual(['token', 'user']);
    const { user, token } = res.body;
    expect(sorted(user)).toEqual(USER_KEYS);
    expect(user).toMatchObject({
      firstName: body.firstName,
      lastName: body.lastName,
      email: body.email,
      countryCode: body.countryCode,
      phoneNumber: body.phoneNumber,
      role: 'admin',
      isActive: true,
    });
    expect(user._id).toMatch(UUID_RE);
    expect(user.organization).toMatch(UUID_RE);
    expect(user.createdAt).toMatch(ISO_MS);
    expect(user.updatedAt).toMatch(ISO_MS);
    expect(JSON.stringify(res.body)).not.toMatch(/password/i);

    const org = await api.get('/organizations/current', { token });
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ _id: user.organization, name: body.companyName, sector: 'Health', country: 'Kenya', credits: 100 });
    const mine = await me(bearer(token));
    expect(mine.status).toBe(200);
    expect(mine.body._id).toBe(user._id);
    expect(mine.body.organization._id).toBe(user.organization);
  });

  test('the password is stored as a bcrypt hash, never as given', async () => {
    const org = await signupOrg(api);
    const row = await herald.db('users').where({ id: org.user._id }).first();
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(org.password);
    expect(row.password_hash).toMatch(/^\$2[aby]\$\d\d\$/);
  });

  test('role admin is accepted; the first user is never anything but admin', async () => {
    const asAdmin = await api.post('/auth/signup', signupBody({ role: 'admin' }));
    expect(asAdmin.status).toBe(201);
    expect(asAdmin.body.user.role).toBe('admin');
    const asUser = await api.post('/auth/signup', signupBody({ role: 'user' }));
    if (asUser.status === 201) expect(asUser.body.user.role).toBe('admin');
    else expectValidation(asUser, ['role']);
  });

  test('a missing body names every required field; nothing is written', async () => {
    expectValidation(await api.post('/auth/signup', {}), [...USER_FIELDS, 'companyName', 'sector', 'country']);
  });

  test('the message names every failing field, joined with "; " as decisions.md shows', async () => {
    const body = signupBody({ email: 'not-an-email', password: 'short' });
    const res = await api.post('/auth/signup', body);
    expectValidation(res, ['email', 'password']);
    expect(res.body.message).toBe('email must be a valid email; password must be at least 8 characters');
    expect(await orgsNamed(body.companyName)).toBe(0);
  });

  test.each([
    ['firstName', { firstName: 'x'.repeat(101) }],
    ['companyName', { companyName: 'x'.repeat(101) }],
    ['email', { email: `${'a'.repeat(250)}@example.com` }],
    ['password', { password: 'a'.repeat(73) }],
    ['password', { password: 'é'.repeat(36) + 'a' }], // 37 characters, 73 bytes
    ['lastName', { lastName: '' }],
    ['sector', { sector: 42 }],
  ])('an invalid %s is 400 naming it, and nothing is written', async (field, overrides) => {
    const body = signupBody(overrides);
    expectValidation(await api.post('/auth/signup', body), [field]);
    expect(await orgsNamed(body.companyName)).toBe(0);
    if (field !== 'email') expect(await usersWithEmail(body.email)).toBe(0);
  });

  test.each(['credits', 'organization', 'isActive', '_id', 'status'])('an unknown field %s is 400, never stored', async (field) => {
    const body = signupBody({ [field]: field === 'credits' ? 1_000_000 : 'x' });
    expectValidation(await api.post('/auth/signup', body), [field]);
    expect(await orgsNamed(body.companyName)).toBe(0);
    expect(await usersWithEmail(body.email)).toBe(0);
  });

  test('a password of exactly 72 bytes is accepted and works for login', async () => {
    const password = 'é'.repeat(36); // 36 characters, 72 bytes
    const body = signupBody({ password });
    expect((await api.post('/auth/signup', body)).status).toBe(201);
    expect((await login(body.email, password)).status).toBe(200);
  });

  test('a duplicate email is 400 Email already exists, in any case, and writes no organization', async () => {
    const first = await signupOrg(api);
    for (const email of [first.email, first.email.toUpperCase()]) {
      const body = signupBody({ email });
      expectError(await api.post('/auth/signup', body), 400, 'Email already exists');
      expect(await orgsNamed(body.companyName)).toBe(0);
    }
    expect(await usersWithEmail(first.email)).toBe(1);
  });

  test('two concurrent signups with one email: one succeeds, the other is 400 and leaves nothing behind', async () => {
    const email = uniqueEmail('race');
    const bodies = [signupBody({ email }), signupBody({ email })];
    const replies = await Promise.all(bodies.map((b) => api.post('/auth/signup', b)));
    expect(replies.map((r) => r.status).sort()).toEqual([201, 400]);
    const loser = replies.find((r) => r.status === 400)!;
    expectError(loser, 400, 'Email already exists');
    const orgCounts = await Promise.all(bodies.map((b) => orgsNamed(b.companyName)));
    expect(orgCounts.sort()).toEqual([0, 1]);
    expect(await usersWithEmail(email)).toBe(1);
  });

  test('malformed JSON and a non-object body are 400 in the error shape', async () => {
    const bad = await api.post('/auth/signup', '{"firstName": ');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    const arr = await api.post('/auth/signup', '[]');
    expect(arr.status).toBe(400);
    expect(arr.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  });

  test('SIGNUP_CREDITS sets the starting balance and JWT_EXPIRES_IN the token lifetime', async () => {
    const other = await startTestHerald({ SIGNUP_CREDITS: '250', JWT_EXPIRES_IN: '1h' });
    try {
      const otherApi = client(other.url);
      const org = await signupOrg(otherApi);
      const current = await otherApi.get('/organizations/current', { token: org.token });
      expect(current.body.credits).toBe(250);
      const { payload } = decode(org.token);
      expect(payload.exp - payload.iat).toBe(3600);
    } finally {
      await other.stop();
    }
    const org = await signupOrg(api);
    const { payload } = decode(org.token);
    expect(payload.exp - payload.iat).toBe(24 * 3600);
    expect((await api.get('/organizations/current', { token: org.token })).body.credits).toBe(100);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('POST /auth/login', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api, { email: uniqueEmail('MixedCase') })));

  test('returns 200 with a working token and the short user form', async () => {
    const res = await login(org.email, org.password);
    expect(res.status).toBe(200);
    expect(sorted(res.body)).toEqual(['token', 'user']);
    expect(sorted(res.body.user)).toEqual(LOGIN_USER_KEYS);
    expect(res.body.user).toEqual({
      _id: org.user._id,
      firstName: org.user.firstName,
      lastName: org.user.lastName,
      email: org.user.email,
      role: 'admin',
      organization: org.orgId,
      isActive: true,
    });
    expect((await me(bearer(res.body.token))).status).toBe(200);
  });

  test('the email is matched without regard to case', async () => {
    expect((await login(org.email.toUpperCase(), org.password)).status).toBe(200);
    expect((await login(org.email.toLowerCase(), org.password)).status).toBe(200);
  });

  test('a wrong password and an unknown email give the same 401 Invalid credentials', async () => {
    const wrong = await login(org.email, 'not the password');
    const unknown = await login(uniqueEmail('nobody'), org.password);
    expectError(wrong, 401, 'Invalid credentials');
    expectError(unknown, 401, 'Invalid credentials');
    expect(unknown.body).toEqual(wrong.body);
    expect(wrong.body.token).toBeUndefined();
  });

  test('a password is never truncated to 72 bytes', async () => {
    const password = 'p'.repeat(72);
    const body = signupBody({ password });
    expect((await api.post('/auth/signup', body)).status).toBe(201);
    for (const longer of [`${password}x`, `${password}${'y'.repeat(100)}`]) {
      const res = await login(body.email, longer);
      expect([400, 401]).toContain(res.status);
      expect(res.body.token).toBeUndefined();
      if (res.status === 401) expectError(res, 401, 'Invalid credentials');
    }
    expect((await login(body.email, password)).status).toBe(200);
  });

  test('a deactivated user can not log in (401 Invalid credentials), a reactivated one can', async () => {
    const member = await addUser(api, org);
    expect((await api.put(`/users/${member.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    expectError(await login(member.email, member.password), 401, 'Invalid credentials');
    expect((await api.put(`/users/${member.user._id}/reactivate`, undefined, { token: org.token })).status).toBe(200);
    expect((await login(member.email, member.password)).status).toBe(200);
  });

  test('missing fields are 400 naming them', async () => {
    expectValidation(await api.post('/auth/login', {}, undefined, FROM_US), ['email', 'password']);
    expectValidation(await api.post('/auth/login', { email: org.email }, undefined, FROM_US), ['password']);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('failed-login throttling', () => {
  test('10 failures for one email lock it (429 with Retry-After) from every address, even with the right password', async () => {
    const org = await signupOrg(api);
    const from = { 'x-forwarded-for': randomClientAddress() };
    for (let i = 0; i < 10; i++) {
      // The count is per email, whatever its case.
      const email = i % 2 ? org.email.toUpperCase() : org.email;
      expectError(await login(email, `wrong password ${i}`, from), 401, 'Invalid credentials');
    }
    for (const addr of [from, { 'x-forwarded-for': randomClientAddress() }]) {
      const locked = await login(org.email, org.password, addr);
      expectError(locked, 429);
      const retryAfter = locked.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThan(0);
      expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60);
      expect(locked.body.token).toBeUndefined();
    }

    // GraphQL is the same door.
    const gql = await gqlWith(`mutation($input: LoginInput!) { login(input: $input) { token } }`, { input: { email: org.email, password: org.password } }, from);
    expectGqlError(gql, 429, 'TOO_MANY_REQUESTS');

    // The lock is for that email: other accounts log in from the same address.
    const other = await signupOrg(api);
    expect((await login(other.email, other.password, from)).status).toBe(200);
    // And the lock does not stop the account's existing tokens.
    expect((await me(bearer(org.token))).status).toBe(200);
  });

  test('a successful login resets the email count', async () => {
    const org = await signupOrg(api);
    const from = { 'x-forwarded-for': randomClientAddress() };
    for (let i = 0; i < 9; i++) expect((await login(org.email, 'wrong password', from)).status).toBe(401);
    expect((await login(org.email, org.password, from)).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await login(org.email, 'wrong password', from)).status).toBe(401);
    expect((await login(org.email, org.password, from)).status).toBe(200);
  });

  test('X-Forwarded-For names the client address only when TRUST_PROXY is set', async () => {
    const counted = async (needle: string) =>
      Number((await herald.db('rate_limits').where('key', 'like', `%${needle}%`).count<{ count: string }[]>('* as count'))[0]!.count);
    const email = uniqueEmail('proxy');
    const trusted = randomClientAddress();
    expect((await login(email, 'wrong password', { 'x-forwarded-for': trusted })).status).toBe(401);
    expect(await counted(trusted)).toBeGreaterThan(0);

    const direct = await startTestHerald();
    try {
      const spoofed = randomClientAddress();
      const other = uniqueEmail('direct');
      const res = await client(direct.url).post('/auth/login', { email: other, password: 'wrong password' }, undefined, { 'x-forwarded-for': spoofed });
      expectError(res, 401, 'Invalid credentials');
      expect(await counted(other)).toBeGreaterThan(0);
      expect(await counted(spoofed)).toBe(0);
    } finally {
      await direct.stop();
    }
  });

  test('100 failures from one client address lock that address, not others', async () => {
    const from = { 'x-forwarded-for': randomClientAddress() };
    const org = await signupOrg(api);
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(Array.from({ length: 10 }, () => login(uniqueEmail('ghost'), 'whatever it is', from)));
      for (const r of replies) expect(r.status).toBe(401);
    }
    const locked = await login(org.email, org.password, from);
    expectError(locked, 429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await login(org.email, org.password, { 'x-forwarded-for': randomClientAddress() })).status).toBe(200);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('JWT', () => {
  let org: Org, other: Org;
  beforeAll(async () => ([org, other] = [await signupOrg(api), await signupOrg(api)]));

  test('carries exactly the documented claims, signed HS256', async () => {
    const res = await login(org.email, org.password);
    for (const token of [org.token, res.body.token]) {
      const { header, payload } = decode(token);
      expect(header.alg).toBe('HS256');
      expect(sorted(payload)).toEqual(['exp', 'iat', 'orgId', 'role', 'userId']);
      expect(payload).toMatchObject({ userId: org.user._id, orgId: org.orgId, role: 'admin' });
      expect(Number.isInteger(payload.iat)).toBe(true);
      expect(Math.abs(payload.iat - now())).toBeLessThan(60);
      expect(payload.exp - payload.iat).toBe(24 * 3600);
      expect(() => jwt.verify(token, TEST_JWT_SECRET, { algorithms: ['HS256'] })).not.toThrow();
    }
  });

  test('a hand-made HS256 token with matching claims is accepted (the forgeries below differ only as named)', async () => {
    expect((await me(bearer(handToken({ alg: 'HS256', typ: 'JWT' }, claimsOf(org))))).status).toBe(200);
    expect((await me(bearer(jwt.sign(claimsOf(org), TEST_JWT_SECRET, { algorithm: 'HS256' })))).status).toBe(200);
  });

  test('alg none is 401 Invalid token', async () => {
    for (const alg of ['none', 'None', 'NONE']) {
      expectError(await me(bearer(handToken({ alg, typ: 'JWT' }, claimsOf(org), null))), 401, 'Invalid token');
    }
  });

  test('HS512 and HS384 with the right secret are 401 Invalid token', async () => {
    expectError(await me(bearer(jwt.sign(claimsOf(org), TEST_JWT_SECRET, { algorithm: 'HS512' }))), 401, 'Invalid token');
    expectError(await me(bearer(jwt.sign(claimsOf(org), TEST_JWT_SECRET, { algorithm: 'HS384' }))), 401, 'Invalid token');
    expectError(await me(bearer(handToken({ alg: 'HS512', typ: 'JWT' }, claimsOf(org), 'sha512'))), 401, 'Invalid token');
  });

  test('RS256 tokens, including an HMAC signature under an RS256 header, are 401 Invalid token', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expectError(await me(bearer(jwt.sign(claimsOf(org), privateKey, { algorithm: 'RS256' }))), 401, 'Invalid token');
    // Key confusion: the HMAC of the secret (or of a public key) presented as RS256.
    expectError(await me(bearer(handToken({ alg: 'RS256', typ: 'JWT' }, claimsOf(org)))), 401, 'Invalid token');
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expectError(await me(bearer(handToken({ alg: 'RS256', typ: 'JWT' }, claimsOf(org), 'sha256', pem))), 401, 'Invalid token');
  });

  test('a wrong secret, a tampered payload and garbage are 401 Invalid token', async () => {
    expectError(await me(bearer(jwt.sign(claimsOf(org), 'another-secret-that-is-long-enough-0123456789', { algorithm: 'HS256' }))), 401, 'Invalid token');
    const [h, , s] = org.token.split('.');
    const tampered = `${h}.${b64url({ ...decode(org.token).payload, orgId: other.orgId })}.${s}`;
    expectError(await me(bearer(tampered)), 401, 'Invalid token');
    for (const junk of ['abc', 'a.b.c', `${org.token}x`, org.token.split('.').slice(0, 2).join('.')]) {
      expectError(await me(bearer(junk)), 401, 'Invalid token');
    }
  });

  test('an expired token is 401 Token expired; a forged expired one is Invalid token', async () => {
    const expired = jwt.sign(claimsOf(org, { iat: now() - 7200, exp: now() - 60 }), TEST_JWT_SECRET, { algorithm: 'HS256' });
    expectError(await me(bearer(expired)), 401, 'Token expired');
    const forgedExpired = jwt.sign(claimsOf(org, { iat: now() - 7200, exp: now() - 60 }), 'another-secret-that-is-long-enough-0123456789');
    expectError(await me(bearer(forgedExpired)), 401, 'Invalid token');
  });

  test('no exp, iat or nbf more than 30 s ahead, and bad claim types are 401 Invalid token', async () => {
    const { exp: _exp, ...noExp } = claimsOf(org);
    const cases: Record<string, unknown>[] = [
      noExp,
      claimsOf(org, { iat: now() + 120 }),
      claimsOf(org, { nbf: now() + 120 }),
      claimsOf(org, { iat: String(now()) }),
      claimsOf(org, { userId: 'not-a-uuid' }),
      claimsOf(org, { role: 'owner' }),
    ];
    for (const claims of cases) {
      expectError(await me(bearer(handToken({ alg: 'HS256', typ: 'JWT' }, claims))), 401, 'Invalid token');
    }
    // Small clock skew is tolerated.
    expect((await me(bearer(handToken({ alg: 'HS256', typ: 'JWT' }, claimsOf(org, { iat: now() + 5, nbf: now() + 5 }))))).status).toBe(200);
  });

  test('claims that do not match a stored user of that organization are 401 Invalid token', async () => {
    const cases = [
      claimsOf(org, { userId: randomUUID() }),
      claimsOf(org, { orgId: other.orgId }),
      claimsOf(org, { orgId: randomUUID() }),
      claimsOf(other, { userId: org.user._id }),
    ];
    for (const claims of cases) {
      expectError(await me(bearer(jwt.sign(claims, TEST_JWT_SECRET, { algorithm: 'HS256' }))), 401, 'Invalid token');
    }
  });

  test('a role claim that differs from the stored role is informational: the stored role acts', async () => {
    const asUser = await api.get('/users', { headers: bearer(jwt.sign(claimsOf(org, { role: 'user' }), TEST_JWT_SECRET, { algorithm: 'HS256' })) });
    expect(asUser.status).toBe(200);
  });

  test('the scheme word is case-insensitive; anything else in the header is 401 Invalid token', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      expect((await me({ authorization: `${scheme} ${org.token}` })).status).toBe(200);
    }
    for (const value of [org.token, `Basic ${org.token}`, `Token ${org.token}`, 'Bearer', 'Bearer ', `Bearer ${org.token} extra`, `Bearer${org.token}`]) {
      expectError(await me({ authorization: value }), 401, 'Invalid token');
    }
  });

  test('no credential at all is 401 Authentication required, naming the ways to send one', async () => {
    const required = 'Authentication required: send Authorization: Bearer <token>, the UNIFIED-API-Key header or the apikey query parameter';
    expectError(await api.get('/users/me'), 401, required);
    expectError(await api.get('/contacts'), 401, required);
  });

  test('a deactivated user’s token is 401 Invalid token at once', async () => {
    const member = await addUser(api, org);
    expect((await me(bearer(member.token))).status).toBe(200);
    expect((await api.put(`/users/${member.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    expectError(await me(bearer(member.token)), 401, 'Invalid token');
    expectError(await api.get('/contacts', { token: member.token }), 401, 'Invalid token');
  });

  test('a deleted user’s token is 401 Invalid token at once', async () => {
    const member = await addUser(api, org);
    expect((await me(bearer(member.token))).status).toBe(200);
    expect((await api.delete(`/users/${member.user._id}`, { token: org.token })).status).toBe(200);
    expectError(await me(bearer(member.token)), 401, 'Invalid token');
  });

  test('tokens issued before a password change are refused; a login after it works at once', async () => {
    const member = await addUser(api, org);
    const older = (await login(member.email, member.password)).body.token as string;
    const changed = await api.put(`/users/${member.user._id}/password`, { oldPassword: member.password, newPassword: 'a brand new password' }, { token: member.token });
    expect(changed.status).toBe(200);
    expectError(await me(bearer(member.token)), 401, 'Invalid token');
    expectError(await me(bearer(older)), 401, 'Invalid token');
    const fresh = await login(member.email, 'a brand new password');
    expect(fresh.status).toBe(200);
    expect((await me(bearer(fresh.body.token))).status).toBe(200);
    expectError(await login(member.email, member.password), 401, 'Invalid credentials');

    // An admin's reset of another user's password revokes that user's tokens too.
    const reset = await api.put(`/users/${member.user._id}/password`, { newPassword: 'reset by the admin' }, { token: org.token });
    expect(reset.status).toBe(200);
    expectError(await me(bearer(fresh.body.token)), 401, 'Invalid token');
    expect((await me(bearer(org.token))).status).toBe(200);
  });

  test('each password change refuses every token issued before it, even two changes within one second', async () => {
    const member = await addUser(api, org);
    let password = member.password;
    let token = member.token;
    for (let i = 0; i < 4; i++) {
      const next = `new password number ${i}`;
      const changed = await api.put(`/users/${member.user._id}/password`, { oldPassword: password, newPassword: next }, { token });
      expect(changed.status).toBe(200);
      expectError(await me(bearer(token)), 401, 'Invalid token');
      password = next;
      const res = await login(member.email, password);
      expect(res.status).toBe(200);
      token = res.body.token;
      expect((await me(bearer(token))).status).toBe(200);
    }
  });

  test('the stored role governs the tokens a user already holds: a demotion takes admin rights away at once', async () => {
    const second = await addUser(api, org, 'admin');
    expect((await api.get('/users', { token: second.token })).status).toBe(200);
    expect((await api.put(`/users/${second.user._id}`, { role: 'user' }, { token: org.token })).status).toBe(200);
    // The old token (role claim `admin`) still authenticates, with the stored role: `user`.
    expectError(await api.get('/users', { token: second.token }), 403, 'Insufficient permissions');
    expect((await api.get('/users/me', { token: second.token })).body.role).toBe('user');
    const relogged = await login(second.email, second.password);
    expect(relogged.body.user.role).toBe('user');
    expectError(await api.get('/users', { token: relogged.body.token }), 403, 'Insufficient permissions');
  });

  test('a promotion grants admin rights on the tokens the user already holds, at once', async () => {
    const member = await addUser(api, org, 'user');
    expectError(await api.get('/users', { token: member.token }), 403, 'Insufficient permissions');
    expect((await api.put(`/users/${member.user._id}`, { role: 'admin' }, { token: org.token })).status).toBe(200);
    // The token's role claim still says `user`: never a reason for 401.
    expect((await api.get('/users', { token: member.token })).status).toBe(200);
    expect((await api.get('/users/me', { token: member.token })).body.role).toBe('admin');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('exactly one credential', () => {
  let org: Org;
  let key: string;
  let key2: string;
  beforeAll(async () => {
    org = await signupOrg(api);
    key = (await createApiKey(api, org, 'admin')).key;
    key2 = (await createApiKey(api, org, 'user')).key;
  });

  test('each credential alone works: bearer token, UNIFIED-API-Key header, apikey query parameter', async () => {
    expect((await api.get('/contacts', { token: org.token })).status).toBe(200);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);
    expect((await api.get('/contacts', { queryKey: key })).status).toBe(200);
    expect((await api.get('/contacts', { headers: { 'UNIFIED-API-Key': key } })).status).toBe(200);
  });

  test.each([
    ['a token and a header key', (p: string) => api.get(p, { headers: { authorization: `Bearer ${org.token}`, 'unified-api-key': key } })],
    ['a token and a query key', (p: string) => api.get(`${p}?apikey=${key}`, { token: org.token })],
    ['a header key and a query key', (p: string) => api.get(`${p}?apikey=${key2}`, { apiKey: key })],
    ['the same key in header and query', (p: string) => api.get(`${p}?apikey=${key}`, { apiKey: key })],
    ['two query keys', (p: string) => api.get(`${p}?apikey=${key}&apikey=${key2}`)],
    ['a bad token and a good key', (p: string) => api.get(p, { headers: { authorization: 'Bearer nonsense', 'unified-api-key': key } })],
    ['a good token and an unknown key', (p: string) => api.get(p, { headers: { authorization: `Bearer ${org.token}`, 'unified-api-key': 'uak_nope' } })],
  ])('%s is 400 Provide exactly one credential', async (_label, call) => {
    for (const p of ['/contacts', '/users/me', '/api-keys']) {
      expectError(await call(p), 400, 'Provide exactly one credential');
    }
  });

  test('the same rule in GraphQL', async () => {
    const res = await gqlWith(`{ contacts { totalCount } }`, {}, { authorization: `Bearer ${org.token}`, 'unified-api-key': key });
    expectGqlError(res, 400, 'BAD_REQUEST', 'Provide exactly one credential');
    expect(res.body.data ?? null).toBeNull();
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('GraphQL signup, login and me', () => {
  const SIGNUP = `mutation($input: SignupInput!) { signup(input: $input) {
    token user { _id firstName lastName email countryCode phoneNumber role isActive createdAt updatedAt organization { _id name sector country credits } } } }`;
  const LOGIN = `mutation($input: LoginInput!) { login(input: $input) { token user { _id email role isActive organization { _id } } } }`;
  const ME = `{ me { _id email role organization { _id } } }`;

  test('signup creates the organization and admin and returns a working token', async () => {
    const input = signupBody();
    const res = await api.gql(SIGNUP, { input });
    expect(res.body.errors).toBeUndefined();
    const { token, user } = res.body.data.signup;
    expect(user).toMatchObject({ email: input.email, role: 'admin', isActive: true, firstName: input.firstName });
    expect(user.organization).toMatchObject({ name: input.companyName, sector: input.sector, country: input.country, credits: 100 });
    expect(user._id).toMatch(UUID_RE);
    expect(user.createdAt).toMatch(ISO_MS);
    expect(decode(token).payload).toMatchObject({ userId: user._id, orgId: user.organization._id, role: 'admin' });
    const mine = await api.gql(ME, {}, { token });
    expect(mine.body.data.me).toEqual({ _id: user._id, email: input.email, role: 'admin', organization: { _id: user.organization._id } });
  });

  test('signup validation and duplicate email carry statusCode and code in extensions, and write nothing', async () => {
    const input = signupBody({ email: 'not-an-email', password: 'short' });
    const bad = await api.gql(SIGNUP, { input });
    const err = expectGqlError(bad, 400, 'BAD_REQUEST', 'email must be a valid email; password must be at least 8 characters');
    expect(err.extensions.details.map((d: any) => d.field).sort()).toEqual(['email', 'password']);
    expect(await orgsNamed(input.companyName)).toBe(0);

    const existing = await signupOrg(api);
    const dupInput = signupBody({ email: existing.email });
    expectGqlError(await api.gql(SIGNUP, { input: dupInput }), 400, 'BAD_REQUEST', 'Email already exists');
    expect(await orgsNamed(dupInput.companyName)).toBe(0);

    const { companyName: _c, ...missing } = signupBody();
    const missingRes = await api.gql(SIGNUP, { input: missing });
    expect(missingRes.body.errors![0].extensions.statusCode).toBe(400);
    expect(missingRes.body.data ?? null).toBeNull();
  });

  test('login: success, and wrong password and unknown email alike are 401 Invalid credentials', async () => {
    const org = await signupOrg(api);
    const ok = await gqlWith(LOGIN, { input: { email: org.email, password: org.password } }, FROM_US);
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.login.user).toEqual({ _id: org.user._id, email: org.email, role: 'admin', isActive: true, organization: { _id: org.orgId } });
    expect((await api.gql(ME, {}, { token: ok.body.data.login.token })).body.data.me._id).toBe(org.user._id);

    const wrong = await gqlWith(LOGIN, { input: { email: org.email, password: 'wrong password' } }, FROM_US);
    const unknown = await gqlWith(LOGIN, { input: { email: uniqueEmail('nobody'), password: org.password } }, FROM_US);
    for (const r of [wrong, unknown]) {
      expectGqlError(r, 401, 'UNAUTHORIZED', 'Invalid credentials');
      expect(r.body.data ?? null).toBeNull();
    }
  });

  test('me: the token rules hold in GraphQL too', async () => {
    const org = await signupOrg(api);
    expectGqlError(await api.gql(ME), 401, 'UNAUTHORIZED');
    expectGqlError(await api.gql(ME, {}, { token: handToken({ alg: 'none' }, claimsOf(org), null) }), 401, 'UNAUTHORIZED', 'Invalid token');
    expectGqlError(await api.gql(ME, {}, { token: jwt.sign(claimsOf(org), TEST_JWT_SECRET, { algorithm: 'HS512' }) }), 401, 'UNAUTHORIZED', 'Invalid token');
    const expired = jwt.sign(claimsOf(org, { iat: now() - 7200, exp: now() - 60 }), TEST_JWT_SECRET);
    expectGqlError(await api.gql(ME, {}, { token: expired }), 401, 'UNAUTHORIZED', 'Token expired');
    const { key } = await createApiKey(api, org, 'admin');
    expectGqlError(await api.gql(ME, {}, { apiKey: key }), 403, 'FORBIDDEN', 'Insufficient permissions');
  });
});
