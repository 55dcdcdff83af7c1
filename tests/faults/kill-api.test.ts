import { expandRecipients } from '../../src/delivery/log-recipients.js';
import knex, { type Knex } from 'knex';
import type { Herald } from '../../src/server.js';
import { client, isolatedDatabase, signupOrg, startTestHerald } from '../helpers/herald.js';
import { request, startHeraldProcess, type HeraldProcess, type Outcome } from './process.js';

// kill -9 of an API process while 30 clients have sends in flight. Afterwards, on a surviving
// process: every acknowledged send is logged as delivered and paid for, the sends the dead
// process left half-done are settled (their unsent recipients failed and refunded), and the
// organization's credits equal what it had minus what its logs say it was charged.
const CLIENTS = 30;
const CREDITS = 100_000;
let database: { url: string; drop(): Promise<void> };
let db: Knex;
let doomed: HeraldProcess | undefined;
let survivor: Herald | undefined;

beforeAll(async () => {
  database = await isolatedDatabase('killapi');
  db = knex({ client: 'pg', connection: database.url, pool: { min: 0, max: 2 } });
}, 60_000);

afterAll(async () => {
  if (doomed && doomed.child.exitCode === null && doomed.child.signalCode === null) doomed.child.kill('SIGKILL');
  await survivor?.stop();
  await db?.destroy();
  await database?.drop();
});

test('kill -9 of an API process loses no acknowledged send; logs and credits agree afterwards', async () => {
  doomed = await startHeraldProcess({ DATABASE_URL: database.url, SANDBOX_LATENCY_MS: '400', WORKERS: 'false' });
  const api = client(doomed.url);
  const org = await signupOrg(api);
  await db('organization_credits').where({ organization_id: org.orgId }).update({ credits: CREDITS });

  const acknowledged: Outcome[] = [];
  const other: Outcome[] = [];
  let n = 0;
  let inFlight = 0;
  let issuing = true;
  const loop = async () => {
    while (issuing) {
      const i = n++;
      // Every third send goes to five recipients at once.
      const to = i % 3 === 0 ? Array.from({ length: 5 }, (_, k) => `+2547${String(4000000 + i * 5 + k)}1`) : `+2547${String(4000000 + i * 5)}1`;
      inFlight++;
      const outcome = await request(doomed!.url, 'POST', '/notifications/send', { type: 'sms', to, message: `Send ${i}` }, { authorization: `Bearer ${org.token}` });
      inFlight--;
      (outcome.status === 200 ? acknowledged : other).push(outcome);
    }
  };
  const clients = Array.from({ length: CLIENTS }, loop);
  // Kill once a good number of sends have been acknowledged, with the rest in flight.
  const started = Date.now();
  while (acknowledged.length < 2 * CLIENTS && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 20));
  const inFlightAtKill = inFlight;
  doomed.child.kill('SIGKILL');
  await doomed.exited;
  issuing = false;
  await Promise.all(clients);

  // The dead process left sends reserved but unsettled.
  const leftOpen = Number((await db('message_logs').where({ organization_id: org.orgId }).whereNull('settled_at').count({ n: '*' }).first())?.n);

  // A surviving process whose sweeper settles sends abandoned for more than a second.
  survivor = await startTestHerald({ DATABASE_URL: database.url, SEND_ABANDON_SECONDS: '1', CAMPAIGN_LEASE_SECONDS: '2', WORKERS: 'true' });
  const end = Date.now() + 30_000;
  let open = leftOpen;
  while (open > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    open = Number((await db('message_logs').where({ organization_id: org.orgId }).whereNull('settled_at').count({ n: '*' }).first())?.n);
  }
  console.log(
    `kill -9: ${acknowledged.length} sends acknowledged, ${inFlightAtKill} in flight at the kill, ${leftOpen} logs left unsettled by the dead process, ${open} after the sweep; cut at the connection: ${JSON.stringify(other.reduce<Record<string, number>>((m, o) => ({ ...m, [String(o.error ?? o.status)]: (m[String(o.error ?? o.status)] ?? 0) + 1 }), {}))}`,
  );
  expect(acknowledged.length).toBeGreaterThanOrEqual(2 * CLIENTS);
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(open).toBe(0);
  // Requests cut by the kill failed at the connection, never with a Herald error answer.
  expect(other.filter((o) => o.status !== undefined)).toEqual([]);

  // Each acknowledged send is in the logs with every recipient delivered.
  const logs = await db('message_logs').where({ organization_id: org.orgId }).select('id', 'recipients', 'cost', 'reserved', 'success_count', 'failed_count', 'pending_count', 'settled_at');
  // As the API shows them: a bare address is pending in an unsettled log, a success in a settled one.
  const shown = (l: (typeof logs)[number]) => expandRecipients(l.recipients, l.settled_at !== null);
  const delivered = new Set(logs.flatMap((l) => shown(l).filter((r) => r.status === 'success').map((r) => r.recipient)));
  const items = (o: Outcome): { recipient: string; status: string }[] => (Array.isArray(o.body) ? o.body : [o.body]);
  const acknowledgedRecipients = acknowledged.flatMap(items);
  expect(acknowledgedRecipients.filter((r) => r.status !== 'success')).toEqual([]);
  const missing = acknowledgedRecipients.map((r) => r.recipient).filter((r) => !delivered.has(r));
  expect(missing).toEqual([]);
  expect(logs.filter((l) => l.pending_count !== 0)).toEqual([]);
  expect(logs.filter((l) => !l.settled_at || shown(l).some((r) => r.status === 'pending'))).toEqual([]);
  const successes = logs.reduce((s, l) => s + l.success_count, 0);
  expect(successes).toBeGreaterThanOrEqual(acknowledgedRecipients.length);

  // Credits: what the organization has is what it had minus what its logs charged, to the cent.
  const charged = logs.reduce((s, l) => s + Number(l.cost), 0);
  expect(logs.filter((l) => Number(l.reserved) !== Number(l.cost))).toEqual([]);
  const credits = Number((await db('organization_credits').where({ organization_id: org.orgId }).first('credits')).credits);
  expect(Math.round((CREDITS - credits) * 100)).toBe(Math.round(charged * 100));
}, 120_000);
