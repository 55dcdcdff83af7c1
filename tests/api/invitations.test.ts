import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { unsubscribeToken } from '../../src/delivery/unsubscribe-tokens.js';
import { invitationToken } from '../../src/modules/invitations/tokens.js';
import { expectError, expectGqlError, expectValidation } from '../helpers/expect.js';
import {
  addUser,
  createApiKey,
  heraldWithClient,
  ISO_MS,
  randomClientAddress,
  signupOrg,
  TEST_JWT_SECRET,
  uniqueEmail,
  UUID_RE,
  type Client,
  type Org,
  type Reply,
} from '../helpers/herald.js';

/**
 * Team invitations: an admin invites an address with a role (REST `/invitations`, GraphQL
 * `inviteMember`), Herald answers the link and emails it through the organization's email channel
 * (the sandbox outbox here); the person opens the link (public) and sets a password, which creates
 * the user and signs them in. Links are single-use, expire, can be revoked, and are bound to their
 * organization.
 */

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient({ TRUST_PROXY: 'true' })), 60_000);
afterAll(() => herald?.stop());

// Logins carry this file's own client address, so other files' failed logins never throttle it.
const FROM_US = { 'x-forwarded-for': randomClientAddress() };
const login = (email: string, password: string) => api.post('/auth/login', { email, password }, undefined, FROM_US);

const PASSWORD = 'a new member password';
const tokenOf = (link: string) => new URL(link).pathname.replace(/^\/invite\//, '');

async function invite(admin: Org, body: Record<string, unknown> = {}): Promise<{ res: Reply; email: string; token: string; id: string }> {
  const email = (body.email as string | undefined) ?? uniqueEmail('invited');
  const res = await api.post('/invitations', { email, ...body }, { token: admin.token });
  expect(res.status).toBe(201);
  return { res, email, token: tokenOf(res.body.link), id: res.body.invitation._id };
}

const accept = (token: string, body: Record<string, unknown> = { password: PASSWORD }) => api.post(`/invitations/accept/${token}`, body, undefined, FROM_US);

/** The organization's audit entries with this action, newest first. */
async function audit(admin: Org, action: string) {
  const res = await api.get(`/audit-log?action=${action}&limit=1000`, { token: admin.token });
  expect(res.status).toBe(200);
  return res.body as any[];
}

describe('inviting and accepting through REST', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('an admin invites; the link is emailed, shown, listed; accepting creates the user and signs them in', async () => {
    const before = (await api.get('/organizations/current', { token: org.token })).body.credits;
    const { res, email, token, id } = await invite(org, { role: 'admin', firstName: 'Mary', lastName: 'Jackson' });
    expect(res.body).toEqual({
      invitation: {
        _id: expect.stringMatching(UUID_RE),
        email,
        role: 'admin',
        firstName: 'Mary',
        lastName: 'Jackson',
        organization: org.orgId,
        invitedBy: org.email,
        invitedById: org.user._id,
        createdAt: expect.stringMatching(ISO_MS),
        expiresAt: expect.stringMatching(ISO_MS),
      },
      link: `${herald.deps.config.publicUrl}/invite/${token}`,
      emailed: true,
      emailError: null,
      sandbox: true,
    });
    const lifetime = Date.parse(res.body.invitation.expiresAt) - Date.parse(res.body.invitation.createdAt);
    expect(lifetime).toBe(7 * 24 * 3600 * 1000);
    // Nothing of the token is stored: only the row it names.
    expect(JSON.stringify(await herald.db('invitations').where({ id }).first())).not.toContain(token);

    // Sent like an ad hoc email: in the sandbox outbox with the link, logged and charged.
    const outbox = (await api.get(`/sandbox/outbox?channel=email&recipient=${encodeURIComponent(email)}`, { token: org.token })).body;
    expect(outbox).toHaveLength(1);
    expect(outbox[0].subject).toBe(`Join ${(await api.get('/organizations/current', { token: org.token })).body.name} on Herald`);
    expect(outbox[0].body).toContain(res.body.link);
    expect(outbox[0].body).toContain('as an admin');
    expect((await api.get('/organizations/current', { token: org.token })).body.credits).toBeLessThan(before);

    const listed = await api.get('/invitations', { token: org.token });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('x-total-count')).toBe('1');
    expect(listed.body).toEqual([res.body.invitation]);

    const preview = await api.get(`/invitations/accept/${token}`);
    expect(preview.status).toBe(200);
    expect(preview.body).toEqual({
      organization: { _id: org.orgId, name: expect.any(String) },
      email,
      role: 'admin',
      firstName: 'Mary',
      lastName: 'Jackson',
      expiresAt: res.body.invitation.expiresAt,
    });

    const accepted = await accept(token);
    expect(accepted.status).toBe(201);
    expect(accepted.body).toEqual({
      token: expect.any(String),
      user: { _id: expect.stringMatching(UUID_RE), firstName: 'Mary', lastName: 'Jackson', email, role: 'admin', organization: org.orgId, isActive: true },
    });
    const me = await api.get('/users/me', { token: accepted.body.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, role: 'admin', countryCode: '+254', phoneNumber: '' });
    expect((await login(email, PASSWORD)).status).toBe(200);
    expect((await api.get('/users', { token: org.token })).body.map((u: any) => u.email)).toContain(email);
    expect((await api.get('/invitations', { token: org.token })).body).toEqual([]);

    // Single use: the link is spent.
    expectError(await accept(token, { password: 'yet another password' }), 410, 'This invitation was already accepted: log in instead');
    expectError(await api.get(`/invitations/accept/${token}`), 410);
    expect((await login(email, 'yet another password')).status).toBe(401);

    const [created] = await audit(org, 'invitation.created');
    expect(created).toMatchObject({ actorId: org.user._id, resourceType: 'invitation', resourceId: id, details: { email, role: 'admin' } });
    const [joined] = await audit(org, 'invitation.accepted');
    expect(joined).toMatchObject({ actorType: 'user', actorId: accepted.body.user._id, actorLabel: email, resourceId: id, details: { email, role: 'admin', userId: accepted.body.user._id } });
  });

  test('names given when accepting win over the invitation’s; without any, they are required', async () => {
    const named = await invite(org, { firstName: 'Dorothy', lastName: 'Vaughan' });
    const res = await accept(named.token, { password: PASSWORD, firstName: 'Dot' });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ firstName: 'Dot', lastName: 'Vaughan', role: 'user' });

    const unnamed = await invite(org);
    expectValidation(await accept(unnamed.token), ['firstName', 'lastName']);
    expectValidation(await accept(unnamed.token, { password: 'short', firstName: 'A', lastName: 'B' }), ['password']);
    expectValidation(await accept(unnamed.token, { password: PASSWORD, firstName: 'A', lastName: 'B', role: 'admin' }), ['role']);
    // None of those used the link.
    expect((await accept(unnamed.token, { password: PASSWORD, firstName: 'Annie', lastName: 'Easley' })).status).toBe(201);
  });

  test('the input is checked, and an address that is a user’s or already invited is 409', async () => {
    expectValidation(await api.post('/invitations', { email: 'not an email' }, { token: org.token }), ['email']);
    expectValidation(await api.post('/invitations', { email: uniqueEmail(), role: 'owner', expiresInDays: 0 }, { token: org.token }), ['role', 'expiresInDays']);
    expectValidation(await api.post('/invitations', { email: uniqueEmail(), password: 'x' }, { token: org.token }), ['password']);

    expectError(await api.post('/invitations', { email: org.email.toUpperCase() }, { token: org.token }), 409, 'A user with this email already exists');
    const elsewhere = await signupOrg(api);
    expectError(await api.post('/invitations', { email: elsewhere.email }, { token: org.token }), 409, 'A user with this email already exists');

    const { email, token } = await invite(org);
    expectError(await api.post('/invitations', { email: email.toUpperCase() }, { token: org.token }), 409, /already pending/);
    // Another organization may invite the same address; the first to be accepted wins it.
    const theirs = await invite(elsewhere, { email });
    expect((await accept(token, { password: PASSWORD, firstName: 'Ada', lastName: 'One' })).status).toBe(201);
    expectError(await accept(theirs.token, { password: PASSWORD, firstName: 'Ada', lastName: 'Two' }), 409, 'A user with this email already exists: log in instead');
    // The refused accept left that link as it was.
    expect((await api.get(`/invitations/accept/${theirs.token}`)).status).toBe(200);
  });

  test('a revoked invitation’s link stops working, and the address can be invited again', async () => {
    const { email, token, id } = await invite(org);
    const revoked = await api.delete(`/invitations/${id}`, { token: org.token });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ message: 'Invitation revoked' });
    expectError(await api.get(`/invitations/accept/${token}`), 410, 'This invitation was revoked');
    expectError(await accept(token, { password: PASSWORD, firstName: 'R', lastName: 'V' }), 410, 'This invitation was revoked');
    // Revoking again changes nothing and records nothing.
    expect((await api.delete(`/invitations/${id}`, { token: org.token })).status).toBe(200);
    expect((await audit(org, 'invitation.revoked')).filter((e) => e.resourceId === id)).toHaveLength(1);
    expect((await audit(org, 'invitation.revoked'))[0]).toMatchObject({ actorId: org.user._id, details: { email, role: 'user' } });

    const again = await invite(org, { email });
    expect(again.token).not.toBe(token);
    expect((await accept(again.token, { password: PASSWORD, firstName: 'R', lastName: 'V' })).status).toBe(201);
    expectError(await api.delete(`/invitations/${again.id}`, { token: org.token }), 409, /already accepted/);
  });

  test('an expired link is 410, and the address can be invited again', async () => {
    const { email, token, id } = await invite(org, { firstName: 'Late', lastName: 'Comer', expiresInDays: 2 });
    await herald.db('invitations').where({ id }).update({ expires_at: herald.db.raw("now() - interval '1 second'") });
    expectError(await api.get(`/invitations/accept/${token}`), 410, 'This invitation has expired: ask an admin for a new one');
    expectError(await accept(token), 410, 'This invitation has expired: ask an admin for a new one');
    expect((await api.get('/invitations', { token: org.token })).body.map((i: any) => i._id)).not.toContain(id);

    const again = await invite(org, { email, firstName: 'Late', lastName: 'Comer' });
    expectError(await accept(token), 410, /expired/);
    expect((await accept(again.token)).status).toBe(201);
  });

  test('forged, altered, other-purpose and other-organization tokens are 404', async () => {
    const { token, id } = await invite(org, { firstName: 'F', lastName: 'G' });
    const other = await signupOrg(api);
    const altered = `${token.slice(0, 10)}${token[10] === 'A' ? 'B' : 'A'}${token.slice(11)}`;
    const forgedTokens = [
      'not-a-token',
      altered,
      token.slice(0, -2),
      `${token}AA`,
      // Herald's own signature, but over another organization with this invitation's id.
      invitationToken(TEST_JWT_SECRET, { orgId: other.orgId, invitationId: id }),
      // Herald's own signature, but of an unsubscribe link.
      unsubscribeToken(TEST_JWT_SECRET, { orgId: org.orgId, channel: 'email', contactId: id }),
      // An id no invitation has, signed right.
      invitationToken(TEST_JWT_SECRET, { orgId: org.orgId, invitationId: randomUUID() }),
      'x'.repeat(500),
    ];
    for (const forged of forgedTokens) {
      expectError(await api.get(`/invitations/accept/${forged}`), 404, 'Invitation not found: check the link, or ask an admin for a new invitation');
      expectError(await accept(forged), 404);
    }
    expect((await accept(token)).status).toBe(201);
  });

  test('two accepts at once: one creates the user, the other is refused', async () => {
    const { email, token } = await invite(org, { firstName: 'Twin', lastName: 'Click' });
    const answers = await Promise.all([accept(token), accept(token)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 410]);
    expect(await herald.db('users').whereRaw('lower(email) = ?', [email]).count({ n: '*' }).first()).toEqual({ n: 1 });
  });
});

describe('who may manage invitations', () => {
  let org: Org, other: Org;
  beforeAll(async () => ([org, other] = await Promise.all([signupOrg(api), signupOrg(api)])));

  test('admins with a JWT only: the user role and API keys are 403, no credential 401', async () => {
    const member = await addUser(api, org);
    const { key } = await createApiKey(api, org, 'admin');
    const { id } = await invite(org);
    for (const cred of [{ token: member.token }, { apiKey: key }]) {
      expectError(await api.post('/invitations', { email: uniqueEmail() }, cred), 403, 'Insufficient permissions');
      expectError(await api.get('/invitations', cred), 403, 'Insufficient permissions');
      expectError(await api.delete(`/invitations/${id}`, cred), 403, 'Insufficient permissions');
    }
    expectError(await api.post('/invitations', { email: uniqueEmail() }), 401);
    expectError(await api.get('/invitations'), 401);
  });

  test('another organization’s invitation is 403, an unknown one 404; lists are the organization’s own', async () => {
    const { id, email } = await invite(org);
    expectError(await api.delete(`/invitations/${id}`, { token: other.token }), 403, 'Insufficient permissions');
    expectError(await api.delete(`/invitations/${randomUUID()}`, { token: other.token }), 404);
    expectError(await api.delete('/invitations/nope', { token: other.token }), 404);
    expect((await api.get('/invitations', { token: other.token })).body.map((i: any) => i.email)).not.toContain(email);
    expect((await api.get('/invitations', { token: org.token })).body.map((i: any) => i.email)).toContain(email);
  });
});

describe('GraphQL', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  const INVITE = `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { invitation { _id email role invitedBy expiresAt } link emailed emailError sandbox } }`;

  test('inviteMember, invitations, invitation(token), acceptInvitation, revokeInvitation', async () => {
    const email = uniqueEmail('gql');
    const made = await api.gql(INVITE, { input: { email, role: 'user', firstName: 'Katherine', lastName: 'Johnson' } }, { token: org.token });
    expect(made.body.errors).toBeUndefined();
    const { invitation, link, emailed, sandbox } = made.body.data.inviteMember;
    expect(invitation).toMatchObject({ email, role: 'user', invitedBy: org.email });
    expect({ emailed, sandbox }).toEqual({ emailed: true, sandbox: true });

    const list = await api.gql(`{ invitations(first: 10) { totalCount edges { node { _id email } } } }`, {}, { token: org.token });
    expect(list.body.data.invitations).toEqual({ totalCount: 1, edges: [{ node: { _id: invitation._id, email } }] });

    const token = tokenOf(link);
    const shown = await api.gql(`query($token: String!) { invitation(token: $token) { organization { _id } email role firstName } }`, { token });
    expect(shown.body.data.invitation).toEqual({ organization: { _id: org.orgId }, email, role: 'user', firstName: 'Katherine' });

    const ACCEPT = `mutation($token: String!, $input: AcceptInvitationInput!) { acceptInvitation(token: $token, input: $input) { token user { email role organization { _id } } mfaRequired twoFactorSetupRequired } }`;
    const joined = await api.gql(ACCEPT, { token, input: { password: PASSWORD } });
    expect(joined.body.data.acceptInvitation).toEqual({
      token: expect.any(String),
      user: { email, role: 'user', organization: { _id: org.orgId } },
      mfaRequired: false,
      twoFactorSetupRequired: false,
    });
    expect((await api.get('/users/me', { token: joined.body.data.acceptInvitation.token })).body.email).toBe(email);
    expectGqlError(await api.gql(ACCEPT, { token, input: { password: PASSWORD } }), 410, 'GONE', 'This invitation was already accepted: log in instead');
    expectGqlError(await api.gql(ACCEPT, { token: 'forged', input: { password: PASSWORD } }), 404, 'NOT_FOUND');

    const second = await api.gql(INVITE, { input: { email: uniqueEmail('gql') } }, { token: org.token });
    const revoked = await api.gql(`mutation($id: ID!) { revokeInvitation(id: $id) { message } }`, { id: second.body.data.inviteMember.invitation._id }, { token: org.token });
    expect(revoked.body.data).toEqual({ revokeInvitation: { message: 'Invitation revoked' } });
    expectGqlError(await api.gql(`query($token: String!) { invitation(token: $token) { email } }`, { token: tokenOf(second.body.data.inviteMember.link) }), 410, 'GONE');
  });

  test('the user role is FORBIDDEN; a taken address is CONFLICT', async () => {
    const member = await addUser(api, org);
    expectGqlError(await api.gql(INVITE, { input: { email: uniqueEmail() } }, { token: member.token }), 403, 'FORBIDDEN');
    expectGqlError(await api.gql(`{ invitations { totalCount } }`, {}, { token: member.token }), 403, 'FORBIDDEN');
    expectGqlError(await api.gql(INVITE, { input: { email: member.email } }, { token: org.token }), 409, 'CONFLICT');
  });
});

describe('live delivery without email credentials', () => {
  let live: Herald, liveApi: Client;
  beforeAll(async () => ({ herald: live, api: liveApi } = await heraldWithClient({ DELIVERY_MODE: 'live' })), 60_000);
  afterAll(() => live?.stop());

  test('the invitation is made and its link answered, with emailed: false and why', async () => {
    const org = await signupOrg(liveApi);
    const before = (await liveApi.get('/organizations/current', { token: org.token })).body.credits;
    const email = uniqueEmail('unsent');
    const res = await liveApi.post('/invitations', { email }, { token: org.token });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ emailed: false, emailError: expect.stringMatching(/^Missing email credentials/), sandbox: false });
    expect(res.body.link).toMatch(/\/invite\/[\w-]+$/);
    expect((await liveApi.get('/organizations/current', { token: org.token })).body.credits).toBe(before);
    expect((await liveApi.get('/invitations', { token: org.token })).body.map((i: any) => i.email)).toEqual([email]);
    const accepted = await liveApi.post(`/invitations/accept/${tokenOf(res.body.link)}`, { password: PASSWORD, firstName: 'Offline', lastName: 'Handover' });
    expect(accepted.status).toBe(201);
  });
});
