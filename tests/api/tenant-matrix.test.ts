import type { Herald } from '../../src/server.js';
import { addUser, client, createApiKey, signupOrg, startTestHerald, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

// Organization B attacks every id-taking operation of both doors with organization A's ids, with
// every kind of credential it has. Nothing may succeed, no byte of A may come back, and A's rows
// must be exactly as they were.
let herald: Herald;
let api: Client;
let a: Org;
let b: Org;
const ids: Record<string, string> = {};
const secrets: string[] = [];

const TENANT_TABLES = ['users', 'api_keys', 'contacts', 'groups', 'contact_groups', 'campaigns', 'campaign_batches', 'message_logs', 'sandbox_sends', 'organization_credits', 'message_templates', 'providers', 'suppressions', 'dkim_keys', 'invitations', 'erasures', 'consent_changes'];
const ORDER: Record<string, string[]> = { contact_groups: ['contact_id'], campaign_batches: ['channel', 'batch_no'], organization_credits: ['organization_id'] };

async function snapshot(orgId: string) {
  const out: Record<string, unknown[]> = {};
  for (const table of TENANT_TABLES) out[table] = await herald.db(table).where({ organization_id: orgId }).orderBy(ORDER[table] ?? ['id']);
  out.organizations = await herald.db('organizations').where({ id: orgId });
  return JSON.parse(JSON.stringify(out));
}

beforeAll(async () => {
  herald = await startTestHerald();
  api = client(herald.url);
  a = await signupOrg(api, { firstName: 'Alice', companyName: 'Alpha Secret Corp' });
  b = await signupOrg(api, { firstName: 'Bob', companyName: 'Beta Corp' });
  const member = await addUser(api, a, 'user');
  ids.user = member.user._id;
  ids.admin = a.user._id;
  ids.apiKey = (await createApiKey(api, a, 'admin')).apiKey._id;
  ids.group = (await api.post('/groups', { name: 'Alpha VIPs', color: 'bg-red-500' }, { token: a.token })).body._id;
  ids.contact = (await api.post('/contacts', { name: 'Alpha Customer', email: 'alpha.customer@example.com', phone: '0712345678', groups: [ids.group], attributes: { alphaSecretPlan: 'gold' } }, { token: a.token })).body._id;
  ids.leaver = (await api.post('/contacts', { name: 'Alpha Leaver', email: 'alpha.leaver@example.com', subscriptions: { email: 'unsubscribed' } }, { token: a.token })).body._id;
  ids.campaign = (await api.post('/campaigns', { name: 'Alpha Launch', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Alpha only' } } }, { token: a.token })).body._id;
  ids.template = (await api.post('/templates', { name: 'Alpha Welcome', channel: 'sms', content: 'Alpha template' }, { token: a.token })).body._id;
  ids.draft = (await api.post('/campaigns', { name: 'Alpha Draft', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Alpha draft' } } }, { token: a.token })).body._id;
  await api.post(`/campaigns/${ids.campaign}/launch`, undefined, { token: a.token });
  ids.log = (await api.get('/message-logs', { token: a.token })).body[0]._id;
  ids.provider = (await api.post('/providers', { type: 'africastalking', name: 'Alpha AT', settings: { username: 'alpha-app' }, secrets: { apiKey: 'alpha-at-key' } }, { token: a.token })).body._id;
  secrets.push('alpha-at-key', 'alpha-app');
  ids.suppression = (await api.post('/suppressions', { address: 'alpha.bounced@example.com', detail: 'Alpha detail' }, { token: a.token })).body._id;
  ids.dkim = (await api.post('/dkim-keys', { domain: 'alpha-secret.example', selector: 'alpha' }, { token: a.token })).body._id;
  secrets.push('alpha.bounced', 'Alpha detail', 'alpha-secret.example');
  const leaver = (await api.post('/contacts', { name: 'Alpha Erased', email: 'alpha.erased@example.com' }, { token: a.token })).body._id;
  ids.erasure = (await api.post(`/contacts/${leaver}/erase`, undefined, { token: a.token })).body._id;
  const erased = await waitFor(() => api.get(`/erasures/${ids.erasure}`, { token: a.token }), (r: any) => r.body.status === 'done', 20_000);
  secrets.push(...erased.body.tokens);
  const invited = await api.post('/invitations', { email: 'alpha.invitee@example.com', role: 'admin', firstName: 'Invitee' }, { token: a.token });
  expect(invited.status).toBe(201);
  ids.invitation = invited.body.invitation._id;
  secrets.push('alpha.invitee', 'alphaSecretPlan', new URL(invited.body.link).pathname.split('/').pop()!);
  secrets.push(...Object.values(ids), a.orgId, a.email, member.email, 'Alpha', 'alpha.customer', '+254712345678');
});
afterAll(() => herald.stop());

test('every id-taking operation of both doors, with every credential of another organization: 0 successes, 0 leaks, 0 changes', async () => {
  const bUser = await addUser(api, b, 'user');
  const bAdminKey = (await createApiKey(api, b, 'admin')).key;
  const bUserKey = (await createApiKey(api, b, 'user')).key;
  const credentials: [string, Credential][] = [
    ['admin JWT', { token: b.token }],
    ['user JWT', { token: bUser.token }],
    ['admin key (header)', { apiKey: bAdminKey }],
    ['admin key (query)', { queryKey: bAdminKey }],
    ['user key (header)', { apiKey: bUserKey }],
    ['user key (query)', { queryKey: bUserKey }],
  ];
  const rest: [string, string, unknown?][] = [
    ['GET', `/users/${ids.user}`],
    ['PUT', `/users/${ids.user}`, { firstName: 'Owned' }],
    ['PUT', `/users/${ids.user}/deactivate`],
    ['PUT', `/users/${ids.user}/reactivate`],
    ['PUT', `/users/${ids.user}/password`, { newPassword: 'hijacked password' }],
    ['PUT', `/users/${ids.admin}/password`, { oldPassword: 'x'.repeat(8), newPassword: 'hijacked password' }],
    ['DELETE', `/users/${ids.user}`],
    ['GET', `/contacts/${ids.contact}`],
    ['PUT', `/contacts/${ids.contact}`, { name: 'Owned' }],
    ['PUT', `/contacts/${ids.contact}`, { subscriptions: { email: 'unsubscribed', sms: 'unsubscribed' } }],
    ['PUT', `/contacts/${ids.leaver}`, { subscriptions: { email: 'subscribed' } }],
    ['DELETE', `/contacts/${ids.contact}`],
    ['GET', `/groups/${ids.group}`],
    ['PUT', `/groups/${ids.group}`, { name: 'Owned' }],
    ['DELETE', `/groups/${ids.group}`],
    ['GET', `/campaigns/${ids.campaign}`],
    ['PUT', `/campaigns/${ids.draft}`, { name: 'Owned' }],
    ['POST', `/campaigns/${ids.draft}/launch`],
    ['POST', `/campaigns/${ids.campaign}/cancel`],
    ['GET', `/campaigns/${ids.campaign}/resend-failed`],
    ['POST', `/campaigns/${ids.campaign}/resend-failed`],
    ['GET', `/providers/${ids.provider}`],
    ['PUT', `/providers/${ids.provider}`, { name: 'Owned', enabled: false }],
    ['DELETE', `/providers/${ids.provider}`],
    ['POST', `/providers/${ids.provider}/test`, { to: '0712345678' }],
    ['PUT', '/providers/order', { channel: 'sms', ids: [ids.provider] }],
    ['DELETE', `/suppressions/${ids.suppression}`],
    ['GET', `/dkim-keys/${ids.dkim}`],
    ['DELETE', `/dkim-keys/${ids.dkim}`],
    ['POST', `/dkim-keys/${ids.dkim}/check`],
    ['GET', `/message-logs/${ids.log}`],
    ['GET', `/templates/${ids.template}`],
    ['PUT', `/templates/${ids.template}`, { name: 'Owned' }],
    ['DELETE', `/templates/${ids.template}`],
    ['PUT', `/api-keys/${ids.apiKey}/revoke`],
    ['DELETE', `/api-keys/${ids.apiKey}`],
    ['POST', '/contacts', { name: 'Into Alpha group', phone: '0712000001', groups: [ids.group] }],
    ['POST', '/campaigns', { name: 'Steal', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'x' } }, recipients: { contacts: [ids.contact] } }],
    ['POST', '/campaigns', { name: 'Steal', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'x' } }, recipients: { groups: [ids.group] } }],
    ['GET', `/campaigns/${ids.campaign}/funnel`],
    ['GET', `/campaigns/${ids.campaign}/estimate`],
    ['POST', `/campaigns/${ids.campaign}/preview`, { contactId: ids.contact }],
    ['DELETE', `/invitations/${ids.invitation}`],
    ['GET', `/contacts/${ids.contact}/data`],
    ['POST', `/contacts/${ids.contact}/erase`],
    ['GET', `/erasures/${ids.erasure}`],
    ['POST', '/campaigns/preview', { channel: 'sms', content: 'Hi {{ contact.name }} {{ contact.attributes.alphaSecretPlan }}', contactId: ids.contact }],
    ['POST', '/notifications/estimate', { type: 'sms', to: '0712000002', templateId: ids.template }],
  ];
  // Answered for B's own organization (200), with nothing of A in them.
  const ownAnswers: [string, string, unknown?][] = [
    ['GET', '/contacts/data?address=alpha.customer%40example.com'],
    ['GET', '/contacts/data?address=0712345678'],
    ['POST', '/campaigns/preview', { channel: 'email', subject: 'Hi {{ contact.name }}', content: 'Plan {{ contact.attributes.alphaSecretPlan }}', to: 'alpha.customer@example.com' }],
    ['POST', '/notifications/estimate', { type: 'sms', to: '0712345678', message: 'Hi {{ contact.name }}' }],
  ];
  const lists = ['/erasures', '/invitations', '/contacts/attribute-keys', '/stats/daily?days=90', '/suppressions', '/dkim-keys', '/providers', `/contacts?group=${ids.group}`, `/message-logs?campaignId=${ids.campaign}`, '/contacts', '/groups', '/campaigns', '/message-logs', '/sandbox/outbox', '/templates'];
  lists.push('/contacts?unsubscribed=email');
  const gql: [string, Record<string, unknown>?][] = [
    [`{ user(id: "${ids.user}") { _id email } }`],
    [`mutation { updateUser(id: "${ids.user}", input: { firstName: "Owned" }) { _id } }`],
    [`mutation { deactivateUser(id: "${ids.user}") { _id } }`],
    [`mutation { reactivateUser(id: "${ids.user}") { _id } }`],
    [`mutation { deleteUser(id: "${ids.user}") { message } }`],
    [`mutation { changePassword(id: "${ids.user}", input: { newPassword: "hijacked password" }) { _id } }`],
    [`{ contact(id: "${ids.contact}") { _id name email } }`],
    [`mutation { updateContact(id: "${ids.contact}", input: { name: "Owned" }) { _id } }`],
    [`mutation { updateContact(id: "${ids.leaver}", input: { subscriptions: { email: subscribed } }) { _id } }`],
    [`mutation { deleteContact(id: "${ids.contact}") { message } }`],
    [`{ group(id: "${ids.group}") { _id name contacts { edges { node { name } } } } }`],
    [`mutation { updateGroup(id: "${ids.group}", input: { name: "Owned" }) { _id } }`],
    [`mutation { deleteGroup(id: "${ids.group}") { message } }`],
    [`{ campaign(id: "${ids.campaign}") { _id name progress { total } logs { totalCount } } }`],
    [`mutation { updateCampaign(id: "${ids.draft}", input: { name: "Owned" }) { _id } }`],
    [`mutation { launchCampaign(id: "${ids.draft}") { status } }`],
    [`mutation { cancelCampaign(id: "${ids.campaign}") { status } }`],
    [`{ campaignResendEstimate(id: "${ids.campaign}") { recipients } }`],
    [`mutation { resendFailedCampaign(id: "${ids.campaign}") { runs { _id } } }`],
    [`{ provider(id: "${ids.provider}") { _id name settings } }`],
    [`mutation { updateProvider(id: "${ids.provider}", input: { name: "Owned" }) { _id } }`],
    [`mutation { deleteProvider(id: "${ids.provider}") { message } }`],
    [`mutation { testProvider(id: "${ids.provider}", to: "0712345678") { ok } }`],
    [`mutation { removeSuppression(id: "${ids.suppression}") { message } }`],
    [`mutation { deleteDkimKey(id: "${ids.dkim}") { message } }`],
    [`mutation { checkDkimKey(id: "${ids.dkim}") { matches } }`],
    [`{ messageLog(id: "${ids.log}") { _id recipients { recipient } } }`],
    [`{ template(id: "${ids.template}") { _id name content } }`],
    [`mutation { updateTemplate(id: "${ids.template}", input: { name: "Owned" }) { _id } }`],
    [`mutation { deleteTemplate(id: "${ids.template}") { message } }`],
    [`mutation { revokeApiKey(id: "${ids.apiKey}") { _id } }`],
    [`mutation { deleteApiKey(id: "${ids.apiKey}") { message } }`],
    [`{ contacts(filter: { group: "${ids.group}" }) { totalCount edges { node { name } } } }`],
    [`{ contacts(filter: { unsubscribed: email }) { totalCount edges { node { name } } } }`],
    [`{ messageLogs(filter: { campaignId: "${ids.campaign}" }) { totalCount } }`],
    [`{ campaign(id: "${ids.campaign}") { funnel { audience sent } } }`],
    [`{ campaignEstimate(id: "${ids.campaign}") { recipients } }`],
    [`{ campaignPreview(id: "${ids.campaign}", contactId: "${ids.contact}") { contactId } }`],
    [`{ previewMessage(input: { channel: sms, content: "Hi {{ contact.name }}", contactId: "${ids.contact}" }) { body } }`],
    [`mutation { revokeInvitation(id: "${ids.invitation}") { message } }`],
    [`{ invitations { totalCount edges { node { email } } } }`],
    [`{ personData(contactId: "${ids.contact}") }`],
    [`mutation { eraseContact(id: "${ids.contact}") { _id } }`],
    [`{ erasure(id: "${ids.erasure}") { _id tokens } }`],
    [`{ erasures { totalCount edges { node { _id tokens } } } }`],
  ];

  // The sandbox reports the seeded sends' receipts seconds later, in its own jobs: those land before the snapshot, not during the attempts.
  await waitFor(async () => (await herald.db.raw(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'sandbox-receipts'`)).rows[0].n, (n: number) => n === 0, 20_000);
  const before = await snapshot(a.orgId);
  let attempts = 0;
  const successes: string[] = [];
  const leaks: string[] = [];
  // A value the request itself carried (an id echoed in a 400) is not a leak; anything else of A is.
  const leaked = (body: unknown, sent: unknown = '') =>
    secrets.filter((s) => JSON.stringify(body ?? '').includes(s) && !JSON.stringify(sent ?? '').includes(s));

  for (const [label, cred] of credentials) {
    for (const [method, path, body] of rest) {
      const res = await api.raw(method, path, body ?? (method === 'GET' || method === 'DELETE' ? undefined : {}), cred);
      attempts++;
      if (res.status < 400) successes.push(`${label} ${method} ${path} -> ${res.status}`);
      if (res.status >= 500) successes.push(`${label} ${method} ${path} -> ${res.status} (server error)`);
      if (leaked(res.body, body).length) leaks.push(`${label} ${method} ${path}: ${leaked(res.body, body).join(', ')}`);
    }
    for (const [method, path, body] of ownAnswers) {
      const res = await api.raw(method, path, body, cred);
      attempts++;
      // What B asked about (an address, in the query) may come back; nothing else of A's.
      const sent = body ?? decodeURIComponent(path).replace('0712345678', '+254712345678');
      if (res.status >= 500) successes.push(`${label} ${method} ${path} -> ${res.status} (server error)`);
      if (leaked(res.body, sent).length) leaks.push(`${label} ${method} ${path}: ${leaked(res.body, sent).join(', ')}`);
    }
    for (const path of lists) {
      const res = await api.get(path, cred);
      attempts++;
      if (leaked(res.body).length) leaks.push(`${label} GET ${path}: ${leaked(res.body).join(', ')}`);
    }
    for (const [query, variables] of gql) {
      const res = await api.gql(query, variables, cred);
      attempts++;
      const data = res.body.data ?? {};
      const gotData = Object.values(data).some((v) => v !== null && !(typeof v === 'object' && 'totalCount' in (v as object) && (v as { totalCount: number }).totalCount === 0));
      if (gotData) successes.push(`${label} ${query.slice(0, 60)} -> ${JSON.stringify(data).slice(0, 80)}`);
      if (leaked(res.body).length) leaks.push(`${label} ${query.slice(0, 60)}: ${leaked(res.body).join(', ')}`);
    }
  }
  const after = await snapshot(a.orgId);
  console.log(`tenant matrix: ${attempts} cross-organization attempts, ${successes.length} successes, ${leaks.length} leaks`);
  expect(successes).toEqual([]);
  expect(leaks).toEqual([]);
  expect(after).toEqual(before);
  expect(attempts).toBeGreaterThan(250);
});

test('another organization’s daily figures hold nothing of the first’s sends', async () => {
  const theirs = await api.get('/stats/daily?days=90', { token: b.token });
  expect(theirs.status).toBe(200);
  expect(Object.values(theirs.body.totals).every((n) => n === 0)).toBe(true);
  const mine = await api.get('/stats/daily?days=90', { token: a.token });
  expect(mine.body.totals.sent).toBeGreaterThan(0);
});

test('the same ids are answered 403 Insufficient permissions, and a made-up id 404', async () => {
  for (const path of [`/contacts/${ids.contact}`, `/groups/${ids.group}`, `/campaigns/${ids.campaign}`, `/message-logs/${ids.log}`, `/users/${ids.user}`, `/templates/${ids.template}`]) {
    expect(await api.get(path, { token: b.token })).toMatchObject({ status: 403, body: { statusCode: 403, message: 'Insufficient permissions', error: 'Forbidden' } });
  }
  for (const path of ['/contacts/', '/groups/', '/campaigns/', '/message-logs/', '/users/', '/templates/']) {
    expect((await api.get(`${path}00000000-0000-4000-8000-000000000000`, { token: b.token })).status).toBe(404);
    expect((await api.get(`${path}not-a-uuid`, { token: b.token })).status).toBe(404);
  }
});
