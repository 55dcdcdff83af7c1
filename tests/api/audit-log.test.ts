import type { Herald } from '../../src/server.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import {
  addUser,
  createApiKey,
  heraldWithOrgs,
  isolatedDatabase,
  ISO_MS,
  signupOrg,
  startTestHerald,
  client,
  UUID_RE,
  type Client,
  type Credential,
  type Org,
  type Reply,
} from '../helpers/herald.js';

/**
 * platform.md: "An audit log of admin actions (users, roles, API keys, credentials, webhooks,
 * campaign launch and cancel, imports, consent changes by admins): who (user or key), what, which
 * resource, when, from where; `GET /audit-log` for admins, filterable, never editable."
 *
 * The Herald runs without workers, on a database of its own: an import stays queued until it is
 * canceled, and no other test file's workers take its jobs. Requests come "from" an address given in
 * `X-Forwarded-For` (TRUST_PROXY), so the address an entry records is known.
 */

const FROM = '203.0.113.7';

let db: Awaited<ReturnType<typeof isolatedDatabase>>;
let herald: Herald, api: Client;
let org: Org, other: Org;

beforeAll(async () => {
  db = await isolatedDatabase(`audit_${process.pid}`);
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { env: { DATABASE_URL: db.url, WORKERS: 'false', TRUST_PROXY: 'true' } }));
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await db?.drop();
});

/** A credential sent from `FROM`. */
const as = (cred: { token: string } | { apiKey: string }): Credential => ({
  headers: { ...('token' in cred ? { authorization: `Bearer ${cred.token}` } : { 'unified-api-key': cred.apiKey }), 'x-forwarded-for': FROM },
});
const admin = (o: Org = org) => as({ token: o.token });

/** The organization's entries (newest first) for a query string. */
async function auditLog(query = '', cred: Credential = admin()): Promise<Reply<any[]>> {
  const res = await api.get(`/audit-log${query ? `?${query}` : ''}`, cred);
  expect(res.status).toBe(200);
  return res;
}

const total = async (o: Org = org) => Number((await auditLog('limit=1', admin(o))).headers.get('x-total-count'));

/**
 * The entries `reply`'s request wrote: those with its request id (every entry carries the id of the
 * request that made it, which the answer's `X-Request-Id` names).
 */
async function entriesOf(reply: Reply, o: Org = org) {
  expect(reply.status).toBeLessThan(300);
  const requestId = reply.headers.get('x-request-id');
  return (await auditLog('limit=1000', admin(o))).body.filter((e) => e.requestId === requestId);
}

/** The one entry `reply`'s request wrote: its action, resource and details, by the organization's admin from `FROM`. */
async function expectEntry(reply: Reply, action: string, resourceType: string, resourceId: string | null, details: Record<string, unknown> = {}) {
  const entries = await entriesOf(reply);
  expect(entries.map((e) => e.action)).toEqual([action]);
  const [entry] = entries;
  expect(entry).toEqual({
    _id: expect.stringMatching(UUID_RE),
    at: expect.stringMatching(ISO_MS),
    actorType: 'user',
    actorId: org.user._id,
    actorLabel: org.email,
    action,
    resourceType,
    resourceId,
    details: expect.objectContaining(details),
    ip: FROM,
    requestId: reply.headers.get('x-request-id'),
  });
  return entry;
}

const smsCampaign = (extra: Record<string, unknown> = {}) => ({
  name: `Launch ${Math.random().toString(36).slice(2, 8)}`,
  type: 'broadcast',
  channels: ['sms'],
  recipients: { manual: ['0712345678'] },
  messages: { sms: { content: 'We are live' } },
  ...extra,
});

describe('every admin action of the list is recorded, with who, what, which resource, when and from where', () => {
  test('users and roles', async () => {
    const created = await api.post('/users', { firstName: 'Grace', lastName: 'Hopper', email: 'grace.audit@example.com', password: 'a good password', countryCode: '+254', phoneNumber: '700000001' }, admin());
    const id = created.body._id;
    await expectEntry(created, 'user.created', 'user', id, { email: 'grace.audit@example.com', role: 'user' });
    await expectEntry(await api.put(`/users/${id}`, { firstName: 'Amazing' }, admin()), 'user.updated', 'user', id, { fields: ['firstName'] });
    await expectEntry(await api.put(`/users/${id}`, { role: 'admin' }, admin()), 'user.role_changed', 'user', id, { from: 'user', to: 'admin' });
    await expectEntry(await api.put(`/users/${id}/deactivate`, undefined, admin()), 'user.deactivated', 'user', id);
    await expectEntry(await api.put(`/users/${id}/reactivate`, undefined, admin()), 'user.reactivated', 'user', id);
    await expectEntry(await api.put(`/users/${id}/password`, { newPassword: 'another password' }, admin()), 'user.password_reset', 'user', id);
    await expectEntry(await api.delete(`/users/${id}`, admin()), 'user.deleted', 'user', id, { email: 'grace.audit@example.com' });

    // A change that changes nothing (the same role, an inactive user deactivated again) is no action.
    const member = await addUser(api, org);
    expect(await entriesOf(await api.put(`/users/${member.user._id}`, { role: 'user' }, admin()))).toEqual([]);
    // A change of role and name in one request: one entry each, so each filter finds it.
    const both = await api.put(`/users/${member.user._id}`, { role: 'admin', lastName: 'Lovelace' }, admin());
    expect((await entriesOf(both)).map((e) => e.action).sort()).toEqual(['user.role_changed', 'user.updated']);
    // The organization's admin is its last one again (for the refusals below).
    await expectEntry(await api.delete(`/users/${member.user._id}`, admin()), 'user.deleted', 'user', member.user._id);
  });

  test('API keys', async () => {
    const created = await api.post('/api-keys', { name: 'CI', role: 'admin' }, admin());
    const { _id: id, prefix } = created.body.apiKey;
    const entry = await expectEntry(created, 'api_key.created', 'api_key', id, { name: 'CI', role: 'admin', prefix });
    expect(JSON.stringify(entry)).not.toContain(created.body.key);
    await expectEntry(await api.put(`/api-keys/${id}/revoke`, undefined, admin()), 'api_key.revoked', 'api_key', id, { name: 'CI' });
    // Revoking twice keeps the first revocation: nothing happened the second time.
    expect(await entriesOf(await api.put(`/api-keys/${id}/revoke`, undefined, admin()))).toEqual([]);
    await expectEntry(await api.delete(`/api-keys/${id}`, admin()), 'api_key.deleted', 'api_key', id, { name: 'CI' });
    // The GraphQL door goes through the same operation.
    const gql = await api.gql('mutation { createApiKey(input: { name: "From GraphQL" }) { apiKey { _id } } }', {}, admin());
    await expectEntry(gql, 'api_key.created', 'api_key', gql.body.data.createApiKey.apiKey._id, { name: 'From GraphQL' });
  });

  test('credentials (the fields changed, never their values) and organization settings', async () => {
    const set = await api.put('/organizations/current/credentials', { sms_apiKey: 'sk-very-secret-value', email_host: 'smtp.example.com', email_port: 587 }, admin());
    const entry = await expectEntry(set, 'credentials.updated', 'organization', org.orgId, { fields: ['email_host', 'email_port', 'sms_apiKey'] });
    expect(JSON.stringify(entry)).not.toContain('sk-very-secret-value');
    // The same values again change nothing; a removal is a change.
    expect(await entriesOf(await api.put('/organizations/current/credentials', { sms_apiKey: 'sk-very-secret-value' }, admin()))).toEqual([]);
    await expectEntry(await api.put('/organizations/current/credentials', { sms_apiKey: 'sk-another', email_pass: '' }, admin()), 'credentials.updated', 'organization', org.orgId, {
      fields: ['sms_apiKey'],
    });

    await expectEntry(await api.put('/organizations/current', { tracking: false }, admin()), 'organization.updated', 'organization', org.orgId, {
      changes: { tracking: { from: true, to: false } },
    });
    await api.put('/organizations/current', { tracking: true }, admin());
  });

  test('webhooks: an endpoint URL is shown without its query (which may hold a token)', async () => {
    const created = await api.post('/webhooks', { url: 'https://hooks.example.com/herald?token=abc123', eventTypes: ['message.sent'] }, admin());
    const id = created.body._id;
    const entry = await expectEntry(created, 'webhook.created', 'webhook', id, { url: 'https://hooks.example.com/herald', eventTypes: ['message.sent'], enabled: true });
    expect(JSON.stringify(entry)).not.toContain('abc123');
    expect(JSON.stringify(entry)).not.toContain(created.body.secret);
    await expectEntry(await api.put(`/webhooks/${id}`, { enabled: false, description: 'Ops' }, admin()), 'webhook.updated', 'webhook', id, { fields: ['description', 'enabled'] });
    await expectEntry(await api.post(`/webhooks/${id}/rotate-secret`, undefined, admin()), 'webhook.secret_rotated', 'webhook', id);
    const test = await api.post(`/webhooks/${id}/test`, {}, admin());
    await expectEntry(test, 'webhook.test_sent', 'webhook', id, { eventId: test.body.eventId, eventType: 'message.sent' });
    await expectEntry(await api.post(`/webhook-events/${test.body.eventId}/resend`, { endpointId: id }, admin()), 'webhook.event_resent', 'webhook', id, { eventId: test.body.eventId });
    await expectEntry(await api.delete(`/webhooks/${id}`, admin()), 'webhook.deleted', 'webhook', id, { url: 'https://hooks.example.com/herald' });
  });

  test('campaign launch (sent at once, scheduled, recurring) and cancel', async () => {
    const now = (await api.post('/campaigns', smsCampaign(), admin())).body;
    await expectEntry(await api.post(`/campaigns/${now._id}/launch`, undefined, admin()), 'campaign.launched', 'campaign', now._id, { name: now.name, status: 'active', recipients: 1 });

    const later = (await api.post('/campaigns', smsCampaign({ scheduleDate: new Date(Date.now() + 86_400_000).toISOString() }), admin())).body;
    await expectEntry(await api.post(`/campaigns/${later._id}/launch`, undefined, admin()), 'campaign.launched', 'campaign', later._id, { status: 'scheduled' });
    await expectEntry(await api.post(`/campaigns/${later._id}/cancel`, undefined, admin()), 'campaign.canceled', 'campaign', later._id, { from: 'scheduled' });

    const weekly = (
      await api.post('/campaigns', smsCampaign({ type: 'recurring', recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0', timezone: 'Africa/Nairobi' } }), admin())
    ).body;
    await expectEntry(await api.post(`/campaigns/${weekly._id}/launch`, undefined, admin()), 'campaign.launched', 'campaign', weekly._id, { status: 'active', type: 'recurring' });
    await expectEntry(await api.post(`/campaigns/${weekly._id}/cancel`, undefined, admin()), 'campaign.canceled', 'campaign', weekly._id, { from: 'active' });
  });

  test('contact imports: started and canceled', async () => {
    const started = await api.raw('POST', '/contacts/import', 'name,email\nAda,ada.import@example.com\n', admin(), { 'content-type': 'text/csv' });
    expect(started.status).toBe(202);
    await expectEntry(started, 'contact_import.started', 'contact_import', started.body._id, { bytes: 38 });
    await expectEntry(await api.post(`/contact-imports/${started.body._id}/cancel`, undefined, admin()), 'contact_import.canceled', 'contact_import', started.body._id);
  });

  test('consent changed by an admin: one contact, a new contact out of a channel, and in bulk', async () => {
    const contact = (await api.post('/contacts', { name: 'Jo', phone: '0712000001', email: 'jo.audit@example.com' }, admin())).body;
    const left = await api.put(`/contacts/${contact._id}`, { subscriptions: { sms: 'unsubscribed', email: 'subscribed' } }, admin());
    // Only what changed: email was subscribed already.
    await expectEntry(left, 'contact.subscriptions_changed', 'contact', contact._id, { changes: { sms: 'unsubscribed' } });
    expect(await entriesOf(await api.put(`/contacts/${contact._id}`, { subscriptions: { sms: 'unsubscribed' } }, admin()))).toEqual([]);
    // Other changes of a contact are not audited.
    expect(await entriesOf(await api.put(`/contacts/${contact._id}`, { name: 'Joanna' }, admin()))).toEqual([]);

    const out = await api.post('/contacts', { name: 'Out', email: 'out.audit@example.com', subscriptions: { email: 'unsubscribed' } }, admin());
    await expectEntry(out, 'contact.subscriptions_changed', 'contact', out.body._id, { changes: { email: 'unsubscribed' } });
    expect(await entriesOf(await api.post('/contacts', { name: 'In', email: 'in.audit@example.com' }, admin()))).toEqual([]);

    const bulkOut = await api.post('/contacts/bulk', { action: 'unsubscribe', ids: [contact._id], channels: ['email'] }, admin());
    await expectEntry(bulkOut, 'contact.bulk_unsubscribed', 'contact', null, { channels: ['email'], count: 1, ids: 1 });
    const bulkIn = await api.post('/contacts/bulk', { action: 'resubscribe', filter: { search: 'audit' } }, admin());
    await expectEntry(bulkIn, 'contact.bulk_resubscribed', 'contact', null, { count: 2, filter: { search: 'audit' } });
    // Bulk actions that are not consent changes are not audited.
    expect(await entriesOf(await api.post('/contacts/bulk', { action: 'addTag', ids: [contact._id], tag: 'vip' }, admin()))).toEqual([]);
  });

  test('an admin API key is the actor of what it does, named by its name and prefix', async () => {
    const { key, apiKey } = await createApiKey(api, org, 'admin');
    const created = await api.post('/webhooks', { url: 'https://hooks.example.com/key' }, as({ apiKey: key }));
    const [entry] = await entriesOf(created);
    expect(entry).toMatchObject({ actorType: 'api_key', actorId: apiKey._id, actorLabel: `key admin (${apiKey.prefix})`, action: 'webhook.created', ip: FROM });
    expect((await auditLog(`actor=${apiKey._id}`)).body.map((e) => e.action)).toEqual(['webhook.created']);
  });
});

test('reads leave no entry, over either door', async () => {
  const before = await total();
  const contact = (await api.get('/contacts?limit=1', admin())).body[0];
  for (const path of ['/users', '/users/me', '/api-keys', '/webhooks', '/webhook-events', '/campaigns', '/contacts', `/contacts/${contact._id}`, '/contact-imports', '/organizations/current', '/message-logs', '/audit-log']) {
    expect({ path, status: (await api.get(path, admin())).status }).toEqual({ path, status: 200 });
  }
  const gql = await api.gql('{ me { _id } users { totalCount } apiKeys { totalCount } organization { _id } auditLog(first: 5) { totalCount } }', {}, admin());
  expect(gql.body.errors).toBeUndefined();
  expect(await total()).toBe(before);
});

test('an action that fails writes no entry: the entry is in the transaction of the action', async () => {
  const before = await total();
  const draft = (await api.post('/campaigns', smsCampaign(), admin())).body;
  const nobody = (await api.post('/campaigns', smsCampaign({ recipients: { groups: [(await api.post('/groups', { name: 'Empty', color: 'bg-red-500' }, admin())).body._id] } }), admin())).body;
  const afterSetup = await total();
  expect(afterSetup).toBe(before);

  const failures: [string, Reply, number][] = [
    ['duplicate user', await api.post('/users', { firstName: 'A', lastName: 'B', email: org.email, password: 'a good password', countryCode: '+254', phoneNumber: '700000002' }, admin()), 400],
    ['demoting the last admin', await api.put(`/users/${org.user._id}`, { role: 'user', firstName: 'Changed' }, admin()), 409],
    ['deactivating the last admin', await api.put(`/users/${org.user._id}/deactivate`, undefined, admin()), 409],
    ['canceling a draft', await api.post(`/campaigns/${draft._id}/cancel`, undefined, admin()), 409],
    ['launching to nobody', await api.post(`/campaigns/${nobody._id}/launch`, undefined, admin()), 400],
    ['a bad webhook URL', await api.post('/webhooks', { url: 'ftp://nope' }, admin()), 400],
    ['a bad port', await api.put('/organizations/current/credentials', { sms_apiKey: 'changed', email_port: 'x' }, admin()), 400],
    ['an unknown user', await api.delete('/users/00000000-0000-4000-8000-000000000000', admin()), 404],
  ];
  for (const [what, res, status] of failures) expect({ what, status: res.status }).toEqual({ what, status });
  expect(await total()).toBe(before);
  // The launch that failed left the campaign a draft: it launches now, recorded once.
  expect((await api.get(`/campaigns/${draft._id}`, admin())).body.status).toBe('draft');
});

test('a launch refused by the daily message quota after it started is recorded as reverted', async () => {
  const limited = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false', QUOTA_MESSAGES_PER_DAY: '1' });
  try {
    const lapi = client(limited.url);
    const owner = await signupOrg(lapi);
    const cred = { token: owner.token };
    const campaign = (await lapi.post('/campaigns', smsCampaign({ recipients: { manual: ['0712345678', '0712345679'] } }), cred)).body;
    const refused = await lapi.post(`/campaigns/${campaign._id}/launch`, undefined, cred);
    expect(refused.status).toBe(429);
    const entries = (await lapi.get('/audit-log', cred)).body.filter((e: any) => e.requestId === refused.headers.get('x-request-id'));
    expect(entries.map((e: any) => e.action).sort()).toEqual(['campaign.launch_reverted', 'campaign.launched']);
    expect((await lapi.get(`/campaigns/${campaign._id}`, cred)).body.status).toBe('draft');
  } finally {
    await limited.stop();
  }
});

describe('GET /audit-log', () => {
  test('is newest first, paged with limit and cursor, X-Total-Count and Link', async () => {
    const all = (await auditLog('limit=1000')).body;
    expect(all.length).toBeGreaterThan(10);
    const times = all.map((e) => e.at);
    expect([...times].sort().reverse()).toEqual(times);
    const first = await auditLog('limit=3');
    expect(first.body).toEqual(all.slice(0, 3));
    expect(Number(first.headers.get('x-total-count'))).toBe(all.length);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')![1]!;
    expect((await api.get(next, admin())).body).toEqual(all.slice(3, 6));
  });

  test('filters by actor, action (exact or a prefix), dates and resource; all apply', async () => {
    const all = (await auditLog('limit=1000')).body;
    const only = async (query: string) => (await auditLog(`limit=1000&${query}`)).body;

    expect(await only('action=user.created')).toEqual(all.filter((e) => e.action === 'user.created'));
    const users = await only('action=user.');
    expect(users.length).toBeGreaterThan(5);
    expect(users).toEqual(all.filter((e) => e.action.startsWith('user.')));
    // A prefix with an underscore matches it literally (no LIKE wildcard).
    expect(await only('action=api_key.')).toEqual(all.filter((e) => e.action.startsWith('api_key.')));
    expect(await only(`actor=${org.user._id}`)).toEqual(all.filter((e) => e.actorId === org.user._id));
    expect(await only(`actor=${org.user._id.toUpperCase()}&action=webhook.`)).toEqual(all.filter((e) => e.actorId === org.user._id && e.action.startsWith('webhook.')));
    const resource = all.find((e) => e.action === 'user.deleted' && e.details.email === 'grace.audit@example.com')!.resourceId;
    expect((await only(`resourceId=${resource}`)).map((e) => e.action).reverse()).toEqual(['user.created', 'user.updated', 'user.role_changed', 'user.deactivated', 'user.reactivated', 'user.password_reset', 'user.deleted']);

    const today = new Date().toISOString().slice(0, 10);
    expect(await only(`dateFrom=${today}&dateTo=${today}`)).toEqual(all);
    expect(await only('dateTo=2000-01-01')).toEqual([]);
    expect(await only(`dateFrom=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    const middle = all[Math.floor(all.length / 2)]!;
    expect(await only(`dateTo=${middle.at}`)).toEqual(all.filter((e) => e.at <= middle.at));
  });

  test('invalid filter values are 400, named together', async () => {
    const res = await api.get('/audit-log?actor=someone&action=user.nope&dateFrom=yesterday&resourceId=42', admin());
    expectValidation(res, ['actor', 'action', 'dateFrom', 'resourceId']);
    expectValidation(await api.get('/audit-log?action=bogus.', admin()), ['action']);
    expectValidation(await api.get('/audit-log?dateFrom=2026-02-02&dateTo=2026-02-01', admin()), ['dateTo']);
    expectValidation(await api.get('/audit-log?colour=red', admin()), ['colour']);
    expectValidation(await api.get('/audit-log?limit=0', admin()), ['limit']);
    expectError(await api.get('/audit-log?cursor=nope', admin()), 400, /cursor/);
  });

  test('admins only: users (JWT or key) are refused 403, no credential 401; admin keys read it', async () => {
    const member = await addUser(api, org);
    expectError(await api.get('/audit-log', { token: member.token }), 403, 'Insufficient permissions');
    const userKey = await createApiKey(api, org, 'user');
    expectError(await api.get('/audit-log', { apiKey: userKey.key }), 403, 'Insufficient permissions');
    expect((await api.get('/audit-log')).status).toBe(401);
    const adminKey = await createApiKey(api, org, 'admin');
    expect((await api.get('/audit-log?limit=1', { apiKey: adminKey.key })).status).toBe(200);
    const gql = await api.gql('{ auditLog { totalCount } }', {}, { token: member.token });
    expect(gql.body.errors![0].extensions).toMatchObject({ code: 'FORBIDDEN', statusCode: 403 });
  });

  test("an organization never sees another's entries", async () => {
    const mine = (await auditLog('limit=1000')).body;
    await api.post('/api-keys', { name: 'Other', role: 'user' }, admin(other));
    const theirs = (await auditLog('limit=1000', admin(other))).body;
    expect(theirs.map((e) => e.action)).toEqual(['api_key.created']);
    const ids = new Set(mine.map((e) => e._id));
    expect(theirs.some((e) => ids.has(e._id))).toBe(false);
    // Filters naming the other's actor or resources find nothing (no 403: a filter names no resource of the caller's).
    expect((await auditLog(`actor=${org.user._id}`, admin(other))).body).toEqual([]);
    expect((await auditLog(`resourceId=${org.orgId}`, admin(other))).body).toEqual([]);
    const gql = await api.gql('{ auditLog(first: 1000) { totalCount edges { node { _id } } } }', {}, admin(other));
    expect(gql.body.data.auditLog.totalCount).toBe(1);
  });
});

test('GraphQL auditLog: a connection with the same entries, filters and paging', async () => {
  const rest = (await auditLog('limit=1000&action=webhook.')).body;
  const query = `query ($after: String, $filter: AuditLogFilter) {
    auditLog(first: 2, after: $after, filter: $filter) {
      totalCount pageInfo { hasNextPage endCursor }
      edges { cursor node { _id at actorType actorId actorLabel action resourceType resourceId details ip requestId } }
    }
  }`;
  const first = await api.gql(query, { filter: { action: 'webhook.' } }, admin());
  expect(first.body.errors).toBeUndefined();
  const page = first.body.data.auditLog;
  expect(page.totalCount).toBe(rest.length);
  expect(page.edges.map((e: any) => e.node)).toEqual(rest.slice(0, 2));
  expect(page.pageInfo.hasNextPage).toBe(true);
  const second = await api.gql(query, { filter: { action: 'webhook.' }, after: page.pageInfo.endCursor }, admin());
  expect(second.body.data.auditLog.edges.map((e: any) => e.node)).toEqual(rest.slice(2, 4));
  const bad = await api.gql('{ auditLog(filter: { action: "nope" }) { totalCount } }', {}, admin());
  expect(bad.body.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
});

describe('never editable', () => {
  test('no path changes or removes an entry, and GraphQL has no mutation for it', async () => {
    const [entry] = (await auditLog('limit=1')).body;
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await api.raw(method, '/audit-log', method === 'DELETE' ? undefined : {}, admin());
      expect({ method, status: res.status, allow: res.headers.get('allow') }).toEqual({ method, status: 405, allow: 'GET' });
    }
    for (const method of ['GET', 'PUT', 'DELETE']) expect((await api.raw(method, `/audit-log/${entry._id}`, undefined, admin())).status).toBe(404);
    const schema = await api.gql('{ __schema { mutationType { fields { name } } } }', {}, admin());
    expect(schema.body.data.__schema.mutationType.fields.map((f: any) => f.name).filter((n: string) => /audit/i.test(n))).toEqual([]);
  });

  test('the database refuses UPDATE and DELETE of an entry; an organization deleted takes its entries with it', async () => {
    const [entry] = (await auditLog('limit=1')).body;
    await expect(herald.db('audit_log').where({ organization_id: org.orgId, id: entry._id }).update({ action: 'user.created' })).rejects.toThrow(/never changed or removed/);
    await expect(herald.db('audit_log').where({ organization_id: org.orgId, id: entry._id }).delete()).rejects.toThrow(/never changed or removed/);
    expect((await auditLog('limit=1')).body[0]).toEqual(entry);

    const gone = await signupOrg(api);
    await api.post('/api-keys', { name: 'Doomed' }, { token: gone.token });
    expect(Number((await herald.db('audit_log').where({ organization_id: gone.orgId }).count({ n: '*' }))[0]!.n)).toBe(1);
    await herald.db('organizations').where({ id: gone.orgId }).delete();
    expect(Number((await herald.db('audit_log').where({ organization_id: gone.orgId }).count({ n: '*' }))[0]!.n)).toBe(0);
  });
});
