import type { Herald } from '../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, type Client } from './helpers/herald.js';

// A scheduled start whose job is held by a worker that is gone (a process killed mid-job, or a
// pool that failed while Postgres was away; graphile-worker frees such locks only after 4 hours)
// is queued again by the sweeper, and the campaign is sent once.
let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;

beforeAll(async () => {
  db = await isolatedDatabase('sweeper');
  herald = await startTestHerald({ DATABASE_URL: db.url, CAMPAIGN_LEASE_SECONDS: '2', CAMPAIGN_INLINE_LIMIT: '0' });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald.stop();
  await db.drop();
});

test('an overdue scheduled campaign whose start job is locked by a dead worker still starts, once', async () => {
  const org = await signupOrg(api);
  await api.post('/contacts', { name: 'Grace', phone: '0712345671' }, { token: org.token });
  const created = await api.post(
    '/campaigns',
    { name: 'Stuck', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } }, scheduleDate: new Date(Date.now() + 60_000).toISOString() },
    { token: org.token },
  );
  expect((await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token })).body.status).toBe('scheduled');

  // The start job is taken by a worker pool that then vanished; the campaign's time has passed.
  const locked = await herald.db.raw(
    `UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'pool-that-died', run_at = now() - interval '10 seconds'
     WHERE key = ? RETURNING id`,
    [`campaign-start:${created.body._id}`],
  );
  expect(locked.rows).toHaveLength(1);
  await herald.db('campaigns').where({ id: created.body._id }).update({ schedule_date: herald.db.raw("now() - interval '10 seconds'") });

  const end = Date.now() + 30_000;
  let campaign: any;
  while (Date.now() < end) {
    campaign = (await api.get(`/campaigns/${created.body._id}`, { token: org.token })).body;
    if (campaign.status === 'completed') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(campaign.status).toBe('completed');
  expect(campaign.analytics.sent).toBe(1);
  const logs = await herald.db('message_logs').where({ organization_id: org.orgId, campaign_id: created.body._id });
  expect(logs.flatMap((l) => l.recipients)).toEqual([{ recipient: '+254712345671', status: 'success' }]);
}, 60_000);
