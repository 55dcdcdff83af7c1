import { createClient, type Client as WsClient, type FormattedExecutionResult } from 'graphql-ws';
import pg from 'pg';
import WebSocket from 'ws';
import { generateApiKey } from '../../src/modules/api-keys/format.js';
import { recordAll } from '../../src/modules/receipts/service.js';
import type { Herald } from '../../src/server.js';
import { client, createApiKey, isolatedDatabase, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { workerProcesses } from '../helpers/workers.js';

/**
 * platform.md, "Console": live campaign progress as a GraphQL subscription (`graphql-ws` over
 * WebSocket, the HTTP credentials), fed across processes by Postgres LISTEN/NOTIFY. The subscriber's
 * Herald runs no workers: a campaign is sent by a real worker process (`src/worker.ts`), whose
 * settles reach the subscriber only through the database's announcements. Also: the credentials and
 * the authorization of `campaign(id)`, cancel, the announcements themselves (made on commit, once per
 * counting statement, none for a rollback), a lost listener connection, and stopping.
 */

const PROGRESS = `subscription Progress($id: ID!) {
  campaignProgress(id: $id) { _id status updatedAt analytics { sent failed delivered } }
}`;

interface Event {
  _id: string;
  status: string;
  updatedAt: string;
  analytics: { sent: number; failed: number; delivered: number };
}

let db: Awaited<ReturnType<typeof isolatedDatabase>>;
let herald: Herald, api: Client;
let workers: ReturnType<typeof workerProcesses>;
const sockets: WsClient[] = [];

beforeAll(async () => {
  db = await isolatedDatabase(`progress_${process.pid}`);
  herald = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false', CAMPAIGN_INLINE_LIMIT: '10' });
  workers = workerProcesses(db.url);
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await Promise.all(sockets.map((s) => s.dispose()));
  await workers?.stopAll();
  await herald?.stop();
  await db?.drop();
});

/** A graphql-ws client on a Herald's `/graphql` (the file's by default), with `params` as its `connection_init` payload. */
function connect(params?: Record<string, unknown>, on: Herald = herald): WsClient {
  const socket = createClient({ url: `${on.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: params, retryAttempts: 0 });
  sockets.push(socket);
  return socket;
}

/** The progress of campaign `id` as an iterator of results. */
const progress = (socket: WsClient, id: string) => socket.iterate<{ campaignProgress: Event }>({ query: PROGRESS, variables: { id } });

/** Every result until the subscription completes, each with the time it arrived. */
async function all(results: AsyncIterable<FormattedExecutionResult<{ campaignProgress: Event }, unknown>>) {
  const out: { event: Event; at: number }[] = [];
  for await (const result of results) {
    expect(result.errors).toBeUndefined();
    out.push({ event: result.data!.campaignProgress, at: Date.now() });
  }
  return out;
}

/** How the socket of a subscription was closed (the iterator rejects with the close event). */
async function closeOf(socket: WsClient) {
  try {
    await progress(socket, '00000000-0000-4000-8000-000000000000').next();
  } catch (event) {
    return { code: (event as { code: number }).code, reason: (event as { reason: string }).reason };
  }
  throw new Error('the socket was not closed');
}

/** An organization with credits and `contacts` SMS contacts. */
async function orgWithContacts(contacts: number): Promise<Org> {
  const org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT ?, 'Contact ' || i, '+2547' || lpad((20000000 + i)::text, 8, '0') FROM generate_series(1, ?) AS i`,
    [org.orgId, contacts],
  );
  return org;
}

/** A campaign to all of the organization's contacts, launched: larger than the inline limit, so left `active` for workers. */
async function launched(org: Org): Promise<string> {
  const created = await api.post('/campaigns', { name: 'Live', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } } }, { token: org.token });
  expect(created.status).toBe(201);
  const launch = await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token });
  expect(launch.body.status).toBe('active');
  return created.body._id;
}

describe('the connection takes the HTTP credentials', () => {
  let org: Org;
  beforeAll(async () => {
    org = await signupOrg(api);
  });

  test.each([
    ['none', undefined],
    ['an empty payload', {}],
    ['a bad JWT', { Authorization: 'Bearer not-a-token' }],
    ['a JWT without Bearer', { Authorization: 'not-a-token' }],
    ['a malformed API key', { 'UNIFIED-API-Key': 'uak_nope' }],
    ['an unknown API key', { 'UNIFIED-API-Key': generateApiKey() }],
  ])('%s: closed with 4401', async (_label, params) => {
    expect(await closeOf(connect(params))).toEqual({ code: 4401, reason: 'Unauthorized' });
  });

  test('two credentials: closed with 4400, as HTTP answers 400', async () => {
    const key = await createApiKey(api, org);
    expect(await closeOf(connect({ Authorization: `Bearer ${org.token}`, 'unified-api-key': key.key }))).toEqual({ code: 4400, reason: 'Bad Request' });
  });

  test('a JWT or an API key, names in any case', async () => {
    const small = await api.post('/campaigns', { name: 'Done', type: 'broadcast', channels: ['sms'], recipients: { manual: ['0712345678'] }, messages: { sms: { content: 'Hi' } } }, { token: org.token });
    const done = await api.post(`/campaigns/${small.body._id}/launch`, undefined, { token: org.token });
    expect(done.body.status).toBe('completed');
    const key = await createApiKey(api, org);
    for (const params of [{ Authorization: `Bearer ${org.token}` }, { authorization: `Bearer ${org.token}` }, { 'UNIFIED-API-Key': key.key }, { 'unified-api-key': key.key }]) {
      // A campaign already completed: its one event is the final one, and the subscription completes.
      const events = await all(progress(connect(params), small.body._id));
      expect(events.map((e) => e.event)).toEqual([
        { _id: small.body._id, status: 'completed', updatedAt: done.body.updatedAt, analytics: { sent: 1, failed: 0, delivered: expect.any(Number) } },
      ]);
    }
  });

  test("another organization's campaign is FORBIDDEN, an unknown one NOT_FOUND, as campaign(id) answers; nothing else is told", async () => {
    const other = await signupOrg(api);
    const created = await api.post('/campaigns', { name: 'Secret plans', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, { token: other.token });
    const socket = connect({ Authorization: `Bearer ${org.token}` });
    for (const [id, code, statusCode] of [
      [created.body._id, 'FORBIDDEN', 403],
      ['5b0b4f0e-95f3-4d1a-9a39-7f1f1c2d3e4f', 'NOT_FOUND', 404],
      ['not-a-uuid', 'NOT_FOUND', 404],
    ] as const) {
      const results = [];
      for await (const result of progress(socket, id)) results.push(result);
      const http = await api.gql('query ($id: ID!) { campaign(id: $id) { _id } }', { id }, { token: org.token });
      const [expected] = http.body.errors!;
      expect(expected.extensions).toEqual({ code, statusCode });
      expect(results).toEqual([{ errors: [{ message: expected.message, locations: expect.any(Array), path: ['campaignProgress'], extensions: { code, statusCode } }] }]);
      expect(JSON.stringify(results)).not.toContain('Secret');
    }
  });

  test('queries go over HTTP: over the socket they are refused with BAD_REQUEST', async () => {
    const socket = connect({ Authorization: `Bearer ${org.token}` });
    await expect(socket.iterate({ query: '{ health }' }).next()).rejects.toEqual([
      expect.objectContaining({ extensions: { code: 'BAD_REQUEST', statusCode: 400 } }),
    ]);
  });
});

test('a canceled campaign: its subscriber gets the canceled status, then the subscription completes', async () => {
  const org = await orgWithContacts(200);
  const id = await launched(org);
  const events = progress(connect({ Authorization: `Bearer ${org.token}` }), id);
  const first = await events.next();
  expect(first.value?.data?.campaignProgress).toMatchObject({ _id: id, status: 'active', analytics: { sent: 0, failed: 0 } });
  const canceled = await api.post(`/campaigns/${id}/cancel`, undefined, { token: org.token });
  expect(canceled.body.status).toBe('canceled');
  const rest = await all(events);
  expect(rest.map((e) => e.event)).toEqual([{ _id: id, status: 'canceled', updatedAt: canceled.body.updatedAt, analytics: { sent: 0, failed: 0, delivered: 0 } }]);
});

test("the listener's connection lost: announcements made meanwhile are not, since every subscriber reads again once it listens", async () => {
  const org = await orgWithContacts(50);
  const id = await launched(org);
  const events = progress(connect({ Authorization: `Bearer ${org.token}` }), id);
  expect((await events.next()).value?.data?.campaignProgress).toMatchObject({ status: 'active' });
  const listener = "SELECT pid FROM pg_stat_activity WHERE application_name = 'herald-progress' AND datname = current_database()";
  const [{ pid }] = (await herald.db.raw(listener)).rows;
  await herald.db.raw('SELECT pg_terminate_backend(?::int)', [pid]);
  // Canceled while nobody listens (the listener comes back a second later).
  expect((await api.post(`/campaigns/${id}/cancel`, undefined, { token: org.token })).body.status).toBe('canceled');
  expect((await all(events)).map((e) => e.event.status)).toEqual(['canceled']);
  const now = (await herald.db.raw(listener)).rows;
  expect(now).toHaveLength(1);
  expect(now[0].pid).not.toBe(pid);
});

describe('announcements on herald_campaign_progress', () => {
  let listener: pg.Client;
  const heard: string[] = [];
  beforeAll(async () => {
    listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    listener.on('notification', (msg) => heard.push(msg.payload ?? ''));
    await listener.query('LISTEN herald_campaign_progress');
  });
  afterAll(() => listener?.end());

  /** The announcements of `campaignId` heard while `change` ran and shortly after. */
  async function announced(campaignId: string, change: () => Promise<unknown>): Promise<string[]> {
    heard.length = 0;
    await change();
    await new Promise((resolve) => setTimeout(resolve, 300));
    return heard.filter((payload) => payload.endsWith(`:${campaignId}`));
  }

  test('a counted receipt announces its campaign once per statement, a duplicate does not, a later one again', async () => {
    const org = await signupOrg(api);
    const created = await api.post('/campaigns', { name: 'Three', type: 'broadcast', channels: ['sms'], recipients: { manual: ['0712000001', '0712000002', '0712000003'] }, messages: { sms: { content: 'Hi' } } }, { token: org.token });
    const id = created.body._id as string;
    expect((await api.post(`/campaigns/${id}/launch`, undefined, { token: org.token })).body.status).toBe('completed');
    const log = await herald.db('message_logs').where({ organization_id: org.orgId, campaign_id: id }).first('id');
    const delivered = () => recordAll(herald.db, org.orgId, log.id, [1, 2, 3], { kind: 'delivered', at: new Date() });
    expect(await announced(id, delivered)).toEqual([`${org.orgId}:${id}`]);
    expect(await announced(id, delivered)).toEqual([]);
    // A recipient with a row already: changed from it by the second statement, which announces too.
    expect(await announced(id, () => recordAll(herald.db, org.orgId, log.id, [2], { kind: 'clicked', at: new Date() }))).toEqual([`${org.orgId}:${id}`]);
    expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics).toMatchObject({ delivered: 3, opened: 1, clicked: 1 });
  });

  test('a change rolled back announces nothing: a draft refused cancel', async () => {
    const org = await signupOrg(api);
    const created = await api.post('/campaigns', { name: 'Draft', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, { token: org.token });
    const id = created.body._id as string;
    const refused = async () => expect((await api.post(`/campaigns/${id}/cancel`, undefined, { token: org.token })).status).toBe(409);
    expect(await announced(id, refused)).toEqual([]);
    const launch = async () => expect((await api.post(`/campaigns/${id}/launch`, undefined, { token: org.token })).status).toBe(400);
    expect(await announced(id, launch)).toEqual([]);
  });
});

test('sent by a worker in another process: the subscriber sees sent grow, at most one event per 250 ms, the last completed', async () => {
  const RECIPIENTS = 5000;
  const org = await orgWithContacts(RECIPIENTS);
  const id = await launched(org);
  const events = progress(connect({ Authorization: `Bearer ${org.token}` }), id);
  const first = await events.next();
  expect(first.value?.data?.campaignProgress).toMatchObject({ status: 'active', analytics: { sent: 0 } });
  // Five chunks of 1,000, one at a time, 400 ms each: settles about half a second apart.
  const worker = workers.start({ SANDBOX_LATENCY_MS: '400', WORKER_CONCURRENCY: '1' });
  const rest = await all(events);
  await workers.stop(worker);

  const sent = rest.map((e) => e.event.analytics.sent);
  expect(rest.at(-1)!.event).toMatchObject({ _id: id, status: 'completed', analytics: { sent: RECIPIENTS, failed: 0 } });
  expect(rest.slice(0, -1).every((e) => e.event.status === 'active')).toBe(true);
  expect(sent).toEqual([...sent].sort((a, b) => a - b));
  expect(sent.filter((n) => n > 0 && n < RECIPIENTS).length).toBeGreaterThanOrEqual(2);
  // Coalesced: the server reads and sends at most once per 250 ms (arrivals may bunch by a little).
  for (let i = 1; i < rest.length; i++) expect(rest[i]!.at - rest[i - 1]!.at).toBeGreaterThanOrEqual(200);
  const final = await api.get(`/campaigns/${id}`, { token: org.token });
  expect(rest.at(-1)!.event.updatedAt).toBe(final.body.updatedAt);
}, 120_000);

test('a Herald that stops closes its sockets at once (1001, going away) rather than waiting for their clients', async () => {
  const org = await orgWithContacts(50);
  const id = await launched(org);
  const stopping = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false' });
  const events = progress(connect({ Authorization: `Bearer ${org.token}` }, stopping), id);
  expect((await events.next()).value?.data?.campaignProgress).toMatchObject({ status: 'active' });
  const started = Date.now();
  await stopping.stop();
  expect(Date.now() - started).toBeLessThan(3000);
  await expect(events.next()).rejects.toMatchObject({ code: 1001 });
});
