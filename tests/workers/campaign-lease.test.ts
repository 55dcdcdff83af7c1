import type { Herald } from '../../src/server.js';
import { signupOrg, startIsolatedHerald, waitFor, type Client } from '../helpers/herald.js';

// A chunk whose sending outlasts the lease keeps its batches: the worker renews the lease while it
// sends, so the sweeper does not hand them to another worker, and nobody is sent twice.
let herald: Herald;
let api: Client;
let stop: () => Promise<void>;

beforeAll(async () => {
  // A 2 s lease (the sweeper runs every second) and a sandbox that takes 5 s per delivery call.
  ({ herald, api, stop } = await startIsolatedHerald('lease', { WORKERS: 'true', CAMPAIGN_LEASE_SECONDS: '2', CAMPAIGN_INLINE_LIMIT: '0', SANDBOX_LATENCY_MS: '5000' }));
}, 60_000);

afterAll(() => stop());

test('a send longer than the lease is not taken over: each recipient is sent once', async () => {
  const org = await signupOrg(api);
  for (const phone of ['0712345681', '0712345682', '0712345683']) await api.post('/contacts', { name: phone, phone }, { token: org.token });
  const created = await api.post('/campaigns', { name: 'Slow', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } } }, { token: org.token });
  expect((await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token })).body.status).toBe('active');

  const campaign = (await waitFor(() => api.get(`/campaigns/${created.body._id}`, { token: org.token }), (r) => r.body.status === 'completed')).body;
  expect(campaign).toMatchObject({ status: 'completed', analytics: { sent: 3, failed: 0 } });
  // A second sender takes a batch by claiming it, which counts an attempt: one attempt is no
  // second sender, none still in its 5 s call to come back later.
  const batches = await herald.db('campaign_batches').where({ campaign_id: created.body._id }).select('attempts');
  expect(batches.map((b) => b.attempts)).toEqual([1]);
  const outbox = (await api.get('/sandbox/outbox', { token: org.token })).body;
  expect(outbox.map((m: { recipient: string }) => m.recipient).sort()).toEqual(['+254712345681', '+254712345682', '+254712345683']);
}, 60_000);
