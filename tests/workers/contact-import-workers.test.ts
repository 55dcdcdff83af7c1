import type { Herald } from '../../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';
import { workerProcesses } from '../helpers/workers.js';

/**
 * A contact import run by real worker processes (`npm run worker`): a worker killed with SIGKILL
 * halfway leaves only whole batches; another takes the import over after the lease and finishes it,
 * every row imported once. The size is enough for many batches on either side of the kill; what a
 * million rows cost in time and memory is bench/import's to measure.
 */
const ROWS = 200_000;
let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  db = await isolatedDatabase('imports');
  herald = await startTestHerald({ DATABASE_URL: db.url, WORKERS: 'false' });
  workers = workerProcesses(db.url, { CAMPAIGN_LEASE_SECONDS: '3' });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await workers?.stopAll();
  await herald?.stop();
  await db?.drop();
});

const counts = async (org: Org, importId: string) => {
  const [row] = (
    await herald.db.raw(
      `SELECT (SELECT count(*)::int FROM contacts WHERE organization_id = :org) AS contacts,
              (SELECT count(DISTINCT lower(email))::int FROM contacts WHERE organization_id = :org) AS addresses,
              i.created, i.status, i.merged_through
       FROM contact_imports i WHERE i.organization_id = :org AND i.id = :id`,
      { org: org.orgId, id: importId },
    )
  ).rows;
  return row as { contacts: number; addresses: number; created: number; status: string; merged_through: string | null };
};

test('200,000 rows: kill -9 mid-merge leaves whole batches, a new worker finishes, each row once', async () => {
  const org = await signupOrg(api);
  const lines = ['name,email,attributes.n'];
  for (let i = 0; i < ROWS; i++) lines.push(`Person ${i},person.${i}@example.com,${i}`);
  const file = lines.join('\n');
  const upload = await api.raw('POST', '/contacts/import', file, { token: org.token }, { 'content-type': 'text/csv' });
  expect(upload.status).toBe(202);
  const id = upload.body._id as string;

  const victim = workers.start();
  // Killed once some batches are merged and others are not.
  const mid = await waitFor(() => counts(org, id), (c) => c.created >= 50_000, 120_000);
  expect(mid.status).toBe('running');
  await workers.stop(victim, 'SIGKILL');
  const atKill = await counts(org, id);
  // Whole batches only: every contact written is counted by a merged batch, and no more.
  expect(atKill.contacts).toBe(atKill.created);
  expect(atKill.created).toBeLessThan(ROWS);

  const successor = workers.start();
  const done = await waitFor(() => api.get(`/contact-imports/${id}`, { token: org.token }), (r) => r.body.status === 'completed', 300_000);
  expect(done.body).toMatchObject({ status: 'completed', rowsTotal: ROWS, created: ROWS, updated: 0, failed: 0 });
  const end = await counts(org, id);
  expect(end).toMatchObject({ contacts: ROWS, addresses: ROWS });
  await workers.stop(successor);
}, 300_000);

test('a worker told to stop (SIGTERM) mid-import gives it up: another worker resumes it at once, not after the lease, each row once', async () => {
  const rows = 100_000;
  const org = await signupOrg(api);
  const lines = ['name,email'];
  for (let i = 0; i < rows; i++) lines.push(`Stopped ${i},stopped.${i}@example.com`);
  const upload = await api.raw('POST', '/contacts/import', lines.join('\n'), { token: org.token }, { 'content-type': 'text/csv' });
  expect(upload.status).toBe(202);
  const id = upload.body._id as string;

  // A lease far longer than the test: only a lease given up lets the successor claim the import.
  const lease = { CAMPAIGN_LEASE_SECONDS: '600' };
  const stopping = workers.start(lease);
  await waitFor(() => counts(org, id), (c) => c.created >= 20_000, 120_000);
  await workers.stop(stopping, 'SIGTERM');
  const atStop = await counts(org, id);
  expect(atStop.status).toBe('running');
  expect(atStop.contacts).toBe(atStop.created);
  expect(atStop.created).toBeLessThan(rows);
  const [given] = (await herald.db('contact_imports').where({ organization_id: org.orgId, id }).select('leased_until')) as { leased_until: Date }[];
  expect(given!.leased_until.getTime()).toBeLessThanOrEqual(Date.now());

  const successor = workers.start(lease);
  const done = await waitFor(() => api.get(`/contact-imports/${id}`, { token: org.token }), (r) => r.body.status === 'completed', 120_000);
  expect(done.body).toMatchObject({ status: 'completed', rowsTotal: rows, created: rows, failed: 0 });
  expect(await counts(org, id)).toMatchObject({ contacts: rows, addresses: rows });
  await workers.stop(successor);
}, 300_000);
