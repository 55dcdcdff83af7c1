import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithClient, heraldWithOrg, ISO_MS, signupOrg, UUID_RE, type Client, type Org, type Reply } from '../helpers/herald.js';
import { expectError, expectValidation, expectGqlError, sortedKeys as sorted } from '../helpers/expect.js';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient()));
afterAll(() => herald?.stop());

const ORG_KEYS = ['_id', 'closure', 'country', 'createdAt', 'credentials', 'credits', 'deliveryMode', 'emailFromName', 'frequencyCaps', 'name', 'requireTwoFactor', 'retentionDays', 'sector', 'sendingHours', 'timezone', 'tracking', 'updatedAt'];
const CREDENTIAL_KEYS = [
  'email_from',
  'email_host',
  'email_pass',
  'email_port',
  'email_rate',
  'email_secure',
  'email_tls_ca',
  'email_tls_verify',
  'email_user',
  'sms_apiKey',
  'sms_apiUrl',
  'sms_partnerID',
  'sms_rate',
  'sms_reportUrl',
  'sms_shortCode',
  'whatsapp_app_secret_set',
  'whatsapp_phone_number_id',
  'whatsapp_rate',
  'whatsapp_verify_token_set',
  'whatsapp_webhookUrl',
];
/** Credentials shown whatever is stored: the platform's gateway URL and the URLs receipts are pushed to. */
const ALWAYS_SHOWN = ['sms_apiUrl', 'sms_reportUrl', 'whatsapp_webhookUrl'];
const SET_FLAGS = ['whatsapp_app_secret_set', 'whatsapp_verify_token_set'];

function expectOrganization(body: any) {
  expect(sorted(body)).toEqual(ORG_KEYS);
  expect(body._id).toMatch(UUID_RE);
  expect(body.createdAt).toMatch(ISO_MS);
  expect(body.updatedAt).toMatch(ISO_MS);
  expect(sorted(body.credentials)).toEqual(CREDENTIAL_KEYS);
  expect(JSON.stringify(body)).not.toContain('whatsapp_access_token');
}

const putCreds = (org: { token: string }, body: unknown) => api.put('/organizations/current/credentials', body, { token: org.token });

/* ------------------------------------------------------------------------------------------ */

describe('GET /organizations/current', () => {
  test('a new organization: documented fields, 100 credits, no email sender name, empty credentials', async () => {
    const companyName = `Herald Test ${randomUUID().slice(0, 8)}`;
    const org = await signupOrg(api, { companyName, sector: 'Finance', country: 'Kenya' });
    const res = await api.get('/organizations/current', { token: org.token });
    expect(res.status).toBe(200);
    expectOrganization(res.body);
    expect(res.body).toMatchObject({ _id: org.orgId, name: companyName, sector: 'Finance', country: 'Kenya', credits: 100, deliveryMode: 'sandbox', emailFromName: null });
    expect(typeof res.body.credentials.sms_apiUrl).toBe('string');
    expect(res.body.credentials.sms_apiUrl.length).toBeGreaterThan(0);
    for (const key of CREDENTIAL_KEYS.filter((k) => !ALWAYS_SHOWN.includes(k) && !SET_FLAGS.includes(k))) expect(res.body.credentials[key]).toBeNull();
    for (const key of SET_FLAGS) expect(res.body.credentials[key]).toBe(false);
    expect(res.body.tracking).toBe(true);
    expect(res.body.credentials.whatsapp_webhookUrl).toBe(`${herald.deps.config.publicUrl}/webhooks/whatsapp/${org.orgId}`);
    expect(res.body.credentials.sms_reportUrl).toMatch(new RegExp(`^${herald.deps.config.publicUrl}/webhooks/sms/${org.orgId}/[A-Za-z0-9_-]{32}$`));
  });

  test('the user role may read it; API keys may not; no credential is 401', async () => {
    const org = await signupOrg(api);
    const member = await addUser(api, org);
    const res = await api.get('/organizations/current', { token: member.token });
    expect(res.status).toBe(200);
    expectOrganization(res.body);
    expect(res.body._id).toBe(org.orgId);
    for (const role of ['admin', 'user'] as const) {
      const { key } = await createApiKey(api, org, role);
      expectError(await api.get('/organizations/current', { apiKey: key }), 403, 'Insufficient permissions');
    }
    expectError(await api.get('/organizations/current'), 401);
  });

  test('each caller sees their own organization', async () => {
    const a = await signupOrg(api);
    const b = await signupOrg(api);
    expect((await api.get('/organizations/current', { token: a.token })).body._id).toBe(a.orgId);
    expect((await api.get('/organizations/current', { token: b.token })).body._id).toBe(b.orgId);
  });

  test('GraphQL organization', async () => {
    const org = await signupOrg(api, { sector: 'Retail', country: 'KE' });
    const member = await addUser(api, org);
    const q = `{ organization { _id name sector country credits emailFromName tracking createdAt updatedAt credentials {
      sms_apiUrl sms_apiKey sms_partnerID sms_shortCode email_host email_port email_user email_pass email_from email_secure email_tls_verify email_tls_ca
      whatsapp_phone_number_id whatsapp_app_secret_set whatsapp_verify_token_set whatsapp_webhookUrl sms_reportUrl sms_rate email_rate whatsapp_rate } } }`;
    for (const token of [org.token, member.token]) {
      const res = await api.gql(q, undefined, { token });
      expect(res.body.errors).toBeUndefined();
      const o = res.body.data.organization;
      expect(o).toMatchObject({ _id: org.orgId, sector: 'Retail', country: 'KE', credits: 100, emailFromName: null, tracking: true });
      expect(sorted(o.credentials)).toEqual(CREDENTIAL_KEYS);
      expect(o.createdAt).toMatch(ISO_MS);
    }
    const noToken = await api.gql(`{ organization { credentials { whatsapp_access_token } } }`, undefined, { token: org.token });
    expectGqlError(noToken, 400, 'GRAPHQL_VALIDATION_FAILED');
    const { key } = await createApiKey(api, org, 'admin');
    expectGqlError(await api.gql(q, undefined, { apiKey: key }), 403, 'FORBIDDEN', 'Insufficient permissions');
  });

  test('deliveryMode is the platform\'s: sandbox here, live on a live platform, and on `me` too', async () => {
    const org = await signupOrg(api);
    const q = '{ organization { deliveryMode } me { organization { _id deliveryMode } } }';
    const res = await api.gql(q, undefined, { token: org.token });
    expect(res.body.data).toEqual({ organization: { deliveryMode: 'sandbox' }, me: { organization: { _id: org.orgId, deliveryMode: 'sandbox' } } });

    const { herald: live, api: liveApi } = await heraldWithClient({ DELIVERY_MODE: 'live' });
    try {
      const other = await signupOrg(liveApi);
      expect((await liveApi.get('/organizations/current', { token: other.token })).body.deliveryMode).toBe('live');
      expect((await liveApi.gql(q, undefined, { token: other.token })).body.data.me.organization.deliveryMode).toBe('live');
    } finally {
      await live.stop();
    }
  }, 60_000);
});

/* ------------------------------------------------------------------------------------------ */

describe('PUT /organizations/current/credentials', () => {
  test('partial updates keep the other fields; secrets are masked; the WhatsApp token is never returned', async () => {
    const org = await signupOrg(api);
    const first = await putCreds(org, { sms_apiKey: 'sk_live_abcdefgh9731', sms_partnerID: '4821', sms_shortCode: 'HERALD' });
    expect(first.status).toBe(200);
    expectOrganization(first.body);
    expect(first.body._id).toBe(org.orgId);
    expect(first.body.credentials).toMatchObject({
      sms_apiKey: '****9731',
      sms_partnerID: '4821',
      sms_shortCode: 'HERALD',
      email_host: null,
      email_pass: null,
      whatsapp_phone_number_id: null,
    });

    // The email fields come back as sent, but for the password, which is masked.
    const email = { email_host: 'smtp.example.com', email_port: '587', email_user: 'mailer@example.com', email_from: 'noreply@example.com' };
    const second = await putCreds(org, { ...email, email_pass: 'correct-horse-pass-5512' });
    expect(second.status).toBe(200);
    expectOrganization(second.body);
    expect(second.body.credentials).toMatchObject({ sms_apiKey: '****9731', sms_partnerID: '4821', sms_shortCode: 'HERALD', ...email, email_pass: '****5512' });

    const third = await putCreds(org, { whatsapp_access_token: 'EAAG-whatsapp-token-secret-7788', whatsapp_phone_number_id: '109876543210' });
    expect(third.status).toBe(200);
    expectOrganization(third.body);
    expect(third.body.credentials.whatsapp_phone_number_id).toBe('109876543210');
    expect(JSON.stringify(third.body)).not.toContain('EAAG-whatsapp-token-secret-7788');

    // Replacing one secret keeps the other.
    const fourth = await putCreds(org, { sms_apiKey: 'sk_live_zyxwvuts0042' });
    expect(fourth.body.credentials).toMatchObject({ sms_apiKey: '****0042', email_pass: '****5512', email_host: 'smtp.example.com' });

    const read = await api.get('/organizations/current', { token: org.token });
    expect(read.status).toBe(200);
    expectOrganization(read.body);
    expect(read.body.credentials).toEqual({ ...fourth.body.credentials });
    expect(read.body.credentials).toMatchObject({
      sms_apiKey: '****0042',
      sms_partnerID: '4821',
      sms_shortCode: 'HERALD',
      ...email,
      email_pass: '****5512',
      whatsapp_phone_number_id: '109876543210',
    });
    const text = JSON.stringify(read.body);
    for (const secret of ['sk_live_zyxwvuts0042', 'correct-horse-pass-5512', 'EAAG-whatsapp-token-secret-7788']) expect(text).not.toContain(secret);
    // Other organization fields are untouched.
    expect(read.body).toMatchObject({ credits: 100, emailFromName: null });
    expect(Date.parse(read.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(read.body.createdAt));
  });

  test('secrets are stored encrypted', async () => {
    const org = await signupOrg(api);
    const secrets = {
      sms_apiKey: `smskey-${randomUUID()}`,
      email_pass: `mailpass-${randomUUID()}`,
      whatsapp_access_token: `watoken-${randomUUID()}`,
    };
    const res = await putCreds(org, { ...secrets, email_user: 'plain-user-name@example.com', sms_partnerID: '99881' });
    expect(res.status).toBe(200);
    // Each channel's credentials are its provider's: the secrets sealed in `secrets`, nothing of
    // them in any column in the clear; the settings (user, partner id) readable as such.
    const rows = await herald.db('providers').where({ organization_id: org.orgId }).select('*');
    expect(rows.map((r: { type: string }) => r.type).sort()).toEqual(['sms-gateway', 'smtp', 'whatsapp-cloud']);
    const forms = (s: string) => [s, Buffer.from(s).toString('base64'), Buffer.from(s).toString('hex')];
    for (const row of rows) {
      const stored: Buffer = row.secrets;
      expect(Buffer.isBuffer(stored)).toBe(true);
      const asText = [stored.toString('utf8'), stored.toString('latin1'), stored.toString('base64'), stored.toString('hex'), JSON.stringify(row.settings), row.name];
      for (const secret of Object.values(secrets)) {
        expect(stored.includes(Buffer.from(secret, 'utf8'))).toBe(false);
        for (const form of forms(secret)) for (const t of asText) expect(t).not.toContain(form);
      }
      // The sealed document shows no structure in the clear either.
      expect(stored.toString('latin1')).not.toMatch(/apiKey|pass|accessToken/);
    }
    expect((await herald.db('organizations').where({ id: org.orgId }).first('credentials')).credentials).toBeNull();
    // And it still reads back correctly through the API.
    const read = await api.get('/organizations/current', { token: org.token });
    expect(read.body.credentials).toMatchObject({
      sms_apiKey: `****${secrets.sms_apiKey.slice(-4)}`,
      email_pass: `****${secrets.email_pass.slice(-4)}`,
      email_user: 'plain-user-name@example.com',
      sms_partnerID: '99881',
    });
  });

  test('sms_apiUrl and other unlisted fields are 400 and change nothing', async () => {
    const org = await signupOrg(api);
    const before = (await api.get('/organizations/current', { token: org.token })).body;
    expectValidation(await putCreds(org, { sms_apiUrl: 'https://evil.example.com' }), ['sms_apiUrl']);
    expectValidation(await putCreds(org, { sms_apiKey: 'sk_live_shouldnotstick1', sms_apiUrl: 'https://evil.example.com' }), ['sms_apiUrl']);
    expectValidation(await putCreds(org, { credits: 1_000_000 }), ['credits']);
    expectValidation(await putCreds(org, { name: 'Renamed' }), ['name']);
    expectValidation(await putCreds(org, { email_port: 'smtp', email_from: 'not-an-email', sms_partnerID: 12 }), [
      'email_port',
      'email_from',
      'sms_partnerID',
    ]);
    expectValidation(await putCreds(org, { email_port: '70000' }), ['email_port']);
    const after = (await api.get('/organizations/current', { token: org.token })).body;
    expect(after).toEqual(before);
    expect(after.credentials.sms_apiUrl).not.toBe('https://evil.example.com');
    expect(after.credits).toBe(100);
  });

  test('the user role and API keys are 403, and nothing changes', async () => {
    const org = await signupOrg(api);
    const member = await addUser(api, org);
    expectError(await putCreds(member, { sms_apiKey: 'sk_user_attempt_1234' }), 403, 'Insufficient permissions');
    for (const role of ['admin', 'user'] as const) {
      const { key } = await createApiKey(api, org, role);
      expectError(await api.put('/organizations/current/credentials', { sms_apiKey: 'sk_key_attempt_5678' }, { apiKey: key }), 403, 'Insufficient permissions');
    }
    expectError(await api.put('/organizations/current/credentials', { sms_apiKey: 'sk_anon_attempt_9999' }), 401);
    const read = await api.get('/organizations/current', { token: org.token });
    expect(read.body.credentials.sms_apiKey).toBeNull();
  });

  test("one organization's credentials do not touch another's", async () => {
    const a = await signupOrg(api);
    const b = await signupOrg(api);
    await putCreds(a, { email_host: 'smtp.a.example.com', email_pass: 'a-password-aaaa' });
    await putCreds(b, { email_host: 'smtp.b.example.com' });
    const readA = (await api.get('/organizations/current', { token: a.token })).body;
    const readB = (await api.get('/organizations/current', { token: b.token })).body;
    expect(readA.credentials).toMatchObject({ email_host: 'smtp.a.example.com', email_pass: '****aaaa' });
    expect(readB.credentials).toMatchObject({ email_host: 'smtp.b.example.com', email_pass: null });
  });

  test.each(['127.0.0.1', 'localhost', '10.1.2.3', '192.168.1.10'])('email_host %s is accepted by default', async (host) => {
    const org = await signupOrg(api);
    const res = await putCreds(org, { email_host: host });
    expect(res.status).toBe(200);
    expect(res.body.credentials.email_host).toBe(host);
  });

  test('GraphQL updateCredentials', async () => {
    const org = await signupOrg(api);
    const m = `mutation($input: CredentialsInput!) { updateCredentials(input: $input) { _id credentials {
      sms_apiUrl sms_apiKey sms_partnerID email_host email_pass whatsapp_phone_number_id } } }`;
    const res = await api.gql(
      m,
      { input: { sms_apiKey: 'graphql-sms-key-3141', email_pass: 'graphql-mail-pass-2718', whatsapp_access_token: 'graphql-wa-token-1618' } },
      { token: org.token },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateCredentials._id).toBe(org.orgId);
    expect(res.body.data.updateCredentials.credentials).toMatchObject({ sms_apiKey: '****3141', email_pass: '****2718', sms_partnerID: null });
    expect(JSON.stringify(res.body)).not.toContain('graphql-wa-token-1618');

    const partial = await api.gql(m, { input: { sms_partnerID: '777' } }, { token: org.token });
    expect(partial.body.data.updateCredentials.credentials).toMatchObject({ sms_apiKey: '****3141', email_pass: '****2718', sms_partnerID: '777' });

    const rest = await api.get('/organizations/current', { token: org.token });
    expect(rest.body.credentials).toMatchObject({ sms_apiKey: '****3141', email_pass: '****2718', sms_partnerID: '777' });

    expectGqlError(await api.gql(m, { input: { email_port: 'abc' } }, { token: org.token }), 400, 'BAD_REQUEST');
    const apiUrl = await api.gql(m, { input: { sms_apiUrl: 'https://evil.example.com' } }, { token: org.token });
    expect(apiUrl.body.errors?.[0]?.extensions?.statusCode).toBe(400);

    const member = await addUser(api, org);
    const forbidden = await api.gql(m, { input: { sms_apiKey: 'graphql-user-attempt-0000' } }, { token: member.token });
    expectGqlError(forbidden, 403, 'FORBIDDEN', 'Insufficient permissions');
    expect(forbidden.body.data).toBeNull();
    const { key } = await createApiKey(api, org, 'admin');
    expectGqlError(await api.gql(m, { input: { sms_apiKey: 'graphql-key-attempt-0000' } }, { apiKey: key }), 403, 'FORBIDDEN');
    expect((await api.get('/organizations/current', { token: org.token })).body.credentials.sms_apiKey).toBe('****3141');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('BLOCK_PRIVATE_HOSTS=true', () => {
  let guarded: Herald, gapi: Client, org: Org;
  beforeAll(async () => ({ herald: guarded, api: gapi, org } = await heraldWithOrg({ env: { BLOCK_PRIVATE_HOSTS: 'true' } })));
  afterAll(() => guarded?.stop());

  test.each(['127.0.0.1', 'localhost', '10.1.2.3', '192.168.1.10', '172.16.5.4', '169.254.169.254', '[::1]', '[::ffff:127.0.0.1]', '0.0.0.0'])(
    'email_host %s is 400 and not stored',
    async (host) => {
      const res = await gapi.put('/organizations/current/credentials', { email_host: host, email_user: 'u@example.com' }, { token: org.token });
      expectValidation(res, ['email_host']);
      const read = await gapi.get('/organizations/current', { token: org.token });
      expect(read.body.credentials.email_host).not.toBe(host);
      expect(read.body.credentials.email_user).not.toBe('u@example.com');
    },
  );

  test('a private host is named in the same answer as the input\'s other problems', async () => {
    const res = await gapi.put('/organizations/current/credentials', { email_host: '10.1.2.3', email_port: 70000, email_from: 'mail@relay' }, { token: org.token });
    expectValidation(res, ['email_port', 'email_host', 'email_from']);
  });

  test.each(['[2606:4700::1111]', '8.8.8.8', '93.184.216.34'])('a public address (%s) is accepted', async (host) => {
    const res = await gapi.put('/organizations/current/credentials', { email_host: host }, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body.credentials.email_host).toBe(host);
  });

  test('GraphQL refuses a private host too', async () => {
    const res = await gapi.gql(
      `mutation($input: CredentialsInput!) { updateCredentials(input: $input) { credentials { email_host } } }`,
      { input: { email_host: '10.1.2.3' } },
      { token: org.token },
    );
    expectGqlError(res, 400, 'BAD_REQUEST');
    expect((await gapi.get('/organizations/current', { token: org.token })).body.credentials.email_host).toBe('93.184.216.34');
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('receipts: WhatsApp webhook credentials, report URLs and the tracking setting', () => {
  test('the app secret and verify token are write-only, through REST and GraphQL; only whether they are set shows', async () => {
    const org = await signupOrg(api);
    const secret = `app-secret-${randomUUID()}`;
    const verify = `verify-${randomUUID()}`;
    const res = await putCreds(org, { whatsapp_app_secret: secret });
    expect(res.status).toBe(200);
    expectOrganization(res.body);
    expect(res.body.credentials).toMatchObject({ whatsapp_app_secret_set: true, whatsapp_verify_token_set: false });
    expectValidation(await putCreds(org, { whatsapp_verify_token: '' }), ['whatsapp_verify_token']);
    expectValidation(await putCreds(org, { whatsapp_app_secret: 'x'.repeat(501) }), ['whatsapp_app_secret']);

    const m = `mutation($input: CredentialsInput!) { updateCredentials(input: $input) { credentials {
      whatsapp_app_secret_set whatsapp_verify_token_set whatsapp_webhookUrl sms_reportUrl } } }`;
    const gql = await api.gql(m, { input: { whatsapp_verify_token: verify } }, { token: org.token });
    expect(gql.body.errors).toBeUndefined();
    const shown = gql.body.data.updateCredentials.credentials;
    expect(shown).toMatchObject({ whatsapp_app_secret_set: true, whatsapp_verify_token_set: true });
    expect(shown.whatsapp_webhookUrl).toBe(`${herald.deps.config.publicUrl}/webhooks/whatsapp/${org.orgId}`);

    const read = await api.get('/organizations/current', { token: org.token });
    expect(read.body.credentials).toMatchObject({ ...shown });
    for (const body of [read.body, gql.body]) for (const s of [secret, verify]) expect(JSON.stringify(body)).not.toContain(s);
    const noSecret = await api.gql(`{ organization { credentials { whatsapp_app_secret } } }`, undefined, { token: org.token });
    expectGqlError(noSecret, 400, 'GRAPHQL_VALIDATION_FAILED');

    // Each organization's report URL has its own token.
    const other = (await api.get('/organizations/current', { token: (await signupOrg(api)).token })).body;
    expect(other.credentials.sms_reportUrl.split('/').pop()).not.toBe(read.body.credentials.sms_reportUrl.split('/').pop());
    // A user who is not an admin cannot set them.
    const member = await addUser(api, org);
    expectError(await putCreds(member, { whatsapp_app_secret: 'member-secret' }), 403, 'Insufficient permissions');
  });

  test('tracking: on by default, turned off and on again by an admin through GraphQL; users cannot', async () => {
    const org = await signupOrg(api);
    const m = `mutation($input: OrganizationInput!) { updateOrganization(input: $input) { _id tracking } }`;
    const off = await api.gql(m, { input: { tracking: false } }, { token: org.token });
    expect(off.body.errors).toBeUndefined();
    expect(off.body.data.updateOrganization).toEqual({ _id: org.orgId, tracking: false });
    expect((await api.get('/organizations/current', { token: org.token })).body.tracking).toBe(false);
    expect((await api.gql(`{ organization { tracking } }`, undefined, { token: org.token })).body.data.organization.tracking).toBe(false);

    const member = await addUser(api, org);
    expectGqlError(await api.gql(m, { input: { tracking: true } }, { token: member.token }), 403, 'FORBIDDEN', 'Insufficient permissions');
    expect((await api.get('/organizations/current', { token: org.token })).body.tracking).toBe(false);

    const on = await api.gql(m, { input: { tracking: true } }, { token: org.token });
    expect(on.body.data.updateOrganization.tracking).toBe(true);
  });

  // Needs `{ method: 'put', path: '/organizations/current', op: organizations.updateOrganization }` in src/http/routes.ts.
  test('tracking through REST: PUT /organizations/current', async () => {
    const org = await signupOrg(api);
    const off = await api.put('/organizations/current', { tracking: false }, { token: org.token });
    expect(off.status).toBe(200);
    expectOrganization(off.body);
    expect(off.body.tracking).toBe(false);
    expectValidation(await api.put('/organizations/current', { tracking: 'sometimes' }, { token: org.token }), ['tracking']);
    expectValidation(await api.put('/organizations/current', { credits: 5 }, { token: org.token }), ['credits']);
    const member = await addUser(api, org);
    expectError(await api.put('/organizations/current', { tracking: true }, { token: member.token }), 403, 'Insufficient permissions');
    expect((await api.get('/organizations/current', { token: org.token })).body.tracking).toBe(false);
  });
});
