import type { Herald } from '../../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

/**
 * Frequency caps: at most N campaign messages to one address per channel and period. Capped
 * addresses are left out when a campaign starts (`analytics.capped`, never charged), the estimate
 * counts them first, exempt campaigns, test sends and automated ones are never capped, and two
 * campaigns started together (two launches at once, or two scheduled starts in two worker
 * processes) never take an address over its cap.
 */

let herald: Herald;
let second: Herald | undefined;
let api: Client;
let database: Awaited<ReturnType<typeof isolatedDatabase>>;
const ENV = { CAMPAIGN_INLINE_LIMIT: '5', CAMPAIGN_LEASE_SECONDS: '2', SIGNUP_CREDITS: '1000' };

beforeAll(async () => {
  database = await isolatedDatabase('frequency_caps');
  herald = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
  api = client(herald.url);
});
afterAll(async () => {
  await second?.stop();
  await herald?.stop();
  await database?.drop();
});

const auth = (org: Org): Credential => ({ token: org.token });

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function contacts(org: Org, n: number, prefix: string): Promise<{ _id: string; phone: string }[]> {
  const made = [];
  for (let i = 0; i < n; i++) made.push(await ok(api.post('/contacts', { name: `C${i}`, phone: `${prefix}${String(i).padStart(2, '0')}` }, auth(org)), 201));
  return made;
}

const draft = (org: Org, body: Record<string, unknown> = {}) =>
  ok(api.post('/campaigns', { name: 'Capped', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'News' } }, ...body }, auth(org)), 201);
const launch = (org: Org, id: string) => api.post(`/campaigns/${id}/launch`, undefined, auth(org));
const done = (org: Org, id: string) => waitFor(() => ok(api.get(`/campaigns/${id}`, auth(org))), (c) => c.status === 'completed');

/** The addresses a campaign's logs hold as sent. */
async function sentTo(org: Org, id: string): Promise<string[]> {
  const logs = (await ok(api.get(`/message-logs?campaignId=${id}&limit=1000`, auth(org)))) as any[];
  return logs.flatMap((l) => l.recipients.filter((r: any) => r.status === 'success').map((r: any) => r.recipient)).sort();
}

test('caps are set per channel through both doors, checked and audited', async () => {
  const org = await signupOrg(api);
  expect((await ok(api.get('/organizations/current', auth(org)))).frequencyCaps).toEqual({});
  const bad = await api.put('/organizations/current', { frequencyCaps: { sms: { messages: 0, days: 7 }, fax: { messages: 1, days: 1 } } }, auth(org));
  expect(bad.status).toBe(400);
  expect(bad.body.details.map((d: any) => d.field).sort()).toEqual(['frequencyCaps.fax', 'frequencyCaps.sms.messages']);
  const set = await ok(api.put('/organizations/current', { frequencyCaps: { sms: { messages: 3, days: 7 }, email: null } }, auth(org)));
  expect(set.frequencyCaps).toEqual({ sms: { messages: 3, days: 7 } });
  const gql = await api.post(
    '/graphql',
    { query: 'mutation { updateOrganization(input: { frequencyCaps: { email: { messages: 2, days: 1 } } }) { frequencyCaps { email { messages days } sms { messages days } whatsapp { messages } } } }' },
    auth(org),
  );
  expect(gql.body.data.updateOrganization.frequencyCaps).toEqual({ email: { messages: 2, days: 1 }, sms: null, whatsapp: null });
  const audit = (await ok(api.get('/audit-log?action=organization.updated', auth(org)))) as any[];
  expect(audit[0].details.changes.frequencyCaps).toEqual({ from: { sms: { messages: 3, days: 7 } }, to: { email: { messages: 2, days: 1 } } });
  // The same caps again change nothing: no entry.
  await ok(api.put('/organizations/current', { frequencyCaps: { email: { messages: 2, days: 1 } } }, auth(org)));
  expect((await ok(api.get('/audit-log?action=organization.updated', auth(org)))) as any[]).toHaveLength(audit.length);
});

test('an address over its cap is left out, counted first by the estimate, never charged; exempt campaigns and test sends are not capped', async () => {
  const org = await signupOrg(api);
  await ok(api.put('/organizations/current', { frequencyCaps: { sms: { messages: 2, days: 7 } } }, auth(org)));
  const [a, b, c] = await contacts(org, 3, '07123460');
  const first = await draft(org);
  await ok(launch(org, first._id));
  await done(org, first._id);
  const second = await draft(org, { recipients: { contacts: [a!._id, b!._id] } });
  await ok(launch(org, second._id));
  await done(org, second._id);

  // A and B have had two: the third campaign goes to C alone.
  const third = await draft(org);
  const estimate = await ok(api.get(`/campaigns/${third._id}/estimate`, auth(org)));
  expect(estimate).toMatchObject({ recipients: 1, capped: 2, cost: estimate.channels[0].unitCost });
  expect(estimate.channels[0]).toMatchObject({ channel: 'sms', recipients: 1, capped: 2 });
  const before = (await ok(api.get('/organizations/current', auth(org)))).credits;
  await ok(launch(org, third._id));
  const finished = await done(org, third._id);
  expect(finished.analytics).toMatchObject({ sent: 1, failed: 0, capped: 2 });
  expect(await sentTo(org, third._id)).toEqual([c!.phone]);
  expect((await ok(api.get('/organizations/current', auth(org)))).credits).toBeCloseTo(before - estimate.cost, 2);
  const gql = await api.post('/graphql', { query: `{ campaign(id: "${third._id}") { analytics { capped sent } funnel { audience capped } } }` }, auth(org));
  expect(gql.body.data.campaign).toEqual({ analytics: { capped: 2, sent: 1 }, funnel: { audience: 1, capped: 2 } });
  expect(await ok(api.get(`/campaigns/${third._id}/funnel`, auth(org)))).toMatchObject({ audience: 1, capped: 2, sent: 1 });

  // A test send reaches a capped address; an exempt campaign reaches everyone and counts for nobody.
  const tested = await ok(api.post(`/campaigns/${third._id}/test`, { to: [a!.phone] }, auth(org)));
  expect(tested).toEqual([expect.objectContaining({ recipient: a!.phone, status: 'success' })]);
  const notice = await draft(org, { exemptFromCaps: true });
  expect(notice.exemptFromCaps).toBe(true);
  await ok(launch(org, notice._id));
  expect((await done(org, notice._id)).analytics).toMatchObject({ sent: 3, capped: 0 });

  // Everyone has had two now: a campaign to them all has nobody left, and says so.
  const fourth = await draft(org);
  const refused = await launch(org, fourth._id);
  expect(refused.status).toBe(400);
  expect(refused.body.message).toBe('The campaign has no eligible recipients');
  expect((await ok(api.get(`/campaigns/${fourth._id}/estimate`, auth(org))))).toMatchObject({ recipients: 0, capped: 3 });
});

test('two campaigns launched at once never take an address over its cap', async () => {
  const org = await signupOrg(api);
  await ok(api.put('/organizations/current', { frequencyCaps: { sms: { messages: 1, days: 7 } } }, auth(org)));
  const people = await contacts(org, 20, '07123461');
  const [x, y] = [await draft(org), await draft(org)];
  const launched = await Promise.all([launch(org, x._id), launch(org, y._id)]);
  // The second to start finds everyone capped: it is refused with nothing sent.
  expect(launched.map((r) => r.status).sort()).toEqual([200, 400]);
  const started = launched[0]!.status === 200 ? x : y;
  expect((await done(org, started._id)).analytics).toMatchObject({ sent: 20, capped: 0 });
  const all = [...(await sentTo(org, x._id)), ...(await sentTo(org, y._id))].sort();
  expect(all).toEqual(people.map((p) => p.phone).sort());
});

test('two scheduled campaigns started together in two worker processes: each address once', async () => {
  second = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
  const org = await signupOrg(api);
  await ok(api.put('/organizations/current', { frequencyCaps: { sms: { messages: 1, days: 7 } } }, auth(org)));
  const people = await contacts(org, 30, '07123462');
  const at = new Date(Date.now() + 1500).toISOString();
  const [x, y] = [await draft(org, { scheduleDate: at }), await draft(org, { scheduleDate: at })];
  await Promise.all([ok(launch(org, x._id)), ok(launch(org, y._id))]);
  const [cx, cy] = await Promise.all([done(org, x._id), done(org, y._id)]);
  expect(cx.analytics.sent + cy.analytics.sent).toBe(30);
  expect(cx.analytics.capped + cy.analytics.capped).toBe(30);
  const all = [...(await sentTo(org, x._id)), ...(await sentTo(org, y._id))].sort();
  expect(all).toEqual(people.map((p) => p.phone).sort());
});
