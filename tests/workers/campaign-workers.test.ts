import type { Herald } from '../../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { sleep, waitFor } from '../helpers/time.js';
import { workerProcesses } from '../helpers/workers.js';

// Real worker processes (`npm run worker`) on a database of their own: two of them sharing one
// campaign, and one killed with SIGKILL halfway and replaced.
const RECIPIENTS = 5000;
let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;
let workers: ReturnType<typeof workerProcesses>;

const startWorker = (latencyMs = 40, concurrency = 4) => workers.start({ SANDBOX_LATENCY_MS: String(latencyMs), WORKER_CONCURRENCY: String(concurrency) });

beforeAll(async () => {
  db = await isolatedDatabase('workers');
  herald = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false', CAMPAIGN_INLINE_LIMIT: '10' });
  workers = workerProcesses(db.url, { CAMPAIGN_LEASE_SECONDS: '2' });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await workers?.stopAll();
  await herald.stop();
  await db.drop();
});

async function launchBigCampaign(): Promise<{ org: Org; campaignId: string }> {
  const org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT ?, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0') FROM generate_series(1, ?) AS i`,
    [org.orgId, RECIPIENTS],
  );
  const created = await api.post('/campaigns', { name: 'Big', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Once only' } } }, { token: org.token });
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token });
  expect(launched.body.status).toBe('active');
  return { org, campaignId: created.body._id };
}

async function waitForCompletion(org: Org, campaignId: string, ms = 90_000) {
  return (await waitFor(() => api.get(`/campaigns/${campaignId}`, { token: org.token }), (res) => res.body.status === 'completed', ms)).body;
}

/** Every recipient of the campaign appears in exactly one log entry, and credits match what was logged. */
async function expectExactlyOnce(org: Org, campaignId: string) {
  const entries = await herald.db.raw(
    `SELECT coalesce(r->>'recipient', r #>> '{}') AS recipient, count(*)::int AS n
     FROM message_logs, json_array_elements(recipients) AS r
     WHERE organization_id = ? AND campaign_id = ?
     GROUP BY 1`,
    [org.orgId, campaignId],
  );
  expect(entries.rows.length).toBe(RECIPIENTS);
  expect(entries.rows.filter((r: { n: number }) => r.n !== 1)).toEqual([]);
  const [{ cost }] = (await herald.db.raw('SELECT coalesce(sum(cost), 0)::float AS cost FROM message_logs WHERE organization_id = ? AND campaign_id = ?', [org.orgId, campaignId])).rows;
  expect(cost).toBe(RECIPIENTS);
  const credits = (await api.get('/organizations/current', { token: org.token })).body.credits;
  expect(credits).toBe(100_000 - RECIPIENTS);
}

test('two worker processes share one campaign of 5,000 recipients and send each exactly once', async () => {
  const { org, campaignId } = await launchBigCampaign();
  const a = startWorker();
  const b = startWorker();
  const done = await waitForCompletion(org, campaignId);
  expect(done.status).toBe('completed');
  expect(done.analytics).toMatchObject({ sent: RECIPIENTS, failed: 0 });
  await expectExactlyOnce(org, campaignId);
  const outbox = await herald.db('sandbox_outbox').where({ organization_id: org.orgId }).count({ n: '*' }).first();
  expect(Number(outbox!.n)).toBe(RECIPIENTS);
  await Promise.all([workers.stop(a), workers.stop(b)]);
}, 120_000);

test('kill -9 of the worker halfway: a new worker finishes, every recipient logged exactly once', async () => {
  const { org, campaignId } = await launchBigCampaign();
  // Five chunks of 1,000, one at a time, 500 ms each: about 2.5 s of sending to interrupt.
  const victim = startWorker(500, 1);
  // Kill at a random point of the run: after one to three chunks have settled, somewhere in the next.
  const settled = async () =>
    (await herald.db.raw(`SELECT coalesce(sum(sent), 0)::int AS n FROM campaign_batches WHERE campaign_id = ? AND status = 'settled'`, [campaignId])).rows[0].n as number;
  const chunks = 1 + Math.floor(Math.random() * 3);
  expect(await waitFor(settled, (n) => n >= chunks * 1000, 30_000)).toBeGreaterThanOrEqual(chunks * 1000);
  await sleep(Math.floor(Math.random() * 400));
  const sentBefore = await settled();
  await workers.stop(victim, 'SIGKILL');
  expect(sentBefore).toBeLessThan(RECIPIENTS);
  const successor = startWorker();
  const done = await waitForCompletion(org, campaignId);
  expect(done.status).toBe('completed');
  expect(done.analytics).toMatchObject({ sent: RECIPIENTS, failed: 0 });
  await expectExactlyOnce(org, campaignId);
  await workers.stop(successor);
}, 120_000);

test('kill -9 of the worker while recipients wait for their local send time: a new worker sends each once when it comes', async () => {
  const org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone) SELECT ?, 'Contact ' || i, '+2547' || lpad((20000000 + i)::text, 8, '0') FROM generate_series(1, 300) AS i`,
    [org.orgId],
  );
  // Fifteen seconds from now on Nairobi's clock (the organization's zone, and so its contacts'): time for a worker to start.
  const at = new Date(Date.now() + 3 * 3_600_000 + 15_000).toISOString().slice(0, 19);
  const created = await api.post(
    '/campaigns',
    { name: 'Soon', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'On time' } }, localSendAt: at },
    { token: org.token },
  );
  expect((await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token })).body.status).toBe('active');
  const victim = startWorker();
  const progress = () => api.get(`/campaigns/${created.body._id}/progress`, { token: org.token });
  // The worker has moved everyone into batches due then; it dies while they wait.
  const waiting = await waitFor(progress, (r) => r.body.waiting === 300, 30_000);
  expect(waiting.body).toMatchObject({ total: 300, sent: 0, waiting: 300, nextOpeningAt: `${new Date(Date.parse(`${at}Z`) - 3 * 3_600_000).toISOString()}` });
  await workers.stop(victim, 'SIGKILL');
  const successor = startWorker();
  const done = await waitForCompletion(org, created.body._id);
  expect(done.analytics).toMatchObject({ sent: 300, failed: 0 });
  // Sent when it came, not before.
  const [{ first }] = (await herald.db.raw('SELECT min(created_at) AS first FROM message_logs WHERE organization_id = ? AND campaign_id = ?', [org.orgId, created.body._id])).rows;
  expect(first.getTime()).toBeGreaterThanOrEqual(Date.parse(`${at}Z`) - 3 * 3_600_000 - 1000);
  const entries = await herald.db.raw(
    `SELECT coalesce(r->>'recipient', r #>> '{}') AS recipient, count(*)::int AS n FROM message_logs, json_array_elements(recipients) AS r
     WHERE organization_id = ? AND campaign_id = ? GROUP BY 1`,
    [org.orgId, created.body._id],
  );
  expect(entries.rows.length).toBe(300);
  expect(entries.rows.filter((r: { n: number }) => r.n !== 1)).toEqual([]);
  await workers.stop(successor);
}, 60_000);

test('a worker signalled while it starts stops once started, as any stop: exit code 0, never killed by the signal', async () => {
  // The worker's own connections, told apart by their application name (the connection string's
  // parameters win over Herald's 'herald'): counting every connection of the database also counts
  // the test server's pool, which opens and reaps its own, and once signalled a worker still loading.
  const name = 'herald-signalled-worker';
  const url = new URL(db.url);
  url.searchParams.set('application_name', name);
  const connections = async () =>
    (await herald.db.raw('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ? AND application_name = ?', [url.pathname.slice(1), name])).rows[0].n as number;
  const worker = workers.start({ DATABASE_URL: url.toString() });
  // Its first connection: it is opening its runtime (migrations, then one lane after another).
  const seen = await waitFor(connections, (n) => n > 0, 30_000);
  expect(seen).toBeGreaterThan(0);
  await workers.stop(worker, 'SIGTERM');
  expect({ code: worker.exitCode, signal: worker.signalCode }).toEqual({ code: 0, signal: null });
}, 60_000);
