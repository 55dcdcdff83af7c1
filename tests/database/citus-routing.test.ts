import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { makeContact, makeGroup, nextLink } from '../helpers/contacts-groups.js';
import { heraldWithOrg, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { expectEachWithOrganization, tenantStatementsOf, type Statement } from '../helpers/statements.js';

/**
 * Every statement an organization's request issues stays with that organization. On Citus, EXPLAIN
 * shows it routed to one shard (every `Task Count` is 1). On plain Postgres, every scan of a tenant
 * table is restricted by `organization_id = <the organization>` itself: a subquery correlated only
 * to the outer row (`cg.contact_id = contacts.id`) is what sends a statement to every shard on Citus.
 * The statements are the ones the services really issue, recorded from the server's knex.
 */

let herald: Herald, api: Client, org: Org, cred: Credential, explain: pg.Client;

const recorded = new Map<string, { reply: Reply; statements: Statement[] }>();

/** Runs `request` and keeps its reply and the tenant statements the server issued meanwhile, under `label`. */
async function record(label: string, request: () => Promise<Reply>): Promise<Reply> {
  const { result: reply, statements } = await tenantStatementsOf(herald.db, request);
  recorded.set(label, { reply, statements });
  return reply;
}

beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  cred = { token: org.token };
  explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();

  const vip = await makeGroup(api, cred, { name: 'VIP' });
  await makeContact(api, cred, { name: 'Jo', email: 'jo@example.com', tags: ['x'], groups: [vip._id] });
  await api.post('/notifications/send', { type: 'sms', to: ['0712345678', '0712345679'], message: 'Hi' }, cred);
  const log = (await api.get('/message-logs?limit=1', cred)).body[0];

  const group = (await record('groups: create', () => api.post('/groups', { name: 'Leads', color: 'bg-blue-500' }, cred))).body;
  await record('groups: update', () => api.put(`/groups/${group._id}`, { name: 'Hot leads' }, cred));
  await record('groups: get', () => api.get(`/groups/${group._id}`, cred));
  await record('groups: list', () => api.get('/groups?limit=1', cred));
  const contact = (await record('contacts: create', () => api.post('/contacts', { name: 'Al', phone: '0722000000', groups: [group._id] }, cred))).body;
  await record('contacts: update', () => api.put(`/contacts/${contact._id}`, { phone: '0722000001', groups: [vip._id] }, cred));
  await record('contacts: get', () => api.get(`/contacts/${contact._id}`, cred));
  await record('contacts: list, first page', () => api.get('/contacts?limit=1', cred));
  const next = nextLink(await api.get('/contacts?limit=1', cred))!;
  await record('contacts: list, next page', () => api.get(next, cred));
  await record('contacts: list by group, tag and search', () => api.get(`/contacts?limit=1&group=${vip._id}&tag=x&search=jo`, cred));
  await record('contacts: update attributes', () => api.put(`/contacts/${contact._id}`, { attributes: { plan: 'pro', seats: 3 } }, cred));
  await record('contacts: list by attributes', () => api.get('/contacts?attributes.plan=pro&attributes.seats=3', cred));
  await record('Group.contacts and Contact.groups', () => api.gql('{ groups { edges { node { contactCount contacts(first: 1) { edges { node { groups { _id } } } } } } } }', {}, cred));
  await record('message logs: list', () => api.get('/message-logs?limit=1&channel=sms&status=success', cred));
  await record('message logs: get', () => api.get(`/message-logs/${log._id}`, cred));
  await record('sandbox outbox: list', () => api.get('/sandbox/outbox?limit=1&channel=sms', cred));
  await record('organizations: current', () => api.get('/organizations/current', cred));
  await record('notifications: send to all', () => api.post('/notifications/send-to-all', { type: 'email', subject: 'S', message: 'Hi', to: 'all' }, cred, { 'idempotency-key': 'routing' }));
  const template = (await record('templates: create', () => api.post('/templates', { name: 'Welcome', channel: 'email', subject: 'Hi {{ contact.name }}', content: 'Hello' }, cred))).body;
  await record('templates: update', () => api.put(`/templates/${template._id}`, { channel: 'sms', subject: null }, cred));
  await record('templates: get', () => api.get(`/templates/${template._id}`, cred));
  await record('templates: list', () => api.get('/templates?limit=1', cred));
  await record('templates (GraphQL)', () => api.gql('{ templates(first: 1) { totalCount edges { node { _id content } } } }', {}, cred));
  // Campaigns: a personalised one (its contacts read per chunk, consent honoured), before and after launch.
  await api.put(`/contacts/${contact._id}`, { subscriptions: { sms: 'unsubscribed' } }, cred);
  const personal = { sms: { content: 'Hi {{ contact.firstName }}, {{ contact.attributes.plan }}' }, email: { templateId: template._id } };
  await api.put(`/templates/${template._id}`, { channel: 'email', subject: 'Hi {{ contact.name }}' }, cred);
  const campaign = (await record('campaigns: create with a template', () =>
    api.post('/campaigns', { name: 'Routing', type: 'targeted', channels: ['sms', 'email'], recipients: { groups: [vip._id], manual: ['0733000000'] }, messages: personal }, cred),
  )).body;
  await record('campaigns: preview', () => api.post(`/campaigns/${campaign._id}/preview`, {}, cred));
  await record('campaigns: estimate', () => api.get(`/campaigns/${campaign._id}/estimate`, cred));
  await record('campaigns: test send', () => api.post(`/campaigns/${campaign._id}/test`, { to: ['0712345678', 'jo@example.com'] }, cred));
  await record('campaigns: launch', () => api.post(`/campaigns/${campaign._id}/launch`, {}, cred));
  // Campaign types: an automated campaign triggered by a contact joining its group, a recurring one.
  const welcome = (await record('campaigns: create automated', () =>
    api.post('/campaigns', { name: 'Welcome', type: 'automated', channels: ['sms'], trigger: { event: 'contact.added_to_group', groupId: vip._id }, delay: 'PT1H', messages: { sms: { content: 'Hi' } } }, cred),
  )).body;
  await record('campaigns: launch automated', () => api.post(`/campaigns/${welcome._id}/launch`, {}, cred));
  await record('contacts: create, triggering a campaign', () => api.post('/contacts', { name: 'Bo', phone: '0722000009', groups: [vip._id] }, cred));
  await record('campaigns: pending sends', () => api.get(`/campaigns/${welcome._id}/pending-sends`, cred));
  await record('campaigns: runs', () => api.get(`/campaigns/${welcome._id}/runs`, cred));
  await record('campaigns: get, with its runs summed', () => api.get(`/campaigns/${welcome._id}`, cred));
  await record('campaigns: list', () => api.get('/campaigns?limit=2', cred));
  await record('message logs: of a campaign and its runs', () => api.get(`/message-logs?campaignId=${welcome._id}`, cred));
  await record('campaigns: cancel automated', () => api.post(`/campaigns/${welcome._id}/cancel`, {}, cred));
  const digest = (await record('campaigns: create recurring', () =>
    api.post('/campaigns', { name: 'Digest', type: 'recurring', channels: ['sms'], recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi' }, messages: { sms: { content: 'Hi' } } }, cred),
  )).body;
  await record('campaigns: launch recurring', () => api.post(`/campaigns/${digest._id}/launch`, {}, cred));
  await record('campaigns: cancel recurring', () => api.post(`/campaigns/${digest._id}/cancel`, {}, cred));
  await record('templates: delete', () => api.delete(`/templates/${template._id}`, cred));
  await record('contacts: delete', () => api.delete(`/contacts/${contact._id}`, cred));
  await record('groups: delete', () => api.delete(`/groups/${group._id}`, cred));
  await record('audit log: list, filtered', () => api.get(`/audit-log?limit=1&action=campaign.&actor=${org.user._id}&dateFrom=2020-01-01`, cred));
  const auditNext = nextLink(await api.get('/audit-log?limit=1', cred))!;
  await record('audit log: next page', () => api.get(auditNext, cred));
});
afterAll(async () => {
  await explain?.end();
  await herald?.stop();
});

test.each([
  'groups: create', 'groups: update', 'groups: get', 'groups: list', 'groups: delete',
  'contacts: create', 'contacts: update', 'contacts: get', 'contacts: delete',
  'contacts: list, first page', 'contacts: list, next page', 'contacts: list by group, tag and search',
  'contacts: update attributes', 'contacts: list by attributes',
  'Group.contacts and Contact.groups', 'message logs: list', 'message logs: get', 'sandbox outbox: list',
  'organizations: current', 'notifications: send to all',
  'templates: create', 'templates: update', 'templates: get', 'templates: list', 'templates (GraphQL)', 'templates: delete',
  'campaigns: create with a template', 'campaigns: preview', 'campaigns: estimate', 'campaigns: test send', 'campaigns: launch',
  'campaigns: create automated', 'campaigns: launch automated', 'contacts: create, triggering a campaign', 'campaigns: pending sends',
  'campaigns: runs', 'campaigns: get, with its runs summed', 'campaigns: list', 'message logs: of a campaign and its runs', 'campaigns: cancel automated',
  'campaigns: create recurring', 'campaigns: launch recurring', 'campaigns: cancel recurring',
  'audit log: list, filtered', 'audit log: next page',
])('%s: every statement stays with the organization', async (label) => {
  const { reply, statements } = recorded.get(label)!;
  expect({ ok: reply.status < 300 && !reply.body?.errors, body: reply.body }).toMatchObject({ ok: true });
  expect(statements.length).toBeGreaterThan(0);
  await expectEachWithOrganization(explain, statements, org.orgId);
});
