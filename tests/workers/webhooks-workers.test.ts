import type { Herald } from '../../src/server.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../fakes/webhook-receiver.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';
import { workerProcesses } from '../helpers/workers.js';

/**
 * platform.md, "Outbound webhooks": deliveries are jobs, so a worker process killed with SIGKILL in
 * the middle of delivering loses none of them. The API Herald runs no workers; real worker
 * processes (`src/worker.ts`) deliver to a receiver that takes 300 ms to answer each request, and
 * the first of them is killed while requests are in flight. Every event must still arrive, and an
 * event delivered twice must be the same delivery (same `webhook-id`, same body), so a receiver
 * can deduplicate.
 */

const EVENTS = 40;
let db: Awaited<ReturnType<typeof isolatedDatabase>>;
let herald: Herald, api: Client, receiver: WebhookReceiver;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  db = await isolatedDatabase(`webhook_workers_${process.pid}`);
  herald = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false' });
  workers = workerProcesses(db.url, { WORKER_CONCURRENCY: '4', CAMPAIGN_LEASE_SECONDS: '2', WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1', WEBHOOK_TIMEOUT_MS: '2000' });
  api = client(herald.url);
  receiver = await startWebhookReceiver();
  receiver.setDefault({ kind: 'delay', ms: 300 });
}, 60_000);

afterAll(async () => {
  await workers?.stopAll();
  await herald?.stop();
  await receiver?.stop();
  await db?.drop();
});

const deliveredIds = () => new Set(receiver.requests.map((r) => r.id));

/**
 * The clock moved past the leases a killed worker held (its deliveries' lease, half a minute and
 * more, and the sweep's grace after it): what waiting them out proves, without the wait.
 */
async function leasesRunOut(org: Org): Promise<void> {
  await herald.db.raw(
    "UPDATE webhook_deliveries SET leased_until = now() - interval '1 minute' WHERE organization_id = ? AND leased_until > now()",
    [org.orgId],
  );
}

/** A new organization with credits to send, and an endpoint of it on `to` (at `path`), whose secret `to` verifies with. */
async function subscribedOrg(to: WebhookReceiver, path: string, eventTypes?: string[]): Promise<Org> {
  const org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 10_000 });
  const created = await api.post('/webhooks', { url: `${to.url}${path}`, ...(eventTypes && { eventTypes }) }, { token: org.token });
  expect(created.status).toBe(201);
  to.secrets = [created.body.secret];
  return org;
}

test('a worker killed mid-delivery: its successor delivers every event, duplicates identical', async () => {
  const org = await subscribedOrg(receiver, '/hook');

  // One log, so one message.sent event, per send (emails: the sandbox adds no receipts for them, so
  // no other events); no worker runs yet, so all of them wait.
  for (let i = 0; i < EVENTS; i += 10) {
    const sends = Array.from({ length: 10 }, (_, j) =>
      api.post('/notifications/send', { type: 'email', to: `reader${i + j}@example.com`, subject: 'Hi', message: `Hello ${i + j}` }, { token: org.token }),
    );
    for (const res of await Promise.all(sends)) expect(res.status).toBe(200);
  }
  const events = (await api.get('/webhook-events?limit=1000', { token: org.token })).body as any[];
  expect(events).toHaveLength(EVENTS);
  const eventIds = events.map((e) => e._id as string);
  expect(receiver.requests).toEqual([]);

  // Kill the first worker while it holds deliveries the receiver has not answered yet.
  const victim = workers.start();
  await waitFor(async () => receiver.requests.length, (n) => n >= 5, 60_000);
  await waitFor(async () => receiver.inFlight, (n) => n > 0, 5_000);
  expect(receiver.inFlight).toBeGreaterThan(0);
  await workers.stop(victim, 'SIGKILL');
  expect(deliveredIds().size).toBeLessThan(EVENTS);
  await leasesRunOut(org);

  const successor = workers.start();
  await waitFor(async () => eventIds.filter((id) => !deliveredIds().has(id)), (missing) => missing.length === 0, 90_000);
  expect(eventIds.filter((id) => !deliveredIds().has(id))).toEqual([]);
  // Every delivery ends succeeded, none left pending for a lost job.
  const settled = await waitFor(
    async () => Promise.all(eventIds.map(async (id) => (await api.get(`/webhook-events/${id}`, { token: org.token })).body)),
    (all) => all.every((e) => e.deliveries?.[0]?.status === 'succeeded'),
    30_000,
  );
  const unsettled = settled.filter((e) => e.deliveries.length !== 1 || e.deliveries[0].status !== 'succeeded');
  // On failure, show what the attempts of the first unsettled event said.
  const firstAttempts = unsettled.length ? (await api.get(`/webhook-events/${unsettled[0]._id}/attempts`, { token: org.token })).body : [];
  expect({ unsettled: unsettled.map((e) => e.deliveries), firstAttempts }).toEqual({ unsettled: [], firstAttempts: [] });

  // Nothing that is not one of the events; duplicates are the same delivery, and all verify.
  expect([...deliveredIds()].sort()).toEqual([...eventIds].sort());
  // What the victim had in flight was never recorded as answered, so it went again.
  expect(receiver.requests.length).toBeGreaterThan(EVENTS);
  const byId = new Map<string, ReceivedWebhook[]>();
  for (const r of receiver.requests) byId.set(r.id!, [...(byId.get(r.id!) ?? []), r]);
  for (const [id, requests] of byId) {
    expect({ id, bodies: new Set(requests.map((r) => r.rawBody)).size }).toEqual({ id, bodies: 1 });
    expect(requests[0].body.type).toBe('message.sent');
  }
  expect(receiver.requests.filter((r) => !r.verified)).toEqual([]);
  await workers.stop(successor);
}, 180_000);

test("a worker killed while posting what its campaign's settles handed it: the leases end and its successor delivers every event", async () => {
  const slow = await startWebhookReceiver();
  try {
    slow.setDefault({ kind: 'delay', ms: 300 });
    const org = await subscribedOrg(slow, '/handed', ['message.sent']);
    // 2,000 recipients: 20 logs, so 20 message.sent, written by the worker's settles and handed to
    // its own runs (leased to it), never claimed.
    const addresses = Array.from({ length: 2000 }, (_, i) => `handed${i}@example.com`);
    const campaign = await api.post(
      '/campaigns',
      { name: 'Handed', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Hi', content: 'Hello' } }, recipients: { manual: addresses } },
      { token: org.token },
    );
    expect(campaign.status).toBe(201);
    expect((await api.post(`/campaigns/${campaign.body._id}/launch`, {}, { token: org.token })).body.status).toBe('active');

    const victim = workers.start();
    await waitFor(async () => slow.inFlight, (n) => n > 0, 60_000);
    await workers.stop(victim, 'SIGKILL');
    await leasesRunOut(org);
    // The successor finishes the campaign (its chunks' leases are short) and takes the deliveries over.
    workers.start();
    const done = await waitFor(() => api.get(`/campaigns/${campaign.body._id}`, { token: org.token }), (r) => r.body.status === 'completed', 60_000);
    expect(done.body.status).toBe('completed');
    const events = ((await api.get('/webhook-events?limit=1000', { token: org.token })).body as any[]).map((e) => e._id as string);
    expect(events).toHaveLength(20);
    // Past their lease, the sweep wakes their endpoint and the successor claims them.
    await waitFor(async () => new Set(slow.requests.map((r) => r.id)), (ids) => events.every((id) => ids.has(id)), 120_000);
    const recipients = new Map<string, string[]>();
    for (const r of slow.requests) {
      expect(r.verified).toBe(true);
      // A duplicate is the same delivery: same id, same bytes.
      expect(slow.requests.filter((o) => o.id === r.id).every((o) => o.rawBody === r.rawBody)).toBe(true);
      recipients.set(r.id!, r.body.data.recipients.map((x: any) => x.recipient));
    }
    expect([...recipients.values()].flat().sort()).toEqual([...addresses].sort());
  } finally {
    // Whatever the outcome, no worker of this test is left to take the next test's deliveries.
    await workers.stopAll();
    await slow.stop();
  }
}, 240_000);

test('a worker stopped with SIGTERM mid-delivery: what it posted is answered and kept, what it took and had not posted goes to its successor, nothing twice', async () => {
  const slow = await startWebhookReceiver();
  try {
    // Well inside the attempts' 2 s timeout, so none of them times out and goes again.
    slow.setDefault({ kind: 'delay', ms: 800 });
    const org = await subscribedOrg(slow, '/drained');
    for (let i = 0; i < EVENTS; i += 10) {
      const sends = Array.from({ length: 10 }, (_, j) =>
        api.post('/notifications/send', { type: 'email', to: `drained${i + j}@example.com`, subject: 'Hi', message: `Hello ${i + j}` }, { token: org.token }),
      );
      for (const res of await Promise.all(sends)) expect(res.status).toBe(200);
    }
    const eventIds = ((await api.get('/webhook-events?limit=1000', { token: org.token })).body as any[]).map((e) => e._id as string);
    expect(eventIds).toHaveLength(EVENTS);

    const victim = workers.start();
    await waitFor(async () => slow.inFlight, (n) => n > 0, 60_000);
    await workers.stop(victim, 'SIGTERM');
    // It waited for the answers to what it had posted, and kept them.
    expect(slow.inFlight).toBe(0);
    const posted = new Set(slow.requests.map((r) => r.id));
    expect(posted.size).toBeGreaterThan(0);
    expect(posted.size).toBeLessThan(EVENTS);
    for (const id of posted) {
      const event = (await api.get(`/webhook-events/${id}`, { token: org.token })).body;
      expect({ id, delivery: event.deliveries[0] }).toMatchObject({ id, delivery: { status: 'succeeded', attempts: 1 } });
    }

    const successor = workers.start();
    await waitFor(async () => new Set(slow.requests.map((r) => r.id)).size, (n) => n === EVENTS, 60_000);
    expect([...new Set(slow.requests.map((r) => r.id))].sort()).toEqual([...eventIds].sort());
    expect(slow.requests).toHaveLength(EVENTS);
    expect(slow.requests.filter((r) => !r.verified)).toEqual([]);
    await workers.stop(successor);
  } finally {
    await slow.stop();
  }
}, 180_000);
