import { randomUUID } from 'node:crypto';
import { wake } from '../../src/delivery/outbox.js';
import type { Herald } from '../../src/server.js';
import { startWebhookReceiver, verifies, type ReceivedWebhook, type WebhookReceiver } from '../fakes/webhook-receiver.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { addUser, createApiKey, heraldWithOrgs, isolatedDatabase, ISO_MS, signupOrg, UUID_RE, waitFor, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { workerProcesses } from '../helpers/workers.js';
import { expectQuiet } from '../helpers/time.js';

/**
 * platform.md, "Outbound webhooks": endpoints over REST, and deliveries end to end to a real HTTP
 * receiver (tests/fakes/webhook-receiver.ts) that checks every signature with the
 * `standardwebhooks` package. Retries are one second apart and attempts time out after one.
 *
 * Deliveries are jobs: the file's Herald runs them (`workers: true`), and the Heralds of the
 * describes below with other settings are each on a database of their own, so that they do not take
 * the file's. Tests that deliver use an organization of their own, so that one test's endpoints
 * never receive another's events.
 */

const ENV = { WEBHOOK_RETRY_SCHEDULE: '1,1,1', WEBHOOK_TIMEOUT_MS: '1000' };
const FORBIDDEN = 'Insufficient permissions';
const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;
const ADDRESS = 'reader@example.com';

let herald: Herald, api: Client;
let org: Org, other: Org;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true, env: ENV }));
  // The key of every endpoint run queued (a wake's add_job inserts a job, or replaces a waiting one),
  // for a test that shows a campaign's settles queue none. Made once, before any delivery.
  await herald.db.raw(`
    CREATE TABLE test_queued_runs (key text);
    CREATE FUNCTION test_queued_run() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_queued_runs VALUES (NEW.key); RETURN NEW; END $$;
    CREATE TRIGGER test_queued_run AFTER INSERT OR UPDATE ON graphile_worker._private_jobs
      FOR EACH ROW WHEN (NEW.key LIKE 'webhooks-deliver:%') EXECUTE FUNCTION test_queued_run();`);
}, 60_000);

// Receivers live until the end: a stopped receiver's port could go to a later test's receiver while
// an earlier endpoint is still being retried.
afterAll(async () => {
  await herald?.stop();
  await Promise.all(receivers.map((r) => r.stop()));
});

const admin = (o: Org): Credential => ({ token: o.token });

async function newReceiver(): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver();
  receivers.push(r);
  return r;
}

/** A 400 naming `field`: the edge's validation shape, or a service's error whose message names it. */
function expectRejected(res: Reply, field: string) {
  if (res.body?.details) expectValidation(res, [field]);
  else expectError(res, 400, new RegExp(`\\b${field}\\b`));
}

async function createEndpoint(owner: Org, body: Record<string, unknown>, cred: Credential = admin(owner)) {
  const res = await api.post('/webhooks', body, cred);
  expect(res.status).toBe(201);
  return res.body;
}

/** An endpoint (of a new organization unless `owner` is given) on a receiver of its own that knows its secret. */
async function hooked(body: Record<string, unknown> = {}, owner?: Org) {
  const o = owner ?? (await signupOrg(api));
  const receiver = await newReceiver();
  const endpoint = await createEndpoint(o, { url: `${receiver.url}/hook`, ...body });
  receiver.secrets = [endpoint.secret];
  return { org: o, receiver, endpoint };
}

/**
 * An ad hoc email: one log, so one message.sent. (The sandbox reports receipts for SMS by itself a
 * few seconds later, which would add message.delivered and message.opened events; for email it
 * reports nothing.)
 */
async function sendEmail(owner: Org, to = ADDRESS) {
  const res = await api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Hello there' }, admin(owner));
  expect(res.status).toBe(200);
}

async function launchCampaign(owner: Org, addresses: string[]) {
  const created = await api.post(
    '/campaigns',
    { name: 'Webhooks', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Hi', content: 'Hello there' } }, recipients: { manual: addresses } },
    admin(owner),
  );
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, admin(owner));
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: addresses.length } });
  return created.body._id as string;
}

const endpointOf = async (o: Org, id: string) => (await api.get(`/webhooks/${id}`, admin(o))).body;
const attemptsOf = async (o: Org, endpointId: string) => {
  const res = await api.get(`/webhooks/${endpointId}/attempts`, admin(o));
  expect(res.status).toBe(200);
  return res.body as any[];
};
const eventOf = async (o: Org, id: string) => {
  const res = await api.get(`/webhook-events/${id}`, admin(o));
  expect(res.status).toBe(200);
  return res.body;
};
/** The endpoint's attempts once there are at least `n`. */
const waitForAttempts = (o: Org, endpointId: string, n: number) => waitFor(() => attemptsOf(o, endpointId), (a) => a.length >= n);
/** The event once its delivery to `endpointId` is no longer pending. */
const waitForSettled = (o: Org, eventId: string, endpointId: string) =>
  waitFor(() => eventOf(o, eventId), (e) => e.deliveries?.some((d: any) => d.endpointId === endpointId && d.status !== 'pending'));
const deliveryTo = (event: any, endpointId: string) => event.deliveries.find((d: any) => d.endpointId === endpointId);
/** Delivery runs of the endpoint queued or running. */
const queuedRuns = async (endpointId: string) =>
  (await herald.db.raw('SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ?', [`webhooks-deliver:${endpointId}`])).rows[0].n as number;
const ofType = (type: string) => (r: ReceivedWebhook) => r.body?.type === type;
const signatures = (r: ReceivedWebhook) => String(r.headers['webhook-signature']).split(' ');

describe('endpoints', () => {
  test('an admin creates an endpoint: 201 with its secret, shown only then', async () => {
    const receiver = await newReceiver();
    const created = await api.post(
      '/webhooks',
      { url: `${receiver.url}/a`, description: 'Orders', eventTypes: ['message.sent', 'campaign.completed'] },
      admin(org),
    );
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      _id: expect.stringMatching(UUID_RE),
      url: `${receiver.url}/a`,
      description: 'Orders',
      eventTypes: ['message.sent', 'campaign.completed'],
      enabled: true,
      disabledReason: null,
      lastSuccessAt: null,
      lastFailureAt: null,
      failingSince: null,
      failuresInARow: 0,
      organization: org.orgId,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: expect.stringMatching(ISO_MS),
      secret: expect.stringMatching(SECRET_RE),
    });
    const { secret, ...shown } = created.body;
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const got = await api.get(`/webhooks/${shown._id}`, admin(org));
    expect(got.status).toBe(200);
    expect(got.body).toEqual(shown);
    const list = await api.get('/webhooks', admin(org));
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(shown);
    for (const res of [got, list]) expect(JSON.stringify(res.body)).not.toContain(secret.slice('whsec_'.length));

    // Every type by default, enabled by default; each endpoint its own secret; an admin key may create.
    const { key } = await createApiKey(api, org, 'admin');
    const plain = await createEndpoint(org, { url: `${receiver.url}/b` }, { apiKey: key });
    expect(plain).toMatchObject({ eventTypes: [], enabled: true, secret: expect.stringMatching(SECRET_RE) });
    expect(plain.secret).not.toBe(secret);
    expect(await createEndpoint(org, { url: `${receiver.url}/c`, enabled: false })).toMatchObject({ enabled: false, disabledReason: null });
  });

  test('an admin updates and deletes an endpoint', async () => {
    const receiver = await newReceiver();
    const endpoint = await createEndpoint(org, { url: `${receiver.url}/before` });
    const updated = await api.put(
      `/webhooks/${endpoint._id}`,
      { url: `${receiver.url}/after`, description: 'Campaigns only', eventTypes: ['campaign.completed', 'campaign.failed'], enabled: false },
      admin(org),
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      _id: endpoint._id,
      url: `${receiver.url}/after`,
      description: 'Campaigns only',
      eventTypes: ['campaign.completed', 'campaign.failed'],
      enabled: false,
    });
    expect(updated.body).not.toHaveProperty('secret');
    expect(await endpointOf(org, endpoint._id)).toEqual(updated.body);
    // One field alone leaves the others be.
    const enabled = await api.put(`/webhooks/${endpoint._id}`, { enabled: true }, admin(org));
    expect(enabled.body).toMatchObject({ url: `${receiver.url}/after`, description: 'Campaigns only', enabled: true, disabledReason: null });

    const deleted = await api.delete(`/webhooks/${endpoint._id}`, admin(org));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'Webhook endpoint deleted successfully' });
    expect((await api.get(`/webhooks/${endpoint._id}`, admin(org))).status).toBe(404);
    expect((await api.get('/webhooks', admin(org))).body.map((e: any) => e._id)).not.toContain(endpoint._id);
    expect((await api.delete(`/webhooks/${endpoint._id}`, admin(org))).status).toBe(404);
  });

  test('a bad url or an unknown event type is 400 naming the field', async () => {
    for (const url of [undefined, '', 'not a url', 'ftp://example.com/hook', 'http://', 42]) {
      expectRejected(await api.post('/webhooks', { url }, admin(org)), 'url');
    }
    // An element is named by its index, as every array field is.
    expectRejected(await api.post('/webhooks', { url: 'https://example.com/hook', eventTypes: ['message.exploded'] }, admin(org)), 'eventTypes.0');
    expectRejected(await api.post('/webhooks', { url: 'https://example.com/hook', eventTypes: 'message.sent' }, admin(org)), 'eventTypes');
    const endpoint = await createEndpoint(org, { url: 'https://example.com/hook' });
    expectRejected(await api.put(`/webhooks/${endpoint._id}`, { url: 'not a url' }, admin(org)), 'url');
    expectRejected(await api.put(`/webhooks/${endpoint._id}`, { eventTypes: ['nope'] }, admin(org)), 'eventTypes.0');
    expect(await endpointOf(org, endpoint._id)).toMatchObject({ url: 'https://example.com/hook', eventTypes: [] });
  });

  test('only admins: a user-role caller is 403, no credential 401; an unknown id is 404', async () => {
    const endpoint = await createEndpoint(org, { url: 'https://example.com/hook' });
    const member = await addUser(api, org, 'user');
    const { key } = await createApiKey(api, org, 'user');
    for (const cred of [{ token: member.token }, { apiKey: key }] as Credential[]) {
      expectError(await api.get('/webhooks', cred), 403, FORBIDDEN);
      expectError(await api.post('/webhooks', { url: 'https://example.com/x' }, cred), 403, FORBIDDEN);
      expectError(await api.get(`/webhooks/${endpoint._id}`, cred), 403, FORBIDDEN);
      expectError(await api.put(`/webhooks/${endpoint._id}`, { enabled: false }, cred), 403, FORBIDDEN);
      expectError(await api.delete(`/webhooks/${endpoint._id}`, cred), 403, FORBIDDEN);
      expectError(await api.post(`/webhooks/${endpoint._id}/rotate-secret`, {}, cred), 403, FORBIDDEN);
      expectError(await api.get('/webhook-events', cred), 403, FORBIDDEN);
    }
    expectError(await api.get('/webhooks'), 401);
    const unknown = randomUUID();
    expectError(await api.get(`/webhooks/${unknown}`, admin(org)), 404);
    expectError(await api.put(`/webhooks/${unknown}`, { enabled: false }, admin(org)), 404);
    expectError(await api.delete(`/webhooks/${unknown}`, admin(org)), 404);
    expectError(await api.get(`/webhooks/${unknown}/attempts`, admin(org)), 404);
    expectError(await api.post(`/webhooks/${unknown}/rotate-secret`, {}, admin(org)), 404);
    expectError(await api.post(`/webhooks/${unknown}/test`, {}, admin(org)), 404);
    expectError(await api.get(`/webhook-events/${unknown}`, admin(org)), 404);
    expect(await endpointOf(org, endpoint._id)).toMatchObject({ enabled: true });
  });
});

describe('deliveries', () => {
  test('a send is delivered as a signed message.sent; the attempt keeps the first KiB of the answer', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    const answer = `ok ${'a'.repeat(2000)}`;
    receiver.setDefault({ kind: 'answer', status: 200, body: answer });
    await sendEmail(o);
    const [log] = (await api.get('/message-logs?channel=email&limit=1', admin(o))).body;
    const [request] = await receiver.waitForRequests(1);

    expect(request.method).toBe('POST');
    expect(request.path).toBe('/hook');
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    expect(request.verifyError).toBeUndefined();
    expect(request.verifiedBy).toEqual([endpoint.secret]);
    expect(signatures(request)).toEqual([expect.stringMatching(/^v1,[A-Za-z0-9+/]+=*$/)]);
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - request.at / 1000)).toBeLessThan(30);
    expect(Object.keys(request.body).sort()).toEqual(['data', 'timestamp', 'type']);
    expect(request.body.type).toBe('message.sent');
    expect(request.body.data).toMatchObject({ logId: log._id, campaignId: null, channel: 'email' });
    expect(request.body.data.recipients.map((r: any) => r.recipient)).toEqual([ADDRESS]);

    // The event as the API shows it: the webhook-id is its id.
    const event = await waitForSettled(o, request.id!, endpoint._id);
    expect(event).toEqual({
      _id: request.id,
      type: 'message.sent',
      timestamp: expect.stringMatching(ISO_MS),
      data: request.body.data,
      deliveries: [{ endpointId: endpoint._id, status: 'succeeded', attempts: 1, nextAttemptAt: null, lastResponseStatus: 200 }],
      createdAt: expect.stringMatching(ISO_MS),
    });
    expect(Date.parse(request.body.timestamp)).toBe(Date.parse(event.timestamp));
    expect((await api.get('/webhook-events', admin(o))).body.map((e: any) => e._id)).toEqual([event._id]);

    const attempt = {
      _id: expect.stringMatching(UUID_RE),
      endpointId: endpoint._id,
      eventId: event._id,
      eventType: 'message.sent',
      attempt: 1,
      status: 'succeeded',
      responseStatus: 200,
      durationMs: expect.any(Number),
      response: answer.slice(0, 1024),
      error: null,
      attemptedAt: expect.stringMatching(ISO_MS),
      createdAt: expect.stringMatching(ISO_MS),
    };
    expect(await attemptsOf(o, endpoint._id)).toEqual([attempt]);
    expect((await api.get(`/webhook-events/${event._id}/attempts`, admin(o))).body).toEqual([attempt]);
    expect(await endpointOf(o, endpoint._id)).toMatchObject({ lastSuccessAt: expect.stringMatching(ISO_MS), failuresInARow: 0, failingSince: null });
  });

  test('a campaign sends message.sent for its log and campaign.completed with its analytics', async () => {
    const { org: o, receiver } = await hooked();
    const addresses = ['c1@example.com', 'c2@example.com'];
    const campaignId = await launchCampaign(o, addresses);
    const completed = await receiver.waitForRequest(ofType('campaign.completed'));
    expect(completed.verified).toBe(true);
    expect(completed.body.data).toMatchObject({ campaignId, name: 'Webhooks', analytics: expect.objectContaining({ sent: 2 }) });
    const sent = await receiver.waitForRequest(ofType('message.sent'));
    expect(sent.verified).toBe(true);
    expect(sent.body.data).toMatchObject({ campaignId, channel: 'email' });
    expect(sent.body.data.recipients.map((r: any) => r.recipient).sort()).toEqual(addresses);
  });

  test("a campaign's events are posted by the process that settled them, with no claim and no queued run, as the same bytes a claim of them posts", async () => {
    const { org: o, receiver, endpoint } = await hooked();
    // Two logs (100 and 51 recipients) with one recipient failing: two message.sent, a message.failed
    // and campaign.completed, handed by the settles to this process's runs.
    const addresses = [...Array.from({ length: 150 }, (_, i) => `handed${i}@example.com`), 'nobody@fail.invalid'];
    const created = await api.post(
      '/campaigns',
      { name: 'Handed', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Hi', content: 'Hello there' } }, recipients: { manual: addresses } },
      admin(o),
    );
    expect(created.status).toBe(201);
    await api.post(`/campaigns/${created.body._id}/launch`, {}, admin(o));
    const done = await waitFor(() => api.get(`/campaigns/${created.body._id}`, admin(o)), (r) => r.body.status === 'completed');
    expect(done.body.analytics).toMatchObject({ sent: 150, failed: 1 });
    // A copy: the receiver's list grows with the re-sends below.
    const first = (await receiver.waitForRequests(4)).slice(0, 4);
    expect(first.map((r) => r.body.type).sort()).toEqual(['campaign.completed', 'message.failed', 'message.sent', 'message.sent']);
    for (const r of first) expect(r.verified).toBe(true);
    expect(first.find(ofType('message.failed'))!.body.data.recipients).toEqual([
      { recipient: 'nobody@fail.invalid', position: expect.any(Number), error: 'Sandbox: delivery to a reserved failing address' },
    ]);
    const sentTo = first.filter(ofType('message.sent')).flatMap((r) => r.body.data.recipients.map((x: any) => x.recipient));
    expect(sentTo.sort()).toEqual(addresses.slice(0, 150).sort());
    for (const r of first) {
      expect(deliveryTo(await waitForSettled(o, r.id!, endpoint._id), endpoint._id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    }
    // Handed over: no run of the endpoint was queued (a settle that did not hand its deliveries
    // over wakes the endpoint through the queue), and the run ended with nothing left due.
    const queued = await herald.db.raw('SELECT count(*)::int AS n FROM test_queued_runs WHERE key = ?', [`webhooks-deliver:${endpoint._id}`]);
    expect(queued.rows[0].n).toBe(0);

    // Re-sent by hand, each is claimed and built from what the database holds: the same bytes.
    for (const r of first) expect((await api.post(`/webhook-events/${r.id}/resend`, { endpointId: endpoint._id }, admin(o))).status).toBe(202);
    const again = (await receiver.waitForRequests(8)).slice(4);
    expect(again.map((r) => r.id).sort()).toEqual(first.map((r) => r.id).sort());
    for (const r of again) {
      expect(r.verified).toBe(true);
      expect(r.rawBody).toBe(first.find((f) => f.id === r.id)!.rawBody);
    }
  });

  test('deliveries handed over that the process does not take (a settled log it does not hold) are given back and queued, not left to their lease', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    // A settle's writes, leased to this process for ten minutes, as HANDED answers them; the
    // message event's settled log is not among those the process was given.
    const occurredAt = new Date();
    const data = { campaignId: randomUUID(), name: 'Handed back', analytics: { sent: 1 } };
    const [event] = (
      await herald.db.raw(
        `WITH e AS (INSERT INTO webhook_events (organization_id, type, occurred_at, data) VALUES (?, 'campaign.completed', ?, ?::jsonb) RETURNING id)
         INSERT INTO webhook_deliveries (organization_id, event_id, endpoint_id, leased_until) SELECT ?, e.id, ?, now() + interval '10 minutes' FROM e
         RETURNING event_id`,
        [o.orgId, occurredAt, JSON.stringify(data), o.orgId, endpoint._id],
      )
    ).rows;
    const secret = (await herald.db.raw('SELECT encode(secret, ?) AS s FROM webhook_endpoints WHERE organization_id = ? AND id = ?', ['base64', o.orgId, endpoint._id])).rows[0].s;
    await wake(herald.db, o.orgId, [endpoint._id], {
      handed: {
        endpoints: [{ id: endpoint._id, url: endpoint.url, secret, previous_secret: null, previous_secret_expires_at: null, failing_since: null }],
        deliveries: [{ event_id: event.event_id, endpoint_id: endpoint._id, type: 'campaign.completed', occurred_at: occurredAt.toISOString(), data: JSON.stringify(data), settled_log_id: randomUUID() }],
      },
      logs: new Map(),
    });
    const [delivered] = await receiver.waitForRequests(1);
    expect(delivered).toMatchObject({ id: event.event_id, verified: true, body: { type: 'campaign.completed', data } });
    expect(deliveryTo(await waitForSettled(o, event.event_id, endpoint._id), endpoint._id)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  test("deleting an endpoint deletes its deliveries' attempts; the event's other endpoints keep theirs", async () => {
    const { org: o, receiver, endpoint } = await hooked();
    const second = await createEndpoint(o, { url: `${receiver.url}/second` });
    receiver.secrets = [endpoint.secret, second.secret];
    await sendEmail(o);
    await waitForAttempts(o, endpoint._id, 1);
    const [attempt] = await waitForAttempts(o, second._id, 1);
    expect((await api.get(`/webhook-events/${attempt.eventId}/attempts`, admin(o))).body.map((a: any) => a.endpointId).sort()).toEqual(
      [endpoint._id, second._id].sort(),
    );
    expect((await api.delete(`/webhooks/${endpoint._id}`, admin(o))).status).toBe(200);
    expect((await api.get(`/webhook-events/${attempt.eventId}/attempts`, admin(o))).body.map((a: any) => a.endpointId)).toEqual([second._id]);
    expect((await eventOf(o, attempt.eventId)).deliveries.map((d: any) => d.endpointId)).toEqual([second._id]);
  });

  test("a send's message.sent and message.failed name its log's recipients sent and failed, by position; the API shows the same data", async () => {
    const { org: o, receiver } = await hooked({ eventTypes: ['message.sent', 'message.failed'] });
    const to = ['one@example.com', 'two@fail.invalid', 'three@example.com'];
    const res = await api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Hello there' }, admin(o));
    expect(res.status).toBe(200);
    const [log] = (await api.get('/message-logs?channel=email&limit=1', admin(o))).body;
    const sent = await receiver.waitForRequest(ofType('message.sent'));
    const failed = await receiver.waitForRequest(ofType('message.failed'));
    expect([sent.verified, failed.verified]).toEqual([true, true]);
    expect(sent.body.data).toEqual({
      logId: log._id,
      campaignId: null,
      channel: 'email',
      test: false,
      recipients: [
        { recipient: 'one@example.com', position: 1, providerMessageId: log.recipients[0].providerMessageId },
        { recipient: 'three@example.com', position: 3, providerMessageId: log.recipients[2].providerMessageId },
      ],
    });
    expect(failed.body.data).toEqual({
      logId: log._id,
      campaignId: null,
      channel: 'email',
      test: false,
      recipients: [{ recipient: 'two@fail.invalid', position: 2, error: log.recipients[1].error }],
    });
    expect(log.recipients[1]).toMatchObject({ status: 'failed', error: expect.any(String) });
    // The events as the API lists and shows them carry what was delivered.
    const listed = (await api.get('/webhook-events', admin(o))).body;
    expect(Object.fromEntries(listed.map((e: any) => [e.type, e.data]))).toEqual({ 'message.sent': sent.body.data, 'message.failed': failed.body.data });
    expect((await eventOf(o, failed.id!)).data).toEqual(failed.body.data);
  });

  test("an SMS's receipts arrive as one-recipient message.delivered and message.failed events", async () => {
    // The sandbox reports numbers ending in 0001 undelivered, the others delivered (then read).
    const { org: o, receiver } = await hooked({ eventTypes: ['message.delivered', 'message.failed'] });
    const [good, bad] = ['+254712345678', '+254712340001'];
    const res = await api.post('/notifications/send', { type: 'sms', to: [good, bad], message: 'Hello there' }, admin(o));
    expect(res.status).toBe(200);
    const [log] = (await api.get('/message-logs?channel=sms&limit=1', admin(o))).body;
    const position = (recipient: string) => (log.recipients as { recipient: string }[]).findIndex((r) => r.recipient === recipient) + 1;
    const delivered = await receiver.waitForRequest(ofType('message.delivered'));
    const failed = await receiver.waitForRequest(ofType('message.failed'));
    expect(delivered.body.data).toMatchObject({ logId: log._id, position: position(good), recipient: good, campaignId: null });
    expect(failed.body.data).toMatchObject({ logId: log._id, position: position(bad), recipient: bad, campaignId: null });
    expect(receiver.requests.filter((r) => !r.verified)).toEqual([]);
    expect(receiver.requests.map((r) => r.body.type).sort()).toEqual(['message.delivered', 'message.failed']);
  });

  test('a contact leaving a channel is a contact.unsubscribed event, once; rejoining is none', async () => {
    const { org: o, receiver } = await hooked({ eventTypes: ['contact.unsubscribed'] });
    const contact = await api.post('/contacts', { name: 'Leaver', email: 'leaver@example.com', phone: '0712000111' }, admin(o));
    expect(contact.status).toBe(201);
    const leave = { subscriptions: { email: 'unsubscribed' } };
    expect((await api.put(`/contacts/${contact.body._id}`, leave, admin(o))).status).toBe(200);
    const event = await receiver.waitForRequest(ofType('contact.unsubscribed'));
    expect(event.verified).toBe(true);
    expect(event.body.data).toEqual({ contactId: contact.body._id, channel: 'email', address: 'leaver@example.com', source: 'api' });
    // Again (already out), and back in: neither is an unsubscription.
    expect((await api.put(`/contacts/${contact.body._id}`, leave, admin(o))).status).toBe(200);
    expect((await api.put(`/contacts/${contact.body._id}`, { subscriptions: { email: 'subscribed' } }, admin(o))).status).toBe(200);
    // The events are written with the changes, before their answers: still the one.
    expect((await api.get('/webhook-events', admin(o))).body.map((e: any) => e.type)).toEqual(['contact.unsubscribed']);
    expect(await expectQuiet(() => receiver.requests.map((r) => r.body.type))).toEqual(['contact.unsubscribed']);
  });

  test('an endpoint gets only the event types it subscribed to', async () => {
    const { org: o, receiver: everything, endpoint: all } = await hooked();
    const { receiver: campaigns, endpoint: filtered } = await hooked({ eventTypes: ['campaign.completed'] }, o);
    await sendEmail(o);
    const campaignId = await launchCampaign(o, ['f1@example.com']);
    // The send's message.sent, the campaign's message.sent and campaign.completed.
    await everything.waitForRequests(3);
    const campaignEvent = await campaigns.waitForRequest(ofType('campaign.completed'));
    const sendEvent = await everything.waitForRequest((r) => r.body?.type === 'message.sent' && r.body.data.campaignId === null);
    expect(campaignEvent.body.data.campaignId).toBe(campaignId);
    expect(campaignEvent.verified).toBe(true);
    // Neither message.sent event was ever meant for the filtered endpoint.
    const sentEvents = everything.requests.filter(ofType('message.sent'));
    expect(sentEvents).toHaveLength(2);
    for (const r of sentEvents) expect((await eventOf(o, r.id!)).deliveries.map((d: any) => d.endpointId)).toEqual([all._id]);
    expect((await eventOf(o, campaignEvent.id!)).deliveries.map((d: any) => d.endpointId).sort()).toEqual([all._id, filtered._id].sort());
    expect(campaigns.requests.map((r) => r.body?.type)).toEqual(['campaign.completed']);
    expect(sendEvent.verified).toBe(true);
  });

  test('a failing endpoint is retried on the schedule with the same webhook-id until it succeeds', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    receiver.script({ kind: 'answer', status: 500, body: 'down' }, { kind: 'answer', status: 503, body: 'still down' });
    await sendEmail(o);
    const requests = await receiver.waitForRequests(3);
    expect(new Set(requests.map((r) => r.id)).size).toBe(1);
    expect(new Set(requests.map((r) => r.rawBody)).size).toBe(1);
    for (const r of requests) expect(r.verified).toBe(true);
    // One second apart (the schedule), not at once.
    expect(requests[1].at - requests[0].at).toBeGreaterThanOrEqual(900);
    expect(requests[2].at - requests[1].at).toBeGreaterThanOrEqual(900);

    const event = await waitForSettled(o, requests[0].id!, endpoint._id);
    expect(deliveryTo(event, endpoint._id)).toEqual({ endpointId: endpoint._id, status: 'succeeded', attempts: 3, nextAttemptAt: null, lastResponseStatus: 200 });
    const attempts = await attemptsOf(o, endpoint._id);
    expect(attempts.map((a) => [a.attempt, a.status, a.responseStatus, a.response, a.eventId])).toEqual([
      [3, 'succeeded', 200, 'ok', event._id],
      [2, 'failed', 503, 'still down', event._id],
      [1, 'failed', 500, 'down', event._id],
    ]);
    expect(await endpointOf(o, endpoint._id)).toMatchObject({
      lastSuccessAt: expect.stringMatching(ISO_MS),
      lastFailureAt: expect.stringMatching(ISO_MS),
      failuresInARow: 0,
      failingSince: null,
    });
    // Nothing is left queued for the endpoint, and nothing more arrives.
    expect(await waitFor(() => queuedRuns(endpoint._id), (n) => n === 0, 10_000)).toBe(0);
    expect(await expectQuiet(() => receiver.requests.length)).toBe(3);
  });

  test('attempts that could not be kept are posted again at once with the same webhook-id, not after their lease', async () => {
    // A trigger on a distributed table is not what this checks: on Citus it is left out.
    if ((await herald.db.raw("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).rows.length) return;
    const { org: o, receiver, endpoint } = await hooked();
    // The first write of this organization's attempts fails (a sequence counts across the
    // rollback): the delivery was posted, its attempt is lost with the failed statement.
    await herald.db.raw(`CREATE SEQUENCE keep_fault_seq;
      CREATE FUNCTION keep_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.organization_id = '${o.orgId}' AND nextval('keep_fault_seq') = 1 THEN RAISE EXCEPTION 'injected: attempts not kept'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER keep_fault BEFORE INSERT ON webhook_attempts FOR EACH ROW EXECUTE FUNCTION keep_fault();`);
    try {
      await sendEmail(o);
      const requests = await receiver.waitForRequests(2);
      expect(requests[1].id).toBe(requests[0].id);
      expect(requests[1].rawBody).toBe(requests[0].rawBody);
      // The run queued 2 s after the failed one takes it, not a run after its lease (31 s here).
      expect(requests[1].at - requests[0].at).toBeLessThan(15_000);
      const event = await waitForSettled(o, requests[0].id!, endpoint._id);
      expect(deliveryTo(event, endpoint._id)).toMatchObject({ status: 'succeeded', lastResponseStatus: 200 });
      expect((await attemptsOf(o, endpoint._id)).map((a) => a.status)).toEqual(['succeeded']);
    } finally {
      await herald.db.raw('DROP TRIGGER keep_fault ON webhook_attempts; DROP FUNCTION keep_fault(); DROP SEQUENCE keep_fault_seq');
    }
  });

  test('Retry-After on a failure sets the delay before the next attempt', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    receiver.script({ kind: 'answer', status: 503, headers: { 'retry-after': '3' }, body: 'busy' });
    await sendEmail(o);
    const [first] = await receiver.waitForRequests(1);
    const pending = await waitFor(() => eventOf(o, first.id!), (e) => deliveryTo(e, endpoint._id)?.attempts === 1);
    expect(deliveryTo(pending, endpoint._id)).toMatchObject({ status: 'pending', lastResponseStatus: 503, nextAttemptAt: expect.stringMatching(ISO_MS) });
    expect(Date.parse(deliveryTo(pending, endpoint._id).nextAttemptAt) - first.at).toBeGreaterThanOrEqual(2500);
    const [, second] = await receiver.waitForRequests(2);
    expect(second.id).toBe(first.id);
    expect(second.at - first.at).toBeGreaterThanOrEqual(2900);
    expect(deliveryTo(await waitForSettled(o, first.id!, endpoint._id), endpoint._id)).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  test('410 Gone disables the endpoint and stops its retries; enabling it again clears the reason', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    receiver.setDefault({ kind: 'answer', status: 410, body: 'gone' });
    await sendEmail(o);
    const [request] = await receiver.waitForRequests(1);
    const disabled = await waitFor(() => endpointOf(o, endpoint._id), (e) => e.enabled === false);
    expect(disabled).toMatchObject({ enabled: false, disabledReason: expect.any(String) });
    expect(disabled.disabledReason.length).toBeGreaterThan(0);
    const event = await waitForSettled(o, request.id!, endpoint._id);
    expect(deliveryTo(event, endpoint._id)).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null, lastResponseStatus: 410 });
    // Nothing more arrives, and new events are not sent: an endpoint still enabled (the witness)
    // gets the next event, and by then the disabled one would have been given it too.
    expect(await waitFor(() => queuedRuns(endpoint._id), (n) => n === 0, 10_000)).toBe(0);
    const { receiver: witness } = await hooked({ eventTypes: ['message.sent'] }, o);
    await sendEmail(o);
    await witness.waitForRequest(ofType('message.sent'));
    expect(await expectQuiet(() => receiver.requests.length)).toBe(1);

    const enabled = await api.put(`/webhooks/${endpoint._id}`, { enabled: true }, admin(o));
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    receiver.setDefault({ kind: 'answer', status: 200, body: 'ok' });
    await sendEmail(o);
    const [, again] = await receiver.waitForRequests(2);
    expect(again.id).not.toBe(request.id);
    expect(again.verified).toBe(true);
  });

  test('an endpoint that never answers times out, and the attempt says so', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    receiver.setDefault({ kind: 'hang' });
    await sendEmail(o);
    const [attempt] = await waitForAttempts(o, endpoint._id, 1);
    expect(receiver.requests.length).toBeGreaterThanOrEqual(1);
    expect(attempt).toMatchObject({ attempt: 1, status: 'failed', responseStatus: null, error: expect.stringMatching(/time/i) });
    expect(attempt.durationMs).toBeGreaterThanOrEqual(900);
    expect(attempt.durationMs).toBeLessThan(5000);
    const failing = await endpointOf(o, endpoint._id);
    expect(failing).toMatchObject({ failingSince: expect.stringMatching(ISO_MS), lastFailureAt: expect.stringMatching(ISO_MS), lastSuccessAt: null });
    expect(failing.failuresInARow).toBeGreaterThanOrEqual(1);
  });

  test('a redirect is a failure and is not followed; the delivery fails once the schedule is spent', async () => {
    const target = await newReceiver();
    const { org: o, receiver, endpoint } = await hooked();
    receiver.setDefault({ kind: 'answer', status: 302, headers: { location: `${target.url}/elsewhere` }, body: '' });
    await sendEmail(o);
    // The first attempt and three retries (`1,1,1`), then no more.
    const requests = await receiver.waitForRequests(4);
    const event = await waitForSettled(o, requests[0].id!, endpoint._id);
    expect(deliveryTo(event, endpoint._id)).toEqual({ endpointId: endpoint._id, status: 'failed', attempts: 4, nextAttemptAt: null, lastResponseStatus: 302 });
    const attempts = await attemptsOf(o, endpoint._id);
    expect(attempts.map((a) => [a.attempt, a.status, a.responseStatus])).toEqual([
      [4, 'failed', 302],
      [3, 'failed', 302],
      [2, 'failed', 302],
      [1, 'failed', 302],
    ]);
    expect(target.requests).toEqual([]);
    expect(receiver.requests).toHaveLength(4);
    // Failing, but not for five days: still enabled.
    expect(await endpointOf(o, endpoint._id)).toMatchObject({ enabled: true, failuresInARow: 4, failingSince: expect.stringMatching(ISO_MS), lastSuccessAt: null });
  });

  test('POST /webhooks/:id/test sends an example event to that endpoint only', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    const { receiver: bystander } = await hooked({}, o);
    const res = await api.post(`/webhooks/${endpoint._id}/test`, {}, admin(o));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ eventId: expect.stringMatching(UUID_RE) });
    const [request] = await receiver.waitForRequests(1);
    expect(request.id).toBe(res.body.eventId);
    expect(request.verified).toBe(true);
    expect(request.body.data).toMatchObject({ test: true });

    const typed = await api.post(`/webhooks/${endpoint._id}/test`, { eventType: 'campaign.completed' }, admin(o));
    expect(typed.status).toBe(202);
    const second = await receiver.waitForRequest((r) => r.id === typed.body.eventId);
    expect(second.body).toMatchObject({ type: 'campaign.completed', data: { test: true } });
    expect((await waitForSettled(o, typed.body.eventId, endpoint._id)).deliveries.map((d: any) => d.endpointId)).toEqual([endpoint._id]);
    expect(bystander.requests).toEqual([]);
    expectRejected(await api.post(`/webhooks/${endpoint._id}/test`, { eventType: 'message.exploded' }, admin(o)), 'eventType');
  });

  test('an event is re-sent by hand with the same webhook-id and body', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    await sendEmail(o);
    const [first] = await receiver.waitForRequests(1);
    await waitForSettled(o, first.id!, endpoint._id);
    const res = await api.post(`/webhook-events/${first.id}/resend`, { endpointId: endpoint._id }, admin(o));
    expect(res.status).toBe(202);
    const [, again] = await receiver.waitForRequests(2);
    expect(again.id).toBe(first.id);
    expect(again.body).toEqual(first.body);
    expect(again.verified).toBe(true);
    const attempts = await waitFor(
      async () => (await api.get(`/webhook-events/${first.id}/attempts`, admin(o))).body as any[],
      (a) => a.length >= 2,
    );
    expect(attempts.map((a) => [a.endpointId, a.status])).toEqual([
      [endpoint._id, 'succeeded'],
      [endpoint._id, 'succeeded'],
    ]);
    expect(Date.parse(attempts[0].attemptedAt)).toBeGreaterThanOrEqual(Date.parse(attempts[1].attemptedAt));
    // An id in the body that is not one of the organization's endpoints is a 400 naming it.
    expectRejected(await api.post(`/webhook-events/${first.id}/resend`, { endpointId: randomUUID() }, admin(o)), 'endpointId');
    expectRejected(await api.post(`/webhook-events/${first.id}/resend`, {}, admin(o)), 'endpointId');
  });

  test('a rotated secret: both sign for a day, then only the new one', async () => {
    const { org: o, receiver, endpoint } = await hooked();
    const rotated = await api.post(`/webhooks/${endpoint._id}/rotate-secret`, {}, admin(o));
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(SECRET_RE), previousSecretExpiresAt: expect.stringMatching(ISO_MS) });
    const { secret, previousSecretExpiresAt } = rotated.body;
    expect(secret).not.toBe(endpoint.secret);
    expect(Math.abs(Date.parse(previousSecretExpiresAt) - (Date.now() + 24 * 3600_000))).toBeLessThan(60_000);
    expect(JSON.stringify(await endpointOf(o, endpoint._id))).not.toContain(secret.slice('whsec_'.length));
    receiver.secrets = [secret, endpoint.secret];

    const test = async () => {
      const res = await api.post(`/webhooks/${endpoint._id}/test`, {}, admin(o));
      expect(res.status).toBe(202);
      return receiver.waitForRequest((r) => r.id === res.body.eventId);
    };
    const during = await test();
    expect(during.verifiedBy).toEqual([secret, endpoint.secret]);
    expect(signatures(during)).toHaveLength(2);

    await herald.db('webhook_endpoints').where({ organization_id: o.orgId, id: endpoint._id }).update({ previous_secret_expires_at: new Date(Date.now() - 60_000) });
    const after = await test();
    expect(after.verifiedBy).toEqual([secret]);
    expect(verifies(after, endpoint.secret)).toBe(false);
    expect(signatures(after)).toHaveLength(1);
  });
});

describe('tenancy', () => {
  test("another organization can not see or change an endpoint, its attempts or events, and never gets them", async () => {
    const { org: a, receiver: aReceiver, endpoint: aEndpoint } = await hooked();
    const { org: b, receiver: bReceiver, endpoint: bEndpoint } = await hooked();
    await sendEmail(a);
    const [request] = await aReceiver.waitForRequests(1);
    await waitForSettled(a, request.id!, aEndpoint._id);
    const eventId = request.id!;

    const asB = admin(b);
    expectError(await api.get(`/webhooks/${aEndpoint._id}`, asB), 403, FORBIDDEN);
    expectError(await api.put(`/webhooks/${aEndpoint._id}`, { url: `${bReceiver.url}/stolen`, enabled: false }, asB), 403, FORBIDDEN);
    expectError(await api.delete(`/webhooks/${aEndpoint._id}`, asB), 403, FORBIDDEN);
    expectError(await api.get(`/webhooks/${aEndpoint._id}/attempts`, asB), 403, FORBIDDEN);
    expectError(await api.post(`/webhooks/${aEndpoint._id}/rotate-secret`, {}, asB), 403, FORBIDDEN);
    expectError(await api.post(`/webhooks/${aEndpoint._id}/test`, {}, asB), 403, FORBIDDEN);
    expectError(await api.get(`/webhook-events/${eventId}`, asB), 403, FORBIDDEN);
    expectError(await api.get(`/webhook-events/${eventId}/attempts`, asB), 403, FORBIDDEN);
    expectError(await api.post(`/webhook-events/${eventId}/resend`, { endpointId: bEndpoint._id }, asB), 403, FORBIDDEN);
    // A's own event to B's endpoint: an id in the body that is not A's is a 400 naming it.
    expectRejected(await api.post(`/webhook-events/${eventId}/resend`, { endpointId: bEndpoint._id }, admin(a)), 'endpointId');

    expect((await api.get('/webhooks', asB)).body.map((e: any) => e._id)).toEqual([bEndpoint._id]);
    expect((await api.get('/webhook-events', asB)).body.map((e: any) => e._id)).not.toContain(eventId);
    expect(await attemptsOf(b, bEndpoint._id)).toEqual([]);
    expect(await endpointOf(a, aEndpoint._id)).toMatchObject({ url: aEndpoint.url, enabled: true });
    expect((await api.post(`/webhooks/${aEndpoint._id}/test`, {}, admin(a))).status).toBe(202);
    await aReceiver.waitForRequests(2);
    expect(bReceiver.requests).toEqual([]);
  });
});

describe('with BLOCK_PRIVATE_HOSTS', () => {
  let blockedDb: Awaited<ReturnType<typeof isolatedDatabase>>;
  let blocked: Herald, blockedApi: Client, owner: Org;

  beforeAll(async () => {
    blockedDb = await isolatedDatabase(`webhooks_blocked_${process.pid}`);
    ({ herald: blocked, api: blockedApi, orgs: [owner] } = await heraldWithOrgs(1, { workers: true, env: { DATABASE_URL: blockedDb.url, ...ENV, BLOCK_PRIVATE_HOSTS: 'true' } }));
  }, 60_000);
  afterAll(async () => {
    await blocked?.stop();
    await blockedDb?.drop();
  });

  test('an endpoint on a private address or a name resolving to one is 400 naming url', async () => {
    const receiver = await newReceiver();
    const port = new URL(receiver.url).port;
    for (const url of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`, 'http://10.1.2.3/hook', 'http://192.168.0.10/hook', 'http://[::1]/hook']) {
      expectRejected(await blockedApi.post('/webhooks', { url }, admin(owner)), 'url');
    }
    const created = await blockedApi.post('/webhooks', { url: 'http://1.1.1.1/hook' }, admin(owner));
    expect(created.status).toBe(201);
    expectRejected(await blockedApi.put(`/webhooks/${created.body._id}`, { url: `http://localhost:${port}/hook` }, admin(owner)), 'url');
    await blockedApi.delete(`/webhooks/${created.body._id}`, admin(owner));
    expect(receiver.requests).toEqual([]);
  });

  test('the check is on the address connected to: an endpoint that now points at a private one gets nothing', async () => {
    const receiver = await newReceiver();
    const port = new URL(receiver.url).port;
    const urls = [`http://127.0.0.1:${port}/literal`, `http://localhost:${port}/resolved`];
    const endpoints = [];
    for (const url of urls) {
      const created = await blockedApi.post('/webhooks', { url: 'http://1.1.1.1/hook' }, admin(owner));
      expect(created.status).toBe(201);
      // As if the address had been accepted once and the name had later come to resolve privately.
      await blocked.db('webhook_endpoints').where({ organization_id: owner.orgId, id: created.body._id }).update({ url });
      endpoints.push(created.body);
    }
    const send = await blockedApi.post('/notifications/send', { type: 'email', to: ADDRESS, subject: 'Hi', message: 'Hello there' }, admin(owner));
    expect(send.status).toBe(200);
    for (const endpoint of endpoints) {
      const attempts = await waitFor(async () => (await blockedApi.get(`/webhooks/${endpoint._id}/attempts`, admin(owner))).body as any[], (a) => a.length >= 1);
      expect(attempts[0]).toMatchObject({ status: 'failed', responseStatus: null, error: expect.stringMatching(/private|loopback|127\.0\.0\.1|::1/i) });
    }
    expect(receiver.requests).toEqual([]);
  });
});

describe('slow receivers, with one slot in each lane', () => {
  let laneDb: Awaited<ReturnType<typeof isolatedDatabase>>;
  let laneHerald: Herald, laneApi: Client, owner: Org;
  let workers: ReturnType<typeof workerProcesses>;

  // An API Herald without workers (so no delivery starts in its process) queues every campaign and
  // delivery run; one worker process with one slot in each lane, and a timeout longer than the
  // receivers' delays, runs the jobs.
  beforeAll(async () => {
    laneDb = await isolatedDatabase(`webhooks_lane_${process.pid}`);
    ({ herald: laneHerald, api: laneApi, orgs: [owner] } = await heraldWithOrgs(1, { env: { DATABASE_URL: laneDb.url, WORKERS: 'false', CAMPAIGN_INLINE_LIMIT: '0' } }));
    workers = workerProcesses(laneDb.url, { ...ENV, WEBHOOK_TIMEOUT_MS: '15000', WORKER_CONCURRENCY: '1' });
    workers.start();
  }, 60_000);
  afterAll(async () => {
    await workers?.stopAll();
    await laneHerald?.stop();
    await laneDb?.drop();
  });

  /**
   * An endpoint's delivery run lasts while its receiver answers, and never holds one of the slots
   * that send: when its job waited for it in the sending lane, it held the only slot, and a
   * campaign launched meanwhile waited for the receiver's answer.
   */
  test("a campaign is sent while an endpoint's delivery waits for a slow receiver", async () => {
    const receiver = await newReceiver();
    receiver.setDefault({ kind: 'delay', ms: 6000 });
    const endpoint = (await laneApi.post('/webhooks', { url: `${receiver.url}/hook`, eventTypes: ['message.sent'] }, admin(owner))).body;
    receiver.secrets = [endpoint.secret];
    expect((await laneApi.post('/notifications/send', { type: 'email', to: ADDRESS, subject: 'Hi', message: 'Hello there' }, admin(owner))).status).toBe(200);
    // The delivery is at the receiver, posted by the run its queued job started in the worker.
    await waitFor(async () => receiver.inFlight, (n) => n > 0, 20_000);

    const created = await laneApi.post(
      '/campaigns',
      { name: 'Beside a slow endpoint', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Hi', content: 'Hello' } }, recipients: { manual: ['lane@example.com'] } },
      admin(owner),
    );
    expect((await laneApi.post(`/campaigns/${created.body._id}/launch`, {}, admin(owner))).body.status).toBe('active');
    const campaign = await waitFor(async () => (await laneApi.get(`/campaigns/${created.body._id}`, admin(owner))).body, (c) => c.status === 'completed', 3_000);
    expect(campaign).toMatchObject({ status: 'completed', analytics: { sent: 1 } });
    // Sent while the first delivery was still waiting for its answer.
    expect(receiver.inFlight).toBeGreaterThan(0);
    const attempts = await waitFor(async () => (await laneApi.get(`/webhooks/${endpoint._id}/attempts`, admin(owner))).body as any[], (a) => a.length >= 1, 15_000);
    expect(attempts[0]).toMatchObject({ status: 'succeeded' });
  }, 60_000);

  /**
   * An endpoint's queued run starts its run in the process and ends: it never holds a slot of the
   * lane while a receiver takes its time. When the job waited for the run, an event to a slow
   * receiver held the lane's slot (two held both of two), and another organization's endpoint
   * waited for its answers.
   */
  test("an endpoint's slow receiver never holds back another endpoint's deliveries", async () => {
    const [slowOwner, fastOwner] = [await signupOrg(laneApi), await signupOrg(laneApi)];
    const slow = await newReceiver();
    slow.setDefault({ kind: 'delay', ms: 8000 });
    const slowEndpoint = (await laneApi.post('/webhooks', { url: `${slow.url}/slow`, eventTypes: ['message.sent'] }, admin(slowOwner))).body;
    slow.secrets = [slowEndpoint.secret];
    const fast = await newReceiver();
    const fastEndpoint = (await laneApi.post('/webhooks', { url: `${fast.url}/fast`, eventTypes: ['message.sent'] }, admin(fastOwner))).body;
    fast.secrets = [fastEndpoint.secret];
    const send = (o: Org) => laneApi.post('/notifications/send', { type: 'email', to: ADDRESS, subject: 'Hi', message: 'Hello there' }, admin(o));

    for (let i = 0; i < 3; i++) {
      expect((await send(slowOwner)).status).toBe(200);
      // Each at the slow receiver: a job that waited for its run held the one slot, and the next waited.
      expect(await waitFor(async () => slow.inFlight, (n) => n > i, 10_000)).toBe(i + 1);
    }
    const started = Date.now();
    expect((await send(fastOwner)).status).toBe(200);
    await fast.waitForRequest((r) => r.path === '/fast', 5_000);
    expect(Date.now() - started).toBeLessThan(3_000);
    // Delivered while the slow receiver still held every request it was given.
    expect(slow.inFlight).toBe(3);
  }, 60_000);
});

