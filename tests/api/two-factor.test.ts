import { createHmac } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { generate } from 'otplib';
import type { Herald } from '../../src/server.js';
import { expectError, expectGqlError, expectValidation, sortedKeys } from '../helpers/expect.js';
import {
  addUser,
  createApiKey,
  heraldWithClient,
  randomClientAddress,
  signupOrg,
  TEST_JWT_SECRET,
  type Client,
  type Org,
} from '../helpers/herald.js';

/**
 * Two-factor authentication (platform.md): TOTP enrolment and confirmation, recovery codes, the
 * two-step login, the organization's requirement, the throttle, over REST and GraphQL. Codes are
 * computed here with otplib for the time of a fake clock (`deps.clock`), so every step is exact.
 */

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient({ TRUST_PROXY: 'true' })));
afterAll(() => herald?.stop());

// Every login here carries one of this file's own client addresses (see randomClientAddress).
const FROM_US = { 'x-forwarded-for': randomClientAddress() };
const STEP = 30_000;
/** 15 seconds into a time step, far from the wall clock: no code of the real time is ever valid here. */
const T0 = Date.UTC(2031, 4, 6, 7, 0, 15);

let now = T0;
const setClock = (at: number) => {
  now = at;
  herald.deps.clock = () => new Date(now);
};
/** Moves the fake clock on by `steps` time steps. */
const later = (steps: number) => setClock(now + steps * STEP);
beforeEach(() => setClock(T0));
afterEach(() => delete herald.deps.clock);

/** The code an authenticator app shows for `secret`, `steps` time steps away from the fake clock. */
const codeAt = (secret: string, steps = 0) => generate({ secret, epoch: Math.floor((now + steps * STEP) / 1000) });

const bearer = (token: string) => ({ token });
const login = (email: string, password: string) => api.post('/auth/login', { email, password }, undefined, FROM_US);
const loginMfa = (mfaToken: string, code: string) => api.post('/auth/login/mfa', { mfaToken, code }, undefined, FROM_US);
const deleteWithBody = (path: string, body: unknown, token: string) => api.raw('DELETE', path, body, { token }, FROM_US);
const gql = (query: string, variables: Record<string, unknown> | undefined, token?: string) =>
  api.raw<{ data?: any; errors?: any[] }>('POST', '/graphql', { query, variables }, token ? { token } : undefined, FROM_US);

interface Enrolled {
  secret: string;
  recoveryCodes: string[];
}

/** Enrols the holder of `token` over REST and confirms with the current code. */
async function enrol(token: string): Promise<Enrolled> {
  const started = await api.post('/users/me/two-factor', undefined, bearer(token), FROM_US);
  expect(started.status).toBe(200);
  const confirmed = await api.post('/users/me/two-factor/confirm', { code: await codeAt(started.body.secret) }, bearer(token), FROM_US);
  expect(confirmed.status).toBe(200);
  return { secret: started.body.secret, recoveryCodes: confirmed.body.recoveryCodes };
}

/** A login of an enrolled user up to its `mfaToken`. */
async function mfaTokenOf(email: string, password: string): Promise<string> {
  const res = await login(email, password);
  expect(res.status).toBe(200);
  expect(sortedKeys(res.body)).toEqual(['mfaRequired', 'mfaToken']);
  expect(res.body.mfaRequired).toBe(true);
  return res.body.mfaToken;
}

describe('enrolment over REST', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('start, start again, confirm with a first code: ten recovery codes, shown once, stored hashed', async () => {
    expect((await api.get('/users/me/two-factor', bearer(org.token))).body).toEqual({
      enabled: false,
      enabledAt: null,
      pending: false,
      requiredByOrganization: false,
      recoveryCodesRemaining: 0,
    });
    const first = await api.post('/users/me/two-factor', undefined, bearer(org.token));
    expect(first.status).toBe(200);
    expect(sortedKeys(first.body)).toEqual(['otpauthUri', 'secret']);
    expect(first.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(first.body.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    expect(decodeURIComponent(first.body.otpauthUri)).toContain(`totp/Herald:${org.email}`);
    expect(uri.searchParams.get('secret')).toBe(first.body.secret);
    expect(uri.searchParams.get('issuer')).toBe('Herald');
    expect((await api.get('/users/me/two-factor', bearer(org.token))).body).toMatchObject({ enabled: false, pending: true });

    // Starting again replaces the unconfirmed secret: the first one's codes confirm nothing.
    const second = await api.post('/users/me/two-factor', undefined, bearer(org.token));
    expect(second.body.secret).not.toBe(first.body.secret);
    expectValidation(await api.post('/users/me/two-factor/confirm', { code: await codeAt(first.body.secret) }, bearer(org.token), FROM_US), ['code']);
    expectValidation(await api.post('/users/me/two-factor/confirm', {}, bearer(org.token)), ['code']);
    expectValidation(await api.post('/users/me/two-factor/confirm', { code: '123456', extra: 1 }, bearer(org.token)), ['extra']);

    const confirmed = await api.post('/users/me/two-factor/confirm', { code: await codeAt(second.body.secret) }, bearer(org.token), FROM_US);
    expect(confirmed.status).toBe(200);
    const codes: string[] = confirmed.body.recoveryCodes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);

    const status = await api.get('/users/me/two-factor', bearer(org.token));
    expect(status.body).toMatchObject({ enabled: true, pending: false, recoveryCodesRemaining: 10 });
    expect(new Date(status.body.enabledAt).toISOString()).toBe(status.body.enabledAt);
    expectError(await api.post('/users/me/two-factor', undefined, bearer(org.token)), 409, 'Two-factor authentication is already enabled');
    expectError(await api.post('/users/me/two-factor/confirm', { code: await codeAt(second.body.secret, 1) }, bearer(org.token)), 409, 'Two-factor authentication is already enabled');

    // At rest: the secret sealed (AES-256-GCM under CREDENTIALS_KEY), the recovery codes as SHA-256.
    const row = await herald.db('user_two_factor').where({ user_id: org.user._id }).first();
    expect(row.secret.toString('latin1')).not.toContain(second.body.secret);
    expect(row.secret.length).toBeGreaterThan(28);
    const hashes = await herald.db('user_recovery_codes').where({ user_id: org.user._id }).select('code_hash');
    expect(hashes).toHaveLength(10);
    for (const { code_hash } of hashes) {
      expect(code_hash).toHaveLength(32);
      for (const code of codes) expect(code_hash.toString('latin1')).not.toContain(code.replace(/-/g, ''));
    }
  });

  test('confirming without an enrolment is 409; API keys have no two-factor authentication', async () => {
    const other = await signupOrg(api);
    expectError(await api.post('/users/me/two-factor/confirm', { code: '123456' }, bearer(other.token)), 409, /start one first/);
    const { key } = await createApiKey(api, other, 'admin');
    expectError(await api.post('/users/me/two-factor', undefined, { apiKey: key }), 403);
    expectError(await api.get('/users/me/two-factor', { apiKey: key }), 403);
    expectError(await api.get('/users/me/two-factor'), 401);
    expectError(await api.put('/users/me/two-factor', {}, bearer(other.token)), 405);
  });
});

describe('the two-step login', () => {
  let org: Org, enrolled: Enrolled;
  beforeAll(async () => {
    org = await signupOrg(api);
    setClock(T0);
    enrolled = await enrol(org.token);
    delete herald.deps.clock;
  });

  test('the password answers { mfaRequired, mfaToken }; a code completes it with the usual { token, user }', async () => {
    later(2);
    const mfaToken = await mfaTokenOf(org.email, org.password);
    const res = await loginMfa(mfaToken, await codeAt(enrolled.secret));
    expect(res.status).toBe(200);
    expect(sortedKeys(res.body)).toEqual(['token', 'user']);
    expect(sortedKeys(res.body.user)).toEqual(['_id', 'email', 'firstName', 'isActive', 'lastName', 'organization', 'role']);
    expect((await api.get('/users/me', bearer(res.body.token))).body.email).toBe(org.email);
    // A wrong password is the same 401 as ever, with no hint of two-factor authentication.
    expectError(await login(org.email, 'not the password'), 401, 'Invalid credentials');
  });

  test('the mfaToken is not a session: refused as a Bearer credential over REST, GraphQL and WebSocket-free paths', async () => {
    const mfaToken = await mfaTokenOf(org.email, org.password);
    for (const path of ['/users/me', '/users/me/two-factor', '/contacts', '/organizations/current']) {
      const res = await api.get(path, bearer(mfaToken));
      expectError(res, 401, 'Invalid token');
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="herald", error="invalid_token"');
    }
    expectGqlError(await gql('{ me { _id } }', undefined, mfaToken), 401, 'UNAUTHORIZED', 'Invalid token');
    // Nor is a session an mfaToken, nor an altered one; an expired one says to log in again.
    expectError(await loginMfa(org.token, await codeAt(enrolled.secret)), 401, 'Invalid mfaToken');
    expectError(await loginMfa(`${mfaToken}x`, await codeAt(enrolled.secret)), 401, 'Invalid mfaToken');
    const key = createHmac('sha256', TEST_JWT_SECRET).update('herald two-factor login').digest();
    const past = Math.floor(Date.now() / 1000) - 600;
    const expired = jwt.sign({ purpose: 'mfa', userId: org.user._id, orgId: org.orgId, iat: past, exp: past + 300 }, key, { algorithm: 'HS256' });
    expectError(await loginMfa(expired, await codeAt(enrolled.secret)), 401, 'Two-factor login expired: log in again');
    expectValidation(await api.post('/auth/login/mfa', { mfaToken }, undefined, FROM_US), ['code']);
  });

  test('codes within one step either side are accepted; further ones, a used one and an older one are not', async () => {
    later(100);
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, -2)), 401, 'Invalid authentication code');
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 2)), 401, 'Invalid authentication code');
    expect((await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, -1))).status).toBe(200);

    later(100);
    expect((await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 1))).status).toBe(200);
    // The same code again (replay), and the current step's, older than the one just used: refused.
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 1)), 401, 'Invalid authentication code');
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 0)), 401, 'Invalid authentication code');

    later(1);
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 0)), 401, 'Invalid authentication code');
    later(1);
    expect((await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(enrolled.secret, 0))).status).toBe(200);
  });

  test('the same code sent twice at once is accepted once', async () => {
    later(300);
    const code = await codeAt(enrolled.secret);
    const [a, b] = await Promise.all([mfaTokenOf(org.email, org.password), mfaTokenOf(org.email, org.password)]);
    const answers = await Promise.all([loginMfa(a, code), loginMfa(b, code)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
  });

  test('a recovery code logs in once, typed in any case, with or without its dashes', async () => {
    const [code] = enrolled.recoveryCodes;
    const res = await loginMfa(await mfaTokenOf(org.email, org.password), code!.replace(/-/g, '').toUpperCase());
    expect(res.status).toBe(200);
    expect(sortedKeys(res.body)).toEqual(['token', 'user']);
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), code!), 401, 'Invalid authentication code');
    expect((await api.get('/users/me/two-factor', bearer(org.token))).body.recoveryCodesRemaining).toBe(9);
  });

  test('a password change ends logins waiting for their code', async () => {
    const member = await addUser(api, org, 'user');
    setClock(T0 + 1000 * STEP);
    const memberFactor = await enrol(member.token);
    const pending = await mfaTokenOf(member.email, member.password);
    expect((await api.put(`/users/${member.user._id}/password`, { newPassword: 'a different password' }, bearer(org.token))).status).toBe(200);
    expectError(await loginMfa(pending, await codeAt(memberFactor.secret)), 401, 'Invalid mfaToken');
  });
});

describe('the throttle', () => {
  test('ten wrong codes, then 429 with Retry-After even for the right code; the password step does not reset it', async () => {
    const org = await signupOrg(api);
    const { secret } = await enrol(org.token);
    later(5);
    const mfaToken = await mfaTokenOf(org.email, org.password);
    for (let i = 0; i < 10; i++) expectError(await loginMfa(mfaToken, '000000'), 401, 'Invalid authentication code');
    const blocked = await loginMfa(mfaToken, await codeAt(secret));
    expectError(blocked, 429, 'Too many failed authentication codes, try again later');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // A right password still answers an mfaToken, but buys no more guesses.
    expectError(await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(secret)), 429);
    // Changes that need a code share the count.
    expectError(await deleteWithBody('/users/me/two-factor', { code: await codeAt(secret) }, org.token), 429);
  });

  test('a right code clears the count', async () => {
    const org = await signupOrg(api);
    const { secret } = await enrol(org.token);
    for (let round = 0; round < 2; round++) {
      later(3);
      const mfaToken = await mfaTokenOf(org.email, org.password);
      for (let i = 0; i < 9; i++) expectError(await loginMfa(mfaToken, '000000'), 401);
      expect((await loginMfa(mfaToken, await codeAt(secret))).status).toBe(200);
    }
  });
});

describe('disabling and new recovery codes', () => {
  test('recovery codes are replaced given a code; disabling needs one too, and login is v1.0 again', async () => {
    const org = await signupOrg(api);
    const { secret, recoveryCodes } = await enrol(org.token);
    later(1);
    expectValidation(await api.post('/users/me/two-factor/recovery-codes', { code: '000000' }, bearer(org.token), FROM_US), ['code']);
    const renewed = await api.post('/users/me/two-factor/recovery-codes', { code: recoveryCodes[0] }, bearer(org.token), FROM_US);
    expect(renewed.status).toBe(200);
    expect(renewed.body.recoveryCodes).toHaveLength(10);
    expect((await api.get('/users/me/two-factor', bearer(org.token))).body.recoveryCodesRemaining).toBe(10);
    // The old set is void.
    expectValidation(await deleteWithBody('/users/me/two-factor', { code: recoveryCodes[1] }, org.token), ['code']);
    expectValidation(await deleteWithBody('/users/me/two-factor', {}, org.token), ['code']);

    const off = await deleteWithBody('/users/me/two-factor', { code: await codeAt(secret) }, org.token);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, recoveryCodesRemaining: 0 });
    expect(await herald.db('user_recovery_codes').where({ user_id: org.user._id }).count('* as n').first()).toEqual({ n: 0 });
    const res = await login(org.email, org.password);
    expect(res.status).toBe(200);
    expect(sortedKeys(res.body)).toEqual(['token', 'user']);
    // Turning off what is off changes nothing; a started enrolment is dropped with it.
    expect((await deleteWithBody('/users/me/two-factor', { code: '000000' }, org.token)).body).toMatchObject({ enabled: false, pending: false });
    expect((await api.post('/users/me/two-factor', undefined, bearer(org.token))).status).toBe(200);
    const dropped = await deleteWithBody('/users/me/two-factor', { code: '000000' }, org.token);
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ enabled: false, pending: false });
    expectError(await api.post('/users/me/two-factor/recovery-codes', { code: '000000' }, bearer(org.token)), 409, 'Two-factor authentication is not enabled');
  });
});

describe("the organization's requirement", () => {
  let org: Org, admin: Enrolled;
  beforeAll(async () => {
    org = await signupOrg(api);
  });

  test('only an admin with two-factor authentication can require it', async () => {
    const member = await addUser(api, org, 'user');
    expectError(await api.put('/organizations/current', { requireTwoFactor: true }, bearer(member.token)), 403);
    expectValidation(await api.put('/organizations/current', { requireTwoFactor: true }, bearer(org.token)), ['requireTwoFactor']);
    expectValidation(await api.put('/organizations/current', { requireTwoFactor: 'yes' }, bearer(org.token)), ['requireTwoFactor']);
    admin = await enrol(org.token);
    const res = await api.put('/organizations/current', { requireTwoFactor: true }, bearer(org.token));
    expect(res.status).toBe(200);
    expect(res.body.requireTwoFactor).toBe(true);
    expect((await api.get('/organizations/current', bearer(org.token))).body.requireTwoFactor).toBe(true);
  });

  test('a member without it may only enrol, with the token they held or a new one; API keys are not affected', async () => {
    const { key } = await createApiKey(api, org, 'admin');
    const created = await api.post(
      '/users',
      { firstName: 'Grace', lastName: 'Hopper', email: `member.${Date.now()}@example.com`, password: 'another good password', countryCode: '+254', phoneNumber: '700000001' },
      bearer(org.token),
    );
    const member = { email: created.body.email as string, password: 'another good password', id: created.body._id as string };

    const res = await login(member.email, member.password);
    expect(res.status).toBe(200);
    expect(sortedKeys(res.body)).toEqual(['token', 'twoFactorSetupRequired', 'user']);
    expect(res.body.twoFactorSetupRequired).toBe(true);
    const token: string = res.body.token;
    const REQUIRED = 'Two-factor authentication is required by your organization: set it up to continue';
    expectError(await api.get('/contacts', bearer(token)), 403, REQUIRED);
    expectError(await api.put(`/users/${member.id}/password`, { oldPassword: member.password, newPassword: 'whatever it is' }, bearer(token)), 403, REQUIRED);
    expectGqlError(await gql('{ groups { totalCount } }', undefined, token), 403, 'FORBIDDEN', REQUIRED);
    expect((await api.get('/users/me', bearer(token))).status).toBe(200);
    expect((await api.get('/users/me/two-factor', bearer(token))).body).toMatchObject({ enabled: false, requiredByOrganization: true });
    const me = await gql('{ me { email twoFactorEnabled } twoFactor { requiredByOrganization } }', undefined, token);
    expect(me.body).toEqual({ data: { me: { email: member.email, twoFactorEnabled: false }, twoFactor: { requiredByOrganization: true } } });
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);

    // Enrolling with that session turns it into a full one at once.
    later(7);
    const factor = await enrol(token);
    expect((await api.get('/contacts', bearer(token))).status).toBe(200);
    expectError(await deleteWithBody('/users/me/two-factor', { code: await codeAt(factor.secret, 1) }, token), 403, /requires two-factor authentication/);

    // An admin resets a member who lost their device: the member must enrol again.
    expectError(await api.delete(`/users/${org.user._id}/two-factor`, bearer(org.token)), 403);
    expectError(await api.delete(`/users/${member.id}/two-factor`, { apiKey: key }), 403);
    const reset = await api.delete(`/users/${member.id}/two-factor`, bearer(org.token));
    // An admin action: in the audit log, naming the member.
    expect((await api.get('/audit-log?action=user.two_factor_reset', bearer(org.token))).body).toEqual([
      expect.objectContaining({ action: 'user.two_factor_reset', resourceType: 'user', resourceId: member.id, actorId: org.user._id }),
    ]);
    expect(reset.status).toBe(200);
    expect(reset.body._id).toBe(member.id);
    expectError(await api.get('/contacts', bearer(token)), 403, REQUIRED);
    const other = await signupOrg(api);
    expectError(await api.delete(`/users/${member.id}/two-factor`, bearer(other.token)), 403);
  });

  test('a session held before the requirement is restricted at once, and freed when it is lifted', async () => {
    const member = await addUser(api, org, 'user');
    // addUser logged in before: the requirement is on already, so this one is a setup-only session.
    expectError(await api.get('/groups', bearer(member.token)), 403);
    later(20);
    const adminLogin = await loginMfa(await mfaTokenOf(org.email, org.password), await codeAt(admin.secret));
    const adminToken: string = adminLogin.body.token;
    const lifted = await api.put('/organizations/current', { requireTwoFactor: false }, bearer(adminToken));
    expect(lifted.body.requireTwoFactor).toBe(false);
    expect((await api.get('/groups', bearer(member.token))).status).toBe(200);
    expect((await api.put('/organizations/current', { requireTwoFactor: true }, bearer(adminToken))).status).toBe(200);
    expectError(await api.get('/groups', bearer(member.token)), 403);
    expect((await api.put('/organizations/current', { requireTwoFactor: false }, bearer(adminToken))).status).toBe(200);
  });
});

describe('GraphQL', () => {
  const START = 'mutation { startTwoFactorEnrolment { secret otpauthUri } }';
  const CONFIRM = 'mutation ($code: String!) { confirmTwoFactor(input: { code: $code }) { recoveryCodes } }';
  const LOGIN = 'mutation ($email: String!, $password: String!) { login(input: { email: $email, password: $password }) { token mfaRequired mfaToken twoFactorSetupRequired user { email } } }';
  const LOGIN_MFA = 'mutation ($mfaToken: String!, $code: String!) { loginWithTwoFactor(input: { mfaToken: $mfaToken, code: $code }) { token user { email twoFactorEnabled } } }';

  test('enrol, log in in two steps, renew the recovery codes, require it, turn it off', async () => {
    const org = await signupOrg(api);
    // The interface's login selection keeps working for a user without two-factor authentication.
    const plain = await gql('mutation ($email: String!, $password: String!) { login(input: { email: $email, password: $password }) { token user { _id email } } }', {
      email: org.email,
      password: org.password,
    });
    expect(plain.body.data.login.token).toEqual(expect.any(String));
    expect(plain.body.data.login.user.email).toBe(org.email);

    const started = await gql(START, undefined, org.token);
    const { secret, otpauthUri } = started.body.data.startTwoFactorEnrolment;
    expect(otpauthUri).toMatch(/^otpauth:\/\/totp\//);
    expectGqlError(await gql(CONFIRM, { code: '000000' }, org.token), 400, 'BAD_REQUEST');
    const confirmed = await gql(CONFIRM, { code: await codeAt(secret) }, org.token);
    expect(confirmed.body.data.confirmTwoFactor.recoveryCodes).toHaveLength(10);
    expect((await gql('{ me { twoFactorEnabled } twoFactor { enabled recoveryCodesRemaining } }', undefined, org.token)).body.data).toEqual({
      me: { twoFactorEnabled: true },
      twoFactor: { enabled: true, recoveryCodesRemaining: 10 },
    });
    expectGqlError(await gql(START, undefined, org.token), 409, 'CONFLICT');

    const first = await gql(LOGIN, { email: org.email, password: org.password });
    expect(first.body.data.login).toEqual({ token: null, user: null, mfaRequired: true, mfaToken: expect.any(String), twoFactorSetupRequired: false });
    expectGqlError(await gql('{ me { _id } }', undefined, first.body.data.login.mfaToken), 401, 'UNAUTHORIZED', 'Invalid token');
    later(1);
    expectGqlError(await gql(LOGIN_MFA, { mfaToken: first.body.data.login.mfaToken, code: '000000' }), 401, 'UNAUTHORIZED', 'Invalid authentication code');
    const second = await gql(LOGIN_MFA, { mfaToken: first.body.data.login.mfaToken, code: await codeAt(secret) });
    expect(second.body.data.loginWithTwoFactor.user).toEqual({ email: org.email, twoFactorEnabled: true });
    const token = second.body.data.loginWithTwoFactor.token;

    later(1);
    const renewed = await gql('mutation ($code: String!) { regenerateRecoveryCodes(input: { code: $code }) { recoveryCodes } }', { code: await codeAt(secret) }, token);
    expect(renewed.body.data.regenerateRecoveryCodes.recoveryCodes).toHaveLength(10);

    const required = await gql('mutation { updateOrganization(input: { requireTwoFactor: true }) { requireTwoFactor tracking } }', undefined, token);
    expect(required.body.data.updateOrganization).toEqual({ requireTwoFactor: true, tracking: true });
    expect((await gql('{ organization { requireTwoFactor } me { organization { requireTwoFactor } } }', undefined, token)).body.data).toEqual({
      organization: { requireTwoFactor: true },
      me: { organization: { requireTwoFactor: true } },
    });
    const member = await addUser(api, org, 'user');
    const memberLogin = await gql(LOGIN, { email: member.email, password: member.password });
    expect(memberLogin.body.data.login).toMatchObject({ mfaRequired: false, mfaToken: null, twoFactorSetupRequired: true, user: { email: member.email } });
    const users = await gql('{ users { edges { node { email twoFactorEnabled } } } }', undefined, token);
    expect(users.body.data.users.edges.map((e: any) => e.node).sort((a: any, b: any) => a.email.localeCompare(b.email))).toEqual(
      [
        { email: org.email, twoFactorEnabled: true },
        { email: member.email, twoFactorEnabled: false },
      ].sort((a, b) => a.email.localeCompare(b.email)),
    );
    later(1);
    expectGqlError(await gql('mutation ($code: String!) { disableTwoFactor(input: { code: $code }) { enabled } }', { code: await codeAt(secret) }, token), 403, 'FORBIDDEN');
    await gql('mutation { updateOrganization(input: { requireTwoFactor: false }) { requireTwoFactor } }', undefined, token);
    later(1);
    const off = await gql('mutation ($code: String!) { disableTwoFactor(input: { code: $code }) { enabled requiredByOrganization } }', { code: await codeAt(secret) }, token);
    expect(off.body.data.disableTwoFactor).toEqual({ enabled: false, requiredByOrganization: false });
  });
});
