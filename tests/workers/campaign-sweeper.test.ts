import type { Herald } from '../../src/server.js';
import { signupOrg, startIsolatedHerald, waitFor, type Client } from '../helpers/herald.js';

// A scheduled start whose job is held by a worker that is gone (a process killed mid-job, or a
// pool that failed while Postgres was away; graphile-worker frees such locks only after 4 hours)
// is queued again by the sweeper, and the campaign is sent once.
let herald: Herald;
let api: Client;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ herald, api, stop } = await startIsolatedHerald('sweeper', { WORKERS: 'true', CAMPAIGN_LEASE_SECONDS: '2', CAMPAIGN_INLINE_LIMIT: '0' }));
}, 60_000);

afterAll(() => stop());

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

  const campaign = (await waitFor(() => api.get(`/campaigns/${created.body._id}`, { token: org.token }), (r) => r.body.status === 'completed')).body;
  expect(campaign.status).toBe('completed');
  expect(campaign.analytics.sent).toBe(1);
  const logs = await herald.db('message_logs').where({ organization_id: org.orgId, campaign_id: created.body._id });
  // Stored as a settled log's default state: the bare address is a success.
  expect(logs.flatMap((l) => l.recipients)).toEqual(['+254712345671']);
  expect(logs.map((l) => l.settled_at)).toEqual([expect.any(Date)]);
  expect((await api.get(`/message-logs?campaignId=${created.body._id}`, { token: org.token })).body[0].recipients).toEqual([{ recipient: '+254712345671', status: 'success' }]);
}, 60_000);

test('a batch left mid-send by a dead worker in a campaign canceled since is settled as interrupted and its credits released', async () => {
  const org = await signupOrg(api);
  const created = await api.post('/campaigns', { name: 'Cut short', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } } }, { token: org.token });
  const campaignId = created.body._id;
  // What a worker that claimed a batch (reserving its 2 credits) and then died leaves behind, once
  // the campaign was canceled and the lease has run out: nobody takes a canceled campaign's batch over.
  await herald.db.transaction(async (trx) => {
    await trx('campaigns').where({ organization_id: org.orgId, id: campaignId }).update({ status: 'canceled', total_recipients: 2, started_at: trx.raw('now()') });
    await trx('campaign_batches').insert({
      organization_id: org.orgId, campaign_id: campaignId, channel: 'sms', batch_no: 0, addresses: ['+254712345681', '+254712345682'],
      recipient_count: 2, status: 'sending', attempts: 1, reserved: 2, claimed_at: trx.raw("now() - interval '10 seconds'"),
    });
    await trx('organization_credits').where({ organization_id: org.orgId }).decrement('credits', 2);
  });
  const before = (await api.get('/organizations/current', { token: org.token })).body.credits;

  const batch = await waitFor(async () => herald.db('campaign_batches').where({ organization_id: org.orgId, campaign_id: campaignId }).first(), (b) => b.status === 'settled');
  expect(batch).toMatchObject({ status: 'settled', sent: 0, failed: 2 });
  const logs = (await api.get(`/message-logs?campaignId=${campaignId}`, { token: org.token })).body;
  expect(logs).toHaveLength(1);
  expect(logs[0]).toMatchObject({ cost: 0, recipients: [
    { recipient: '+254712345681', status: 'failed', error: 'Delivery interrupted' },
    { recipient: '+254712345682', status: 'failed', error: 'Delivery interrupted' },
  ] });
  expect((await api.get('/organizations/current', { token: org.token })).body.credits).toBe(before + 2);
  expect((await api.get(`/campaigns/${campaignId}`, { token: org.token })).body).toMatchObject({ status: 'canceled', analytics: { sent: 0, failed: 2 } });
}, 60_000);
