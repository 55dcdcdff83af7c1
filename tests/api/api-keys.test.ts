import { createHash, randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithClient, ISO_MS, signupOrg, UUID_RE, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { expectError, expectValidation, expectGqlError, sortedKeys as sorted } from '../helpers/expect.js';
import { sleep, waitFor } from '../helpers/time.js';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient()));
afterAll(() => herald?.stop());

const KEY_RE = /^uak_[0-9A-Za-z]{38}$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const FORBIDDEN = 'Insufficient permissions';

/** Base62 of a 32-bit number, most significant digit first, zero-padded to 6 characters. */
function base62(n: number): string {
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const keyRow = (id: string) => herald.db('api_keys').where({ id }).first();
const admin = (org: Org): Credential => ({ token: org.token });
const listKeys = async (org: Org): Promise<any[]> => {
  const res = await api.get('/api-keys?limit=1000', admin(org));
  expect(res.status).toBe(200);
  return res.body;
};
const GQL_KEY_FIELDS = '_id name role prefix createdBy lastUsedAt revokedAt createdAt updatedAt';

/* ------------------------------------------------------------------------------------------ */

describe('POST /api-keys', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('201 with { apiKey, key }: the documented format, default role user, never used, not revoked', async () => {
    const res = await api.post('/api-keys', { name: 'Billing server' }, admin(org));
    expect(res.status).toBe(201);
    expect(sorted(res.body)).toEqual(['apiKey', 'key']);
    const { apiKey, key } = res.body;
    expect(key).toMatch(KEY_RE);
    expect(key.slice(4 + 32)).toBe(base62(crc32(key.slice(4, 4 + 32))));
    expect(apiKey).toMatchObject({ name: 'Billing server', role: 'user', createdBy: org.user._id, lastUsedAt: null, revokedAt: null });
    expect(apiKey._id).toMatch(UUID_RE);
    expect(apiKey.createdAt).toMatch(ISO_MS);
    expect(apiKey.updatedAt).toMatch(ISO_MS);
    // The record shows a prefix to tell keys apart, never the secret.
    expect(typeof apiKey.prefix).toBe('string');
    expect(key.startsWith(apiKey.prefix)).toBe(true);
    expect(apiKey.prefix.length).toBeLessThanOrEqual(16);
    expect(JSON.stringify(apiKey)).not.toContain(key.slice(12));
    expect(JSON.stringify(apiKey)).not.toMatch(/hash/i);
  });

  test('keys are random: many creations give distinct, well-formed keys', async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => createApiKey(api, org)));
    const values = keys.map((k) => k.key);
    expect(new Set(values).size).toBe(values.length);
    for (const v of values) {
      expect(v).toMatch(KEY_RE);
      expect(v.slice(36)).toBe(base62(crc32(v.slice(4, 36))));
    }
  });

  test('stored only as a SHA-256 hash with a visible prefix', async () => {
    const { key, apiKey } = await createApiKey(api, org, 'admin');
    const row = await keyRow(apiKey._id);
    expect(row).toBeDefined();
    const secretPart = key.slice(12);
    for (const [column, value] of Object.entries(row)) {
      const text = Buffer.isBuffer(value) ? value.toString('latin1') + value.toString('hex') : String(value);
      expect({ column, hasSecret: text.includes(secretPart) }).toEqual({ column, hasSecret: false });
    }
    const digest = createHash('sha256').update(key).digest();
    const hashes = Object.values(row).filter((v) => (Buffer.isBuffer(v) && v.equals(digest)) || v === digest.toString('hex') || v === digest.toString('base64'));
    expect(hashes).toHaveLength(1);
  });

  test('role admin is accepted; other roles, missing or long names and unknown fields are 400', async () => {
    const res = await api.post('/api-keys', { name: 'Ops', role: 'admin' }, admin(org));
    expect(res.status).toBe(201);
    expect(res.body.apiKey.role).toBe('admin');
    const before = (await listKeys(org)).length;
    expectValidation(await api.post('/api-keys', { name: 'x', role: 'owner' }, admin(org)), ['role']);
    expectValidation(await api.post('/api-keys', {}, admin(org)), ['name']);
    expectValidation(await api.post('/api-keys', { name: '' }, admin(org)), ['name']);
    expectValidation(await api.post('/api-keys', { name: 'n'.repeat(101) }, admin(org)), ['name']);
    expectValidation(await api.post('/api-keys', { name: 'x', organization: randomUUID() }, admin(org)), ['organization']);
    expectValidation(await api.post('/api-keys', { name: 'x', revokedAt: null }, admin(org)), ['revokedAt']);
    expect((await listKeys(org)).length).toBe(before);
  });

  test('admin with a JWT only: the user role and API keys of either role are 403, no credential 401', async () => {
    const member = await addUser(api, org);
    expectError(await api.post('/api-keys', { name: 'x' }, { token: member.token }), 403, FORBIDDEN);
    for (const role of ['admin', 'user'] as const) {
      const { key } = await createApiKey(api, org, role);
      expectError(await api.post('/api-keys', { name: 'x' }, { apiKey: key }), 403, FORBIDDEN);
      expectError(await api.post('/api-keys', { name: 'x' }, { queryKey: key }), 403, FORBIDDEN);
    }
    expectError(await api.post('/api-keys', { name: 'x' }), 401);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('GET /api-keys', () => {
  test('lists the organization’s keys newest first, without their secrets, revoked ones included', async () => {
    const org = await signupOrg(api);
    const foreign = await signupOrg(api);
    const foreignKey = await createApiKey(api, foreign);
    const created = [];
    for (let i = 0; i < 3; i++) {
      await sleep(3);
      created.push(await createApiKey(api, org, i === 1 ? 'admin' : 'user'));
    }
    expect((await api.put(`/api-keys/${created[0]!.apiKey._id}/revoke`, undefined, admin(org))).status).toBe(200);
    const res = await api.get('/api-keys', admin(org));
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.headers.get('x-total-count')).toBe('3');
    expect(res.body.map((k: any) => k._id)).toEqual(created.map((c) => c.apiKey._id).reverse());
    const text = JSON.stringify(res.body);
    for (const c of [...created, foreignKey]) expect(text).not.toContain(c.key.slice(12));
    expect(text).not.toContain(foreignKey.apiKey._id);
    for (const k of res.body) {
      expect(k).toMatchObject({ createdBy: org.user._id, lastUsedAt: null });
      expect(['admin', 'user']).toContain(k.role);
    }
    expect(res.body[2].revokedAt).toMatch(ISO_MS);
    expect(res.body[0].revokedAt).toBeNull();
    expect(res.body[1].role).toBe('admin');
  });

  test('the user role and API keys are 403', async () => {
    const org = await signupOrg(api);
    const member = await addUser(api, org);
    expectError(await api.get('/api-keys', { token: member.token }), 403, FORBIDDEN);
    const { key } = await createApiKey(api, org, 'admin');
    expectError(await api.get('/api-keys', { apiKey: key }), 403, FORBIDDEN);
    expectError(await api.get('/api-keys'), 401);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('using a key', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('works in the UNIFIED-API-Key header and the apikey query parameter, for its own organization only', async () => {
    const other = await signupOrg(api);
    const mine = await api.post('/contacts', { name: 'Mine', email: 'mine@example.com' }, admin(org));
    const theirs = await api.post('/contacts', { name: 'Theirs', email: 'theirs@example.com' }, admin(other));
    const { key } = await createApiKey(api, org, 'user');
    for (const cred of [{ apiKey: key }, { queryKey: key }] as Credential[]) {
      const res = await api.get('/contacts', cred);
      expect(res.status).toBe(200);
      expect(res.body.map((c: any) => c._id)).toEqual([mine.body._id]);
      expectError(await api.get(`/contacts/${theirs.body._id}`, cred), 403, FORBIDDEN);
    }
  });

  test('an unknown, malformed or checksum-broken key is 401 Invalid API key', async () => {
    const { key } = await createApiKey(api, org);
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    const body = 'A'.repeat(32);
    const unknownButWellFormed = `uak_${body}${base62(crc32(body))}`;
    for (const bad of [flipped, unknownButWellFormed, 'uak_short', 'nonsense', key.toUpperCase(), `${key}x`, key.slice(0, -1)]) {
      expectError(await api.get('/contacts', { apiKey: bad }), 401, 'Invalid API key');
      expectError(await api.get('/contacts', { queryKey: bad }), 401, 'Invalid API key');
    }
    const gql = await api.gql('{ contacts { totalCount } }', undefined, { apiKey: unknownButWellFormed });
    expectGqlError(gql, 401, 'UNAUTHORIZED', 'Invalid API key');
  });

  describe.each(['user', 'admin'] as const)('a %s key', (role) => {
    let key: string;
    let group: any;
    let campaign: any;
    beforeAll(async () => {
      key = (await createApiKey(api, org, role)).key;
      group = (await api.post('/groups', { name: `G ${randomUUID().slice(0, 6)}`, color: 'bg-red-500' }, admin(org))).body;
      campaign = (await api.post('/campaigns', { name: 'C', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, admin(org))).body;
    });

    test('reads contacts, groups, campaigns and message logs', async () => {
      for (const p of ['/contacts', '/groups', '/campaigns', '/message-logs', `/campaigns/${campaign._id}`]) {
        const res = await api.get(p, { apiKey: key });
        expect({ p, status: res.status }).toEqual({ p, status: 200 });
      }
      const res = await api.gql('{ contacts { totalCount } groups { totalCount } campaigns { totalCount } messageLogs { totalCount } }', undefined, { apiKey: key });
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.campaigns.totalCount).toBeGreaterThanOrEqual(1);
    });

    test('sends messages, and the send is logged', async () => {
      const to = `${role}.${randomUUID().slice(0, 6)}@example.com`;
      const res = await api.post('/notifications/send', { type: 'email', to, subject: 'Hello', message: 'From a key' }, { apiKey: key });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ recipient: to, status: 'success' });
      const logs = await api.get('/message-logs?channel=email', { queryKey: key });
      expect(logs.status).toBe(200);
      expect(logs.body.some((l: any) => l.recipients.some((r: any) => r.recipient === to))).toBe(true);
    });

    test(`${role === 'admin' ? 'may' : 'may not (403)'} create, update and delete contacts and groups, or create, update and launch campaigns`, async () => {
      const contact = (await api.post('/contacts', { name: 'To delete', phone: '+254712000222' }, admin(org))).body;
      const doomedGroup = (await api.post('/groups', { name: `D ${randomUUID().slice(0, 6)}`, color: 'bg-red-500' }, admin(org))).body;
      const writes: Array<() => Promise<Reply>> = [
        () => api.post('/contacts', { name: 'By key', phone: '+254712000111' }, { apiKey: key }),
        () => api.put(`/contacts/${contact._id}`, { name: 'Edited' }, { apiKey: key }),
        () => api.delete(`/contacts/${contact._id}`, { apiKey: key }),
        () => api.post('/groups', { name: `K ${randomUUID().slice(0, 6)}`, color: 'bg-blue-500' }, { apiKey: key }),
        () => api.put(`/groups/${group._id}`, { description: 'edited' }, { apiKey: key }),
        () => api.delete(`/groups/${doomedGroup._id}`, { apiKey: key }),
        () => api.post('/campaigns', { name: 'K', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, { apiKey: key }),
        () => api.put(`/campaigns/${campaign._id}`, { name: 'Renamed' }, { apiKey: key }),
        () => api.post(`/campaigns/${campaign._id}/launch`, undefined, { apiKey: key }),
      ];
      for (const write of writes) {
        const res = await write();
        if (role === 'admin') expect([200, 201]).toContain(res.status);
        else expectError(res, 403, FORBIDDEN);
      }
      const gql = await api.gql(`mutation { createGroup(input: { name: "GQL ${randomUUID().slice(0, 6)}", color: "bg-x" }) { _id } }`, undefined, { apiKey: key });
      if (role === 'admin') expect(gql.body.errors).toBeUndefined();
      else expectGqlError(gql, 403, 'FORBIDDEN', FORBIDDEN);
    });

    test('never reaches user management, the organization and its credentials, or API-key management (403)', async () => {
      const member = await addUser(api, org);
      const someKey = await createApiKey(api, org);
      const calls: Array<[string, () => Promise<Reply>]> = [
        ['GET /users', () => api.get('/users', { apiKey: key })],
        ['GET /users/me', () => api.get('/users/me', { apiKey: key })],
        ['GET /users/:id', () => api.get(`/users/${member.user._id}`, { apiKey: key })],
        ['POST /users', () => api.post('/users', { firstName: 'A', lastName: 'B', email: `k${randomUUID().slice(0, 6)}@example.com`, password: 'long enough pw', countryCode: '+254', phoneNumber: '700000002' }, { apiKey: key })],
        ['PUT /users/:id', () => api.put(`/users/${member.user._id}`, { firstName: 'X' }, { apiKey: key })],
        ['PUT /users/:id/deactivate', () => api.put(`/users/${member.user._id}/deactivate`, undefined, { apiKey: key })],
        ['PUT /users/:id/password', () => api.put(`/users/${member.user._id}/password`, { newPassword: 'taken over!!' }, { apiKey: key })],
        ['DELETE /users/:id', () => api.delete(`/users/${member.user._id}`, { apiKey: key })],
        ['GET /organizations/current', () => api.get('/organizations/current', { apiKey: key })],
        ['PUT /organizations/current/credentials', () => api.put('/organizations/current/credentials', { sms_apiKey: 'stolen' }, { apiKey: key })],
        ['POST /api-keys', () => api.post('/api-keys', { name: 'k', role: 'admin' }, { apiKey: key })],
        ['GET /api-keys', () => api.get('/api-keys', { apiKey: key })],
        ['PUT /api-keys/:id/revoke', () => api.put(`/api-keys/${someKey.apiKey._id}/revoke`, undefined, { apiKey: key })],
        ['DELETE /api-keys/:id', () => api.delete(`/api-keys/${someKey.apiKey._id}`, { queryKey: key })],
      ];
      for (const [label, call] of calls) {
        const res = await call();
        expect({ label, status: res.status, message: res.body?.message }).toEqual({ label, status: 403, message: FORBIDDEN });
      }
      // Nothing changed underneath.
      const after = await api.get(`/users/${member.user._id}`, admin(org));
      expect(after.body).toMatchObject({ firstName: 'Grace', isActive: true });
      expect((await keyRow(someKey.apiKey._id)).revoked_at).toBeNull();
      expect((await api.get('/contacts', { apiKey: someKey.key })).status).toBe(200);

      const gqlOps = [
        '{ me { _id } }',
        '{ users { totalCount } }',
        '{ organization { _id } }',
        '{ apiKeys { totalCount } }',
        'mutation { createApiKey(input: { name: "k", role: admin }) { key } }',
        `mutation { revokeApiKey(id: "${someKey.apiKey._id}") { _id } }`,
        `mutation { deleteApiKey(id: "${someKey.apiKey._id}") { message } }`,
      ];
      for (const q of gqlOps) {
        const res = await api.gql(q, undefined, { apiKey: key });
        expect({ q, code: res.body.errors?.[0]?.extensions?.code, statusCode: res.body.errors?.[0]?.extensions?.statusCode }).toEqual({
          q,
          code: 'FORBIDDEN',
          statusCode: 403,
        });
      }
      expect((await keyRow(someKey.apiKey._id)).revoked_at).toBeNull();
    });
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('PUT /api-keys/:id/revoke and DELETE /api-keys/:id', () => {
  let org: Org, foreign: Org;
  beforeAll(async () => ([org, foreign] = [await signupOrg(api), await signupOrg(api)]));

  test('a revoked key is 401 Invalid API key at once, in header, query and GraphQL; it stays listed as revoked', async () => {
    const { key, apiKey } = await createApiKey(api, org, 'admin');
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);
    const res = await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, admin(org));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ _id: apiKey._id, name: apiKey.name, role: 'admin' });
    expect(res.body.revokedAt).toMatch(ISO_MS);
    expect(JSON.stringify(res.body)).not.toContain(key.slice(12));
    expectError(await api.get('/contacts', { apiKey: key }), 401, 'Invalid API key');
    expectError(await api.get('/contacts', { queryKey: key }), 401, 'Invalid API key');
    expectGqlError(await api.gql('{ contacts { totalCount } }', undefined, { apiKey: key }), 401, 'UNAUTHORIZED', 'Invalid API key');
    const listed = (await listKeys(org)).find((k) => k._id === apiKey._id);
    expect(listed.revokedAt).toBe(res.body.revokedAt);

    // Revoking again does not bring it back.
    const again = await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, admin(org));
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toMatch(ISO_MS);
    expectError(await api.get('/contacts', { apiKey: key }), 401, 'Invalid API key');
  });

  test('revoking one key leaves the others working', async () => {
    const a = await createApiKey(api, org);
    const b = await createApiKey(api, org);
    expect((await api.put(`/api-keys/${a.apiKey._id}/revoke`, undefined, admin(org))).status).toBe(200);
    expect((await api.get('/contacts', { apiKey: b.key })).status).toBe(200);
    expectError(await api.get('/contacts', { apiKey: a.key }), 401, 'Invalid API key');
  });

  test('a deleted key is gone: 401 Invalid API key, no longer listed, a second delete is 404', async () => {
    const { key, apiKey } = await createApiKey(api, org);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);
    const res = await api.delete(`/api-keys/${apiKey._id}`, admin(org));
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expectError(await api.get('/contacts', { apiKey: key }), 401, 'Invalid API key');
    expect((await listKeys(org)).map((k) => k._id)).not.toContain(apiKey._id);
    expect(await keyRow(apiKey._id)).toBeUndefined();
    expectError(await api.delete(`/api-keys/${apiKey._id}`, admin(org)), 404, 'Resource not found');
    expectError(await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, admin(org)), 404, 'Resource not found');
  });

  test('a revoked key can be deleted', async () => {
    const { apiKey } = await createApiKey(api, org);
    expect((await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, admin(org))).status).toBe(200);
    expect((await api.delete(`/api-keys/${apiKey._id}`, admin(org))).status).toBe(200);
    expect(await keyRow(apiKey._id)).toBeUndefined();
  });

  test('another organization’s key id is 403 Insufficient permissions with nothing of it returned, and the key keeps working', async () => {
    const theirs = await createApiKey(api, foreign, 'admin');
    for (const res of [
      await api.put(`/api-keys/${theirs.apiKey._id}/revoke`, undefined, admin(org)),
      await api.delete(`/api-keys/${theirs.apiKey._id}`, admin(org)),
    ]) {
      expectError(res, 403, FORBIDDEN);
      expect(JSON.stringify(res.body)).not.toContain(theirs.apiKey.name);
    }
    expect((await keyRow(theirs.apiKey._id)).revoked_at).toBeNull();
    expect((await api.get('/contacts', { apiKey: theirs.key })).status).toBe(200);
    expectGqlError(await api.gql(`mutation { revokeApiKey(id: "${theirs.apiKey._id}") { _id } }`, undefined, admin(org)), 403, 'FORBIDDEN', FORBIDDEN);
    expectGqlError(await api.gql(`mutation { deleteApiKey(id: "${theirs.apiKey._id}") { message } }`, undefined, admin(org)), 403, 'FORBIDDEN', FORBIDDEN);
    expect(await keyRow(theirs.apiKey._id)).toBeDefined();
  });

  test.each([randomUUID(), 'not-a-uuid', '123'])('an unknown or malformed id %p is 404 Resource not found', async (id) => {
    expectError(await api.put(`/api-keys/${id}/revoke`, undefined, admin(org)), 404, 'Resource not found');
    expectError(await api.delete(`/api-keys/${id}`, admin(org)), 404, 'Resource not found');
  });

  test('the user role is 403 and nothing changes', async () => {
    const member = await addUser(api, org);
    const { key, apiKey } = await createApiKey(api, org);
    expectError(await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, { token: member.token }), 403, FORBIDDEN);
    expectError(await api.delete(`/api-keys/${apiKey._id}`, { token: member.token }), 403, FORBIDDEN);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('lastUsedAt', () => {
  test('is set once the key is used (polled, since writes are coalesced); an unused key stays null', async () => {
    const org = await signupOrg(api);
    const used = await createApiKey(api, org);
    const unused = await createApiKey(api, org);
    const before = Date.now();
    expect((await api.get('/contacts', { queryKey: used.key })).status).toBe(200);
    const listed = await waitFor(async () => (await listKeys(org)).find((k) => k._id === used.apiKey._id), (k) => Boolean(k.lastUsedAt), 10_000);
    expect(listed.lastUsedAt).toMatch(ISO_MS);
    expect(Date.parse(listed.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(used.apiKey.createdAt));
    expect(Date.parse(listed.lastUsedAt)).toBeLessThanOrEqual(Date.now() + 5_000);
    expect(Date.parse(listed.lastUsedAt)).toBeGreaterThanOrEqual(before - 5_000);
    expect((await listKeys(org)).find((k) => k._id === unused.apiKey._id).lastUsedAt).toBeNull();
  });

  test('a refused use (key revoked) does not record a use', async () => {
    const org = await signupOrg(api);
    const { key, apiKey } = await createApiKey(api, org);
    expect((await api.put(`/api-keys/${apiKey._id}/revoke`, undefined, admin(org))).status).toBe(200);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(401);
    // Give a write, were one wrongly made, the same chance the test above waits for.
    const probe = await createApiKey(api, org);
    expect((await api.get('/contacts', { apiKey: probe.key })).status).toBe(200);
    expect((await waitFor(async () => keyRow(probe.apiKey._id), (row) => Boolean(row.last_used_at), 10_000)).last_used_at).not.toBeNull();
    expect((await keyRow(apiKey._id)).last_used_at).toBeNull();
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('GraphQL API-key management', () => {
  test('createApiKey, apiKeys, revokeApiKey and deleteApiKey follow the same rules', async () => {
    const org = await signupOrg(api);
    const created = await api.gql(
      `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { ${GQL_KEY_FIELDS} } } }`,
      { input: { name: 'From GraphQL' } },
      admin(org),
    );
    expect(created.body.errors).toBeUndefined();
    const { key, apiKey } = created.body.data.createApiKey;
    expect(key).toMatch(KEY_RE);
    expect(key.slice(36)).toBe(base62(crc32(key.slice(4, 36))));
    expect(apiKey).toMatchObject({ name: 'From GraphQL', role: 'user', createdBy: org.user._id, lastUsedAt: null, revokedAt: null });
    expect(key.startsWith(apiKey.prefix)).toBe(true);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);

    const adminKey = await api.gql(`mutation { createApiKey(input: { name: "Ops", role: admin }) { apiKey { _id role } } }`, undefined, admin(org));
    expect(adminKey.body.data.createApiKey.apiKey.role).toBe('admin');

    const listed = await api.gql(`{ apiKeys(first: 10) { totalCount pageInfo { hasNextPage } edges { cursor node { ${GQL_KEY_FIELDS} } } } }`, undefined, admin(org));
    expect(listed.body.errors).toBeUndefined();
    const conn = listed.body.data.apiKeys;
    expect(conn.totalCount).toBe(2);
    expect(conn.edges.map((e: any) => e.node._id)).toEqual([adminKey.body.data.createApiKey.apiKey._id, apiKey._id]);
    expect(JSON.stringify(conn)).not.toContain(key.slice(12));

    const revoked = await api.gql(`mutation { revokeApiKey(id: "${apiKey._id}") { _id revokedAt } }`, undefined, admin(org));
    expect(revoked.body.data.revokeApiKey.revokedAt).toMatch(ISO_MS);
    expectError(await api.get('/contacts', { apiKey: key }), 401, 'Invalid API key');

    const deleted = await api.gql(`mutation { deleteApiKey(id: "${apiKey._id}") { message } }`, undefined, admin(org));
    expect(typeof deleted.body.data.deleteApiKey.message).toBe('string');
    expect(await keyRow(apiKey._id)).toBeUndefined();
    expectGqlError(await api.gql(`mutation { deleteApiKey(id: "${apiKey._id}") { message } }`, undefined, admin(org)), 404, 'NOT_FOUND', 'Resource not found');
    expectGqlError(await api.gql(`mutation { revokeApiKey(id: "nope") { _id } }`, undefined, admin(org)), 404, 'NOT_FOUND', 'Resource not found');
  });

  test('validation is 400 with details; the user role is 403; no credential is 401', async () => {
    const org = await signupOrg(api);
    const bad = await api.gql(`mutation { createApiKey(input: { name: "" }) { key } }`, undefined, admin(org));
    expectGqlError(bad, 400, 'BAD_REQUEST');
    expect(bad.body.errors![0].extensions.details.map((d: any) => d.field)).toEqual(['name']);
    const member = await addUser(api, org);
    for (const q of ['{ apiKeys { totalCount } }', 'mutation { createApiKey(input: { name: "k" }) { key } }']) {
      expectGqlError(await api.gql(q, undefined, { token: member.token }), 403, 'FORBIDDEN', FORBIDDEN);
      expectGqlError(await api.gql(q), 401, 'UNAUTHORIZED');
    }
    expect((await listKeys(org)).length).toBe(0);
  });
});
