import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Herald } from '../../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';
import { workerProcesses } from '../helpers/workers.js';

// `GET /metrics` (platform.md): protected on the API port, open on METRICS_PORT, in the API process
// and in a worker process of its own, with labels that never carry an id.

const TOKEN = 'metrics-token-0123456789abcdef';
const UUID_IN_LABEL = /="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}[^"]*"/i;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}

/** The sum of the samples of `name` that carry `labels`; null when there is none. */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | null {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.length ? found.reduce((sum, s) => sum + s.value, 0) : null;
}

async function scrape(url: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) {
  const res = await fetch(`${url}/metrics`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, samples: res.status === 200 ? parse(text) : [] };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('without METRICS_TOKEN', () => {
  let herald: Herald;
  beforeAll(async () => (herald = await startTestHerald()));
  afterAll(() => herald?.stop());

  test('/metrics is not served on the API port', async () => {
    const res = await scrape(herald.url);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toMatchObject({ statusCode: 404, error: 'Not Found' });
    expect(herald.metricsUrl).toBeUndefined();
  });
});

describe('with METRICS_TOKEN and METRICS_PORT', () => {
  let db: { url: string; drop(): Promise<void> };
  let herald: Herald;
  let api: Client;
  let org: Org;
  let workers: ReturnType<typeof workerProcesses>;

  // A database of its own: the campaign's jobs are this file's worker process's alone.
  beforeAll(async () => {
    db = await isolatedDatabase('metrics');
    herald = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false', CAMPAIGN_INLINE_LIMIT: '0', METRICS_TOKEN: TOKEN, METRICS_PORT: '0' });
    api = client(herald.url);
    org = await signupOrg(api);
    workers = workerProcesses(db.url);
  }, 60_000);

  afterAll(async () => {
    await workers?.stopAll();
    await herald?.stop();
    await db?.drop();
  });

  test('the API port asks for the token: 401 without it or with another, the metrics with it', async () => {
    const none = await scrape(herald.url, {});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="herald"');
    expect(JSON.parse(none.text)).toMatchObject({ statusCode: 401, error: 'Unauthorized' });

    const wrong = await scrape(herald.url, { authorization: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="herald", error="invalid_token"');
    expect((await scrape(herald.url, { authorization: `Basic ${TOKEN}` })).status).toBe(401);

    const right = await scrape(herald.url);
    expect(right.status).toBe(200);
    expect(right.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(right.text).toContain('# TYPE herald_http_request_duration_seconds histogram');
    expect(right.text).toContain('# TYPE herald_messages_total counter');
    expect(value(right.samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value(right.samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);

    const post = await fetch(`${herald.url}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(post.status).toBe(405);
  });

  test('an SMS send counts its recipients by outcome and times the provider call', async () => {
    const labels = { channel: 'sms', kind: 'adhoc' };
    const before = (await scrape(herald.url)).samples;
    const ok = await api.post('/notifications/send', { type: 'sms', to: '0712345678', message: 'Hello' }, { token: org.token });
    expect(ok.status).toBe(200);
    // Numbers ending in 0000 fail in the sandbox.
    const failed = await api.post('/notifications/send', { type: 'sms', to: ['0712340000', '0712345679'], message: 'Hi' }, { token: org.token });
    expect(failed.status).toBe(200);
    const after = (await scrape(herald.url)).samples;

    const delta = (name: string, l: Record<string, string>) => (value(after, name, l) ?? 0) - (value(before, name, l) ?? 0);
    expect(delta('herald_messages_total', { ...labels, outcome: 'success' })).toBe(2);
    expect(delta('herald_messages_total', { ...labels, outcome: 'failed' })).toBe(1);
    expect(delta('herald_provider_request_duration_seconds_count', { channel: 'sms', provider: 'sandbox' })).toBe(2);
    expect(delta('herald_provider_errors_total', { channel: 'sms', provider: 'sandbox', reason: 'final' })).toBe(1);
  });

  test('HTTP requests are recorded by route template and status class, never by a path with an id', async () => {
    const id = randomUUID();
    expect((await api.get(`/contacts/${id}`, { token: org.token })).status).toBe(404);
    expect((await api.put(`/campaigns/${id}`, { name: 'x' }, { token: org.token })).status).toBe(404);
    expect((await api.get(`/no-such-path/${id}`, { token: org.token })).status).toBe(404);
    expect((await api.raw('PATCH', `/contacts/${id}`, {}, { token: org.token })).status).toBe(405);
    const { samples, text } = await scrape(herald.url);
    const count = 'herald_http_request_duration_seconds_count';
    expect(value(samples, count, { method: 'POST', route: '/notifications/send', status: '2xx' })).toBeGreaterThanOrEqual(2);
    expect(value(samples, count, { method: 'GET', route: '/contacts/:id', status: '4xx' })).toBe(1);
    expect(value(samples, count, { method: 'PUT', route: '/campaigns/:id', status: '4xx' })).toBe(1);
    expect(value(samples, count, { method: 'PATCH', route: '/contacts/:id', status: '4xx' })).toBe(1);
    expect(value(samples, count, { method: 'GET', route: 'unmatched', status: '4xx' })).toBeGreaterThanOrEqual(1);
    expect(value(samples, count, { method: 'POST', route: '/auth/signup', status: '2xx' })).toBe(1);
    // The token-refused scrapes of the first test are recorded too.
    expect(value(samples, count, { method: 'GET', route: '/metrics', status: '4xx' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toMatch(UUID_IN_LABEL);
    expect(text).not.toContain(id);
  });

  test('GraphQL operations are recorded by type and root field, never by the client-chosen name', async () => {
    const name = `Op${randomUUID().replace(/-/g, '')}`;
    expect((await api.gql(`query ${name} { me { email } }`, undefined, { token: org.token })).body.errors).toBeUndefined();
    await api.gql(`query { contact(id: "${randomUUID()}") { name } }`, undefined, { token: org.token });
    await api.gql('mutation { createGroup(input: { name: "G", color: "bg-red-500" }) { _id } }', undefined, { token: org.token });
    await api.gql('query { nope }', undefined, { token: org.token });
    const { samples, text } = await scrape(herald.url);
    const count = 'herald_graphql_operation_duration_seconds_count';
    expect(value(samples, count, { type: 'query', operation: 'me', outcome: 'success' })).toBe(1);
    expect(value(samples, count, { type: 'query', operation: 'contact', outcome: 'error' })).toBe(1);
    expect(value(samples, count, { type: 'mutation', operation: 'createGroup' })).toBe(1);
    expect(value(samples, count, { type: 'unknown', operation: 'invalid', outcome: 'error' })).toBe(1);
    expect(text).not.toContain(name);
    expect(text).not.toMatch(UUID_IN_LABEL);
  });

  test("the database pool's use is read at scrape time", async () => {
    const { samples } = await scrape(herald.url);
    for (const state of ['used', 'free', 'pending']) expect(value(samples, 'herald_db_pool_connections', { state })).not.toBeNull();
    expect(value(samples, 'herald_db_pool_connections', { state: 'used' }) ?? 0).toBeGreaterThanOrEqual(0);
    expect(value(samples, 'herald_db_pool_max_connections')).toBe(10);
  });

  test('METRICS_PORT serves the same metrics without a token, and nothing else', async () => {
    expect(herald.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(herald.metricsUrl).not.toBe(herald.url);
    const open = await scrape(herald.metricsUrl!, {});
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(value(open.samples, 'herald_http_request_duration_seconds_count', { route: '/notifications/send' })).toBeGreaterThanOrEqual(2);
    expect((await fetch(`${herald.metricsUrl}/contacts`)).status).toBe(404);
  });

  test('a campaign: queue depth in the API process, job durations, sends and webhooks in the worker process that ran it', async () => {
    const RECIPIENTS = 250;
    // Two receivers of the campaign's completion: one takes it, one fails (it is tried again later).
    const receiver = http.createServer((req, res) => {
      req.resume();
      res.writeHead(req.url === '/ok' ? 204 : 500).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    for (const url of [`${hooks}/ok`, `${hooks}/broken`]) {
      expect((await api.post('/webhooks', { url, eventTypes: ['campaign.completed'] }, { token: org.token })).status).toBe(201);
    }
    await herald.db.raw(
      `INSERT INTO contacts (organization_id, name, phone)
       SELECT ?, 'Contact ' || i, '+2547' || lpad((20000000 + i)::text, 8, '0') FROM generate_series(1, ?) AS i`,
      [org.orgId, RECIPIENTS],
    );
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 10_000 });
    const created = await api.post('/campaigns', { name: 'Metrics', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, { token: org.token });
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token });
    expect(launched.body.status).toBe('active');

    // No worker runs yet: the API process sees the campaign's channel waiting in the send queue.
    const queued = (await scrape(herald.url)).samples;
    expect(value(queued, 'herald_send_queued', { lane: 'bulk', state: 'ready' })).toBe(1);
    expect(value(queued, 'herald_send_queued', { lane: 'transactional', state: 'ready' })).toBe(0);
    expect(value(queued, 'herald_send_queued', { lane: 'bulk', state: 'waiting' })).toBe(0);
    for (const state of ['waiting', 'scheduled', 'locked', 'failed']) expect(value(queued, 'herald_queue_jobs', { task: 'campaign-start', state })).not.toBeNull();

    // A worker process with a metrics port of its own runs it.
    const port = await freePort();
    workers.start({ METRICS_PORT: String(port), HOST: '127.0.0.1' });
    const done = await waitFor(
      () => api.get(`/campaigns/${created.body._id}`, { token: org.token }),
      (r) => r.body.status === 'completed',
      90_000,
    );
    expect(done.body.analytics).toMatchObject({ sent: RECIPIENTS, failed: 0 });

    const worker = (await scrape(`http://127.0.0.1:${port}`, {})).samples;
    expect(value(worker, 'herald_messages_total', { channel: 'sms', outcome: 'success', kind: 'campaign' })).toBe(RECIPIENTS);
    // Nothing is in flight once it completed; nothing waited for a rate (none is set).
    expect(value(worker, 'herald_send_in_flight', { channel: 'sms', lane: 'bulk' })).toBe(0);
    expect(value(worker, 'herald_send_rate_waits_total', { channel: 'sms', lane: 'bulk' })).toBeNull();
    expect(value(worker, 'herald_provider_request_duration_seconds_count', { channel: 'sms', provider: 'sandbox' })).toBeGreaterThanOrEqual(1);
    // No HTTP door in a worker: no request was recorded there.
    expect(value(worker, 'herald_http_request_duration_seconds_count')).toBeNull();
    // The API process sent none of them.
    expect(value((await scrape(herald.url)).samples, 'herald_messages_total', { kind: 'campaign' })).toBeNull();

    const delivered = await waitFor(
      async () => (await scrape(`http://127.0.0.1:${port}`, {})).samples,
      // The completion is posted by the runs the last settle handed it to, without a job; the
      // failing endpoint's retry (5 s later) is a job, which posts it again (and fails again).
      (s) => (value(s, 'herald_job_duration_seconds_count', { task: 'webhooks-deliver', outcome: 'success' }) ?? 0) >= 1,
    );
    expect(value(delivered, 'herald_webhook_deliveries_total', { outcome: 'success' })).toBe(1);
    expect(value(delivered, 'herald_webhook_deliveries_total', { outcome: 'retry' })).toBeGreaterThanOrEqual(1);
    expect(value(delivered, 'herald_job_duration_seconds_count', { task: 'webhooks-deliver', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    receiver.close();

    // Once sent, nothing of the campaign is left queued.
    const drained = await waitFor(
      async () => (await scrape(herald.url)).samples,
      (s) => value(s, 'herald_send_queued', { lane: 'bulk', state: 'ready' }) === 0,
    );
    expect(value(drained, 'herald_send_queued', { lane: 'bulk', state: 'ready' })).toBe(0);
  }, 120_000);
});
