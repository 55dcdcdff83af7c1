import type { Herald } from '../../src/server.js';
import { addUser, client, createApiKey, signupOrg, startTestHerald, waitFor, type Client, type Org, ISO_MS, UUID_RE } from '../helpers/herald.js';

let herald: Herald;
let api: Client;

beforeAll(async () => {
  // Audiences above 5 go through the workers; the lease is short so stalled batches recover quickly.
  herald = await startTestHerald({ WORKERS: 'true', CAMPAIGN_INLINE_LIMIT: '5', CAMPAIGN_LEASE_SECONDS: '2', SANDBOX_LATENCY_MS: '200' });
  api = client(herald.url);
});
afterAll(() => herald.stop());

const sms = { sms: { content: 'Hello from the campaign' } };

async function contact(org: Org, body: Record<string, unknown>) {
  const res = await api.post('/contacts', body, { token: org.token });
  expect(res.status).toBe(201);
  return res.body;
}

async function campaign(org: Org, body: Record<string, unknown> = {}) {
  const res = await api.post('/campaigns', { name: 'Spring', type: 'broadcast', channels: ['sms'], messages: sms, ...body }, { token: org.token });
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function seedContacts(org: Org, n: number, prefix = 7) {
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone, email)
     SELECT ?, 'Seed ' || i, '+2547' || lpad((${prefix} * 1000000 + i)::text, 8, '0'), 'seed' || i || '@example.com'
     FROM generate_series(1, ?) AS i`,
    [org.orgId, n],
  );
}

describe('create, read, update', () => {
  let org: Org;
  beforeAll(async () => {
    org = await signupOrg(api);
  });

  test('POST /campaigns: 201 draft with zeroed analytics and every field', async () => {
    const c = await campaign(org, { description: 'First' });
    expect(c).toMatchObject({
      name: 'Spring',
      description: 'First',
      type: 'broadcast',
      channels: ['sms'],
      status: 'draft',
      recipientType: 'all',
      selectedContacts: [],
      selectedGroup: null,
      messages: sms,
      scheduleDate: null,
      analytics: { sent: 0, delivered: 0, failed: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, suppressed: 0, capped: 0 },
      organization: org.orgId,
      createdBy: org.user._id,
    });
    expect(c._id).toMatch(UUID_RE);
    expect(c.createdAt).toMatch(ISO_MS);
  });

  test('recipients map to recipientType, selectedContacts and selectedGroup', async () => {
    const g1 = (await api.post('/groups', { name: 'G1', color: 'bg-red-500' }, { token: org.token })).body;
    const g2 = (await api.post('/groups', { name: 'G2', color: 'bg-red-500' }, { token: org.token })).body;
    const c1 = await contact(org, { name: 'One', phone: '0712345001' });
    expect(await campaign(org, { recipients: {} })).toMatchObject({ recipientType: 'all' });
    expect(await campaign(org, { recipients: { contacts: [], groups: [], manual: [] } })).toMatchObject({ recipientType: 'all' });
    expect(await campaign(org, { recipients: { groups: [g1._id, g2._id] } })).toMatchObject({
      recipientType: 'group',
      selectedGroup: g1._id,
      selectedGroups: [g1._id, g2._id],
    });
    expect(await campaign(org, { recipients: { contacts: [c1._id], groups: [g1._id] } })).toMatchObject({
      recipientType: 'selected',
      selectedContacts: [c1._id],
      selectedGroups: [g1._id],
    });
    expect(await campaign(org, { recipients: { manual: ['0712345002', 'X@Example.com'] } })).toMatchObject({
      recipientType: 'selected',
      manualRecipients: ['+254712345002', 'x@example.com'],
    });
    // A domain without a dot, for a private relay: allowed while BLOCK_PRIVATE_HOSTS is off.
    expect(await campaign(org, { recipients: { manual: ['Root@localhost'] } })).toMatchObject({ manualRecipients: ['root@localhost'] });
  });

  test('validation: messages per channel, email subject, ids of other organizations, unknown fields', async () => {
    const other = await signupOrg(api);
    const foreign = await contact(other, { name: 'Theirs', phone: '0712345003' });
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ channels: ['sms', 'email'] }, /messages\.email is required/],
      [{ channels: ['email'], messages: { email: { content: 'no subject' } } }, /messages\.email\.subject is required/],
      [{ channels: [] }, /channels/],
      [{ channels: ['fax'] }, /channels/],
      [{ type: 'spam' }, /type must be one of/],
      [{ recipients: { contacts: [foreign._id] } }, /recipients\.contacts contains unknown ids/],
      [{ recipients: { groups: ['00000000-0000-4000-8000-000000000000'] } }, /recipients\.groups contains unknown ids/],
      [{ recipients: { manual: ['not a number'] } }, /recipients\.manual contains invalid addresses/],
      [{ scheduleDate: 'tomorrow' }, /scheduleDate must be an ISO 8601 date-time/],
      [{ status: 'active' }, /status is not allowed/],
      [{ analytics: { sent: 5 } }, /analytics is not allowed/],
    ];
    for (const [body, message] of cases) {
      const res = await api.post('/campaigns', { name: 'Bad', type: 'broadcast', channels: ['sms'], messages: sms, ...body }, { token: org.token });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(message);
      expect(res.body.details.length).toBeGreaterThan(0);
    }
  });

  test('GET list and detail shapes; 404 and 403 for bad and foreign ids', async () => {
    const c = await campaign(org);
    const list = await api.get('/campaigns', { token: org.token });
    expect(list.status).toBe(200);
    expect(Object.keys(list.body[0]).sort()).toEqual(['_id', 'analytics', 'channels', 'createdAt', 'name', 'status', 'type']);
    const detail = await api.get(`/campaigns/${c._id}`, { token: org.token });
    expect(Object.keys(detail.body)).toEqual(
      expect.arrayContaining(['_id', 'name', 'description', 'type', 'channels', 'status', 'recipientType', 'messages', 'scheduleDate', 'analytics', 'createdAt', 'updatedAt']),
    );
    expect((await api.get('/campaigns/nope', { token: org.token })).status).toBe(404);
    expect((await api.get('/campaigns/00000000-0000-4000-8000-000000000000', { token: org.token })).status).toBe(404);
    const other = await signupOrg(api);
    for (const res of [
      await api.get(`/campaigns/${c._id}`, { token: other.token }),
      await api.put(`/campaigns/${c._id}`, { name: 'x' }, { token: other.token }),
      await api.post(`/campaigns/${c._id}/launch`, undefined, { token: other.token }),
      await api.post(`/campaigns/${c._id}/cancel`, undefined, { token: other.token }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ statusCode: 403, message: 'Insufficient permissions', error: 'Forbidden' });
    }
  });

  test('PUT updates name, messages and scheduleDate of a draft; 409 once it is not draft or scheduled', async () => {
    const c = await campaign(org);
    const res = await api.put(`/campaigns/${c._id}`, { name: 'Renamed', messages: { sms: { content: 'New text' } } }, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Renamed', messages: { sms: { content: 'New text' } } });
    expect(res.body.updatedAt >= c.updatedAt).toBe(true);
    expect((await api.put(`/campaigns/${c._id}`, { messages: { email: { subject: 's', content: 'c' } } }, { token: org.token })).status).toBe(400);
    expect((await api.put(`/campaigns/${c._id}`, { channels: ['email'] }, { token: org.token })).status).toBe(400);
    await contact(org, { name: 'Reachable', phone: '0712345004' });
    expect((await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token })).body.status).toBe('completed');
    const late = await api.put(`/campaigns/${c._id}`, { name: 'Too late' }, { token: org.token });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('Conflict');
  });

  test('role matrix: users and user keys read; admins and admin keys write', async () => {
    const user = await addUser(api, org, 'user');
    const userKey = (await createApiKey(api, org, 'user')).key;
    const adminKey = (await createApiKey(api, org, 'admin')).key;
    const c = await campaign(org);
    expect((await api.get('/campaigns', { token: user.token })).status).toBe(200);
    expect((await api.get(`/campaigns/${c._id}`, { apiKey: userKey })).status).toBe(200);
    for (const cred of [{ token: user.token }, { apiKey: userKey }, { queryKey: userKey }]) {
      expect((await api.post('/campaigns', { name: 'N', type: 'broadcast', channels: ['sms'], messages: sms }, cred)).status).toBe(403);
      expect((await api.put(`/campaigns/${c._id}`, { name: 'N' }, cred)).status).toBe(403);
      expect((await api.post(`/campaigns/${c._id}/launch`, undefined, cred)).status).toBe(403);
      expect((await api.post(`/campaigns/${c._id}/cancel`, undefined, cred)).status).toBe(403);
    }
    expect((await api.post('/campaigns', { name: 'K', type: 'targeted', channels: ['sms'], messages: sms }, { apiKey: adminKey })).status).toBe(201);
  });
});

describe('launch', () => {
  test('a small audience is sent before the answer: completed with analytics, logs carry campaignId', async () => {
    const org = await signupOrg(api);
    const group = (await api.post('/groups', { name: 'VIP', color: 'bg-blue-500' }, { token: org.token })).body;
    await contact(org, { name: 'A', phone: '0712345101', email: 'a@example.com', groups: [group._id] });
    await contact(org, { name: 'B', phone: '0712340000', email: 'b@example.com', groups: [group._id] });
    await contact(org, { name: 'C', phone: '0712345103' });
    const c = await campaign(org, {
      channels: ['sms', 'email'],
      recipients: { groups: [group._id], manual: ['extra@example.com', '+254712345101'] },
      messages: { sms: { content: 'Hi' }, email: { subject: 'News', content: '<p>News</p>' } },
    });
    const before = (await api.get('/organizations/current', { token: org.token })).body.credits;
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.status).toBe(200);
    // sms: A, B (fails: reserved number) and the manual number, which is A's, once; email: a, b, extra.
    expect(res.body).toEqual({
      _id: c._id,
      status: 'completed',
      analytics: { sent: 4, delivered: 0, failed: 1, opened: 0, clicked: 0, bounced: 0, complained: 0, suppressed: 0, capped: 0 },
      updatedAt: expect.stringMatching(ISO_MS),
    });
    const after = (await api.get('/organizations/current', { token: org.token })).body.credits;
    expect(before - after).toBe(1 + 3 * 0.5);
    const logs = (await api.get(`/message-logs?campaignId=${c._id}`, { token: org.token })).body;
    expect(logs.map((l: any) => l.channel).sort()).toEqual(['email', 'sms']);
    expect(logs.every((l: any) => l.campaignId === c._id)).toBe(true);
    const again = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(again.status).toBe(409);
  });

  // Two contacts share a number (and an address, in another case); a third is outside the group.
  test.each([
    ['a group plus manual addresses', 'group', ['+254712345201', '+254712345203'], ['a@example.com', 'c@example.com', 'new@example.com']],
    ['manual addresses only', 'manual', ['+254712345201', '+254712345203'], ['c@example.com', 'new@example.com']],
    ['everyone', 'all', ['+254712345201', '+254712345203'], ['a@example.com', 'c@example.com']],
  ])('the audience of %s is deduplicated per channel', async (_name, kind, sms, email) => {
    const org = await signupOrg(api);
    const group = (await api.post('/groups', { name: 'G', color: 'bg-blue-500' }, { token: org.token })).body;
    await contact(org, { name: 'A', phone: '0712345201', email: 'a@example.com', groups: [group._id] });
    await contact(org, { name: 'A again', phone: '+254712345201', email: 'A@Example.com', groups: [group._id] });
    await contact(org, { name: 'C', phone: '0712345203', email: 'c@example.com' });
    const manual = ['0712345201', '0712345203', 'c@example.com', 'new@example.com'];
    const recipients = kind === 'group' ? { groups: [group._id], manual } : kind === 'manual' ? { manual } : {};
    const c = await campaign(org, { channels: ['sms', 'email'], recipients, messages: { sms: { content: 'Hi' }, email: { subject: 'News', content: '<p>News</p>' } } });
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.status).toBe(200);
    const logs = (await api.get(`/message-logs?campaignId=${c._id}`, { token: org.token })).body;
    const sent = (channel: string) => logs.filter((l: any) => l.channel === channel).flatMap((l: any) => l.recipients.map((r: any) => r.recipient)).sort();
    expect(sent('sms')).toEqual(sms);
    expect(sent('email')).toEqual(email);
    expect(res.body.analytics).toMatchObject({ sent: sms.length + email.length, failed: 0 });
  });

  test('no eligible recipient is 400 and the campaign stays a draft', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Mail only', email: 'm@example.com' });
    const c = await campaign(org);
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.status).toBe(400);
    expect((await api.get(`/campaigns/${c._id}`, { token: org.token })).body.status).toBe('draft');
  });

  test('402 when the credits cannot cover the audience, nothing sent', async () => {
    const org = await signupOrg(api);
    await seedContacts(org, 20, 1);
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 3 });
    const c = await campaign(org);
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.status).toBe(402);
    expect((await api.get(`/campaigns/${c._id}`, { token: org.token })).body.status).toBe('draft');
    expect((await api.get('/sandbox/outbox', { token: org.token })).body).toEqual([]);
  });

  test('a larger audience answers active and the workers complete it, each recipient once', async () => {
    const org = await signupOrg(api);
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 10_000 });
    await seedContacts(org, 450, 2);
    const c = await campaign(org);
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.body).toEqual({ _id: c._id, status: 'active', updatedAt: expect.stringMatching(ISO_MS) });
    // The whole audience's cost is reserved at launch (and, every recipient succeeding, all spent).
    expect((await api.get('/organizations/current', { token: org.token })).body.credits).toBe(10_000 - 450);
    const done = await waitFor(() => api.get(`/campaigns/${c._id}`, { token: org.token }), (r) => r.body.status === 'completed');
    expect(done.body.analytics).toMatchObject({ sent: 450, failed: 0 });
    const logs = (await api.get(`/message-logs?campaignId=${c._id}&limit=1000`, { token: org.token })).body;
    expect(logs.length).toBe(5);
    const recipients = logs.flatMap((l: any) => l.recipients.map((r: any) => r.recipient));
    expect(new Set(recipients).size).toBe(450);
    expect(recipients.length).toBe(450);
    const progress = await api.gql(`{ campaign(id: "${c._id}") { progress { total sent failed pending } logs { totalCount } } }`, undefined, { token: org.token });
    expect(progress.body.data.campaign).toEqual({ progress: { total: 450, sent: 450, failed: 0, pending: 0 }, logs: { totalCount: 5 } });
  });

  test('Idempotency-Key on launch replays the first answer', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345201' });
    const c = await campaign(org);
    const first = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token }, { 'idempotency-key': 'launch-1' });
    const again = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token }, { 'idempotency-key': 'launch-1' });
    expect(first.body.status).toBe('completed');
    expect(again).toMatchObject({ status: 200, body: first.body });
    // The stored answer is the whole campaign: replayed through GraphQL, it is the same launch.
    const viaGraphql = await api.raw(
      'POST',
      '/graphql',
      { query: `mutation { launchCampaign(id: "${c._id}") { _id name status analytics { sent } updatedAt } }` },
      { token: org.token },
      { 'idempotency-key': 'launch-1' },
    );
    expect(viaGraphql.body.data.launchCampaign).toEqual({ _id: c._id, name: 'Spring', status: 'completed', analytics: { sent: 1 }, updatedAt: first.body.updatedAt });
    const sends = await herald.db('sandbox_sends').where({ organization_id: org.orgId }).count({ n: '*' }).first();
    expect(Number(sends!.n)).toBe(1);
  });
});

describe('schedule and cancel', () => {
  test('a campaign scheduled a few seconds ahead is sent once, at its time', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345301' });
    // Far enough ahead that a loaded machine still launches it before its time.
    const at = new Date(Date.now() + 4000);
    const c = await campaign(org, { scheduleDate: at.toISOString() });
    const res = await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token });
    expect(res.body).toEqual({ _id: c._id, status: 'scheduled', updatedAt: expect.stringMatching(ISO_MS) });
    expect((await api.get('/sandbox/outbox', { token: org.token })).body).toEqual([]);
    const done = await waitFor(() => api.get(`/campaigns/${c._id}`, { token: org.token }), (r) => r.body.status === 'completed');
    expect(done.body.analytics.sent).toBe(1);
    const outbox = (await api.get('/sandbox/outbox', { token: org.token })).body;
    expect(outbox.length).toBe(1);
    expect(Date.parse(outbox[0].createdAt)).toBeGreaterThanOrEqual(at.getTime() - 50);
  });

  test('a scheduled campaign whose time comes when the balance is short fails its batches, uncharged, with the reason', async () => {
    const org = await signupOrg(api);
    await seedContacts(org, 150, 3);
    const c = await campaign(org, { scheduleDate: new Date(Date.now() + 3000).toISOString() });
    // 150 recipients need 150 credits: scheduling checks none, the start reserves nothing, and the
    // chunk's claim finds 120 (set before the launch: set after, a slow launch could start first).
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 120 });
    expect((await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token })).body.status).toBe('scheduled');
    const done = await waitFor(() => api.get(`/campaigns/${c._id}`, { token: org.token }), (r) => r.body.status === 'completed');
    expect(done.body.analytics).toMatchObject({ sent: 0, failed: 150 });
    expect((await api.get('/organizations/current', { token: org.token })).body.credits).toBe(120);
    expect((await api.get('/sandbox/outbox', { token: org.token })).body).toEqual([]);
    const logs = (await api.get(`/message-logs?campaignId=${c._id}`, { token: org.token })).body;
    expect(logs.flatMap((l: any) => l.recipients.map((r: any) => [r.status, r.error]))).toEqual(Array(150).fill(['failed', 'Insufficient credits']));
    expect(logs.reduce((sum: number, l: any) => sum + l.cost, 0)).toBe(0);
  });

  test('rescheduling moves the start; cancelling a scheduled campaign removes it', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345401' });
    const c = await campaign(org, { scheduleDate: new Date(Date.now() + 60_000).toISOString() });
    expect((await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token })).body.status).toBe('scheduled');
    const sooner = new Date(Date.now() + 2500).toISOString();
    const moved = await api.put(`/campaigns/${c._id}`, { scheduleDate: sooner }, { token: org.token });
    expect(moved.body).toMatchObject({ status: 'scheduled', scheduleDate: sooner });
    expect((await waitFor(() => api.get(`/campaigns/${c._id}`, { token: org.token }), (r) => r.body.status === 'completed')).body.status).toBe('completed');

    // Canceled before its time: its start job leaves the queue with it, so nothing starts it at its
    // time (the queue is what would, and the sweeper requeues scheduled campaigns alone): the queue
    // is read rather than the time waited for.
    const d = await campaign(org, { scheduleDate: new Date(Date.now() + 60_000).toISOString() });
    expect((await api.post(`/campaigns/${d._id}/launch`, undefined, { token: org.token })).body.status).toBe('scheduled');
    const canceled = await api.post(`/campaigns/${d._id}/cancel`, undefined, { token: org.token });
    expect(canceled.body).toEqual({ _id: d._id, status: 'canceled', updatedAt: expect.stringMatching(ISO_MS) });
    expect(canceled.body.updatedAt > d.updatedAt).toBe(true);
    const queued = await herald.db.raw('SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE payload->>\'campaignId\' = ?', [d._id]);
    expect(queued.rows[0].n).toBe(0);
    expect((await api.get(`/campaigns/${d._id}`, { token: org.token })).body.status).toBe('canceled');
    expect((await api.get(`/message-logs?campaignId=${d._id}`, { token: org.token })).body).toEqual([]);
    expect((await api.post(`/campaigns/${d._id}/cancel`, undefined, { token: org.token })).status).toBe(409);
    const draft = await campaign(org);
    expect((await api.post(`/campaigns/${draft._id}/cancel`, undefined, { token: org.token })).status).toBe(409);
  });

  test('cancelling an active campaign stops it: unsent recipients stay unsent and unpaid', async () => {
    const org = await signupOrg(api);
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
    // Twelve chunks of 1,000 at 200 ms each, four at a time: the cancel lands while most wait.
    await seedContacts(org, 12_000, 3);
    const c = await campaign(org);
    expect((await api.post(`/campaigns/${c._id}/launch`, undefined, { token: org.token })).body.status).toBe('active');
    expect((await api.post(`/campaigns/${c._id}/cancel`, undefined, { token: org.token })).body.status).toBe('canceled');
    // In-flight chunks settle.
    const pending = await waitFor(
      async () => Number((await herald.db('campaign_batches').where({ campaign_id: c._id }).whereIn('status', ['pending', 'sending']).count({ n: '*' }).first())!.n),
      (n) => n === 0,
      15_000,
    );
    expect(pending).toBe(0);
    const logs = (await api.get(`/message-logs?campaignId=${c._id}&limit=1000`, { token: org.token })).body;
    const sent = logs.reduce((n: number, l: any) => n + l.recipients.length, 0);
    expect(sent).toBeLessThan(12_000);
    const credits = (await api.get('/organizations/current', { token: org.token })).body.credits;
    expect(credits).toBe(100_000 - sent);
    const detail = (await api.get(`/campaigns/${c._id}`, { token: org.token })).body;
    expect(detail.status).toBe('canceled');
    expect(detail.analytics.sent).toBe(sent);
  });
});

describe('GraphQL', () => {
  test('create, update, launch and cancel through GraphQL', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345501' });
    const created = await api.gql(
      `mutation($i: CreateCampaignInput!) { createCampaign(input: $i) { _id status recipientType analytics { sent } messages { sms { content } } } }`,
      { i: { name: 'G', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } } },
      { token: org.token },
    );
    const c = created.body.data.createCampaign;
    expect(c).toMatchObject({ status: 'draft', recipientType: 'all', analytics: { sent: 0 }, messages: { sms: { content: 'Hi' } } });
    const updated = await api.gql(`mutation { updateCampaign(id: "${c._id}", input: { name: "G2" }) { name } }`, undefined, { token: org.token });
    expect(updated.body.data.updateCampaign.name).toBe('G2');
    const launched = await api.gql(`mutation { launchCampaign(id: "${c._id}") { _id name status analytics { sent failed } updatedAt } }`, undefined, { token: org.token });
    expect(launched.body.data.launchCampaign).toEqual({
      _id: c._id,
      name: 'G2',
      status: 'completed',
      analytics: { sent: 1, failed: 0 },
      updatedAt: expect.stringMatching(ISO_MS),
    });
    const again = await api.gql(`mutation { launchCampaign(id: "${c._id}") { status } }`, undefined, { token: org.token });
    expect(again.body.errors![0].extensions).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
    const list = await api.gql('{ campaigns { totalCount edges { node { name status } } } }', undefined, { token: org.token });
    expect(list.body.data.campaigns).toEqual({ totalCount: 1, edges: [{ node: { name: 'G2', status: 'completed' } }] });
  });

  // A normalised client cache (Apollo Client, urql graphcache) updates the campaign it holds from these answers.
  test('launchCampaign and cancelCampaign answer the whole updated Campaign', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345601' });
    const at = new Date(Date.now() + 60_000).toISOString();
    const c = await campaign(org, { name: 'Later', description: 'Next week', scheduleDate: at });
    const fields = '_id name description status scheduleDate analytics { sent failed } progress { total pending canceled } updatedAt';
    const launched = (await api.gql(`mutation { launchCampaign(id: "${c._id}") { ${fields} } }`, undefined, { token: org.token })).body.data.launchCampaign;
    expect(launched).toEqual({
      _id: c._id,
      name: 'Later',
      description: 'Next week',
      status: 'scheduled',
      scheduleDate: at,
      analytics: { sent: 0, failed: 0 },
      progress: { total: 0, pending: 0, canceled: 0 },
      updatedAt: expect.stringMatching(ISO_MS),
    });
    expect(launched.updatedAt > c.updatedAt).toBe(true);
    const canceled = (await api.gql(`mutation { cancelCampaign(id: "${c._id}") { ${fields} } }`, undefined, { token: org.token })).body.data.cancelCampaign;
    expect(canceled).toEqual({ ...launched, status: 'canceled', updatedAt: expect.stringMatching(ISO_MS) });
    expect(canceled.updatedAt > launched.updatedAt).toBe(true);
    // What the mutations answered is what a later read sees.
    const read = await api.gql(`{ campaign(id: "${c._id}") { ${fields} } }`, undefined, { token: org.token });
    expect(read.body.data.campaign).toEqual(canceled);
    const again = await api.gql(`mutation { cancelCampaign(id: "${c._id}") { status } }`, undefined, { token: org.token });
    expect(again.body.errors![0].extensions).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
  });

  test('the REST launch and cancel still answer only the fields the interface lists', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'A', phone: '0712345602' });
    const now = await campaign(org);
    const completed = await api.post(`/campaigns/${now._id}/launch`, undefined, { token: org.token });
    expect(Object.keys(completed.body).sort()).toEqual(['_id', 'analytics', 'status', 'updatedAt']);
    expect(completed.body.status).toBe('completed');
    const later = await campaign(org, { scheduleDate: new Date(Date.now() + 60_000).toISOString() });
    const scheduled = await api.post(`/campaigns/${later._id}/launch`, undefined, { token: org.token });
    expect(scheduled.body).toEqual({ _id: later._id, status: 'scheduled', updatedAt: expect.stringMatching(ISO_MS) });
    const canceled = await api.post(`/campaigns/${later._id}/cancel`, undefined, { token: org.token });
    expect(canceled.body).toEqual({ _id: later._id, status: 'canceled', updatedAt: expect.stringMatching(ISO_MS) });
  });
});
