// The scheduler at many tenants: the delivery engine's send queue (`send_queue`, `send_turns`, on the
// coordinator) with BENCH_TENANTS organizations (default 10,000) each holding queued work, as a
// launch leaves it: an active sandbox sms campaign with one pending batch of 10 recipients, its
// credits reserved, its queue row and its organization's turn row (written with SQL).
//   1. The claim's cost, before any worker runs: `takeTurn` (src/delivery/sql/engine.ts) run as Herald
//      runs it (a prepared statement, autocommitted), BENCH_CLAIMS times (default 2,000) on one
//      connection (claims/s, median and p99 ms per statement), then as many on 4 connections at once
//      (claims/s), and one EXPLAIN (ANALYZE, BUFFERS), printed. Against a bare claim on the same data:
//      the row served longest ago, locked (SKIP LOCKED) and stamped in one statement, as the table is
//      (no index serves its order), and with an index on `served_at` (made for it, dropped after).
//   2. Organization B's 300-recipient sms campaign (create + launch via REST, until GET /campaigns/:id
//      says completed, polled every 20 ms), in sandbox delivery: alone (the tenants' rows are queued
//      with `ready_at` a year ahead, so no worker serves them), BENCH_ROUNDS times after a warm-up;
//      then once, launched 1 s after every tenant's row is made ready (and the dispatchers notified):
//      B under load. Also how long the tenants' work took to drain (every campaign completed; every
//      queue row gone), and that every one of their campaigns completed with 10 sent.
// Prints `ratio: <(1.5 x B alone + 1 s) / B under load>`: the goal is >= 1.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { takeTurn } from '../src/delivery/sql/engine.js';
import { migrateDatabase } from '../tests/setup/databases.js';
import { freshDatabase, median, signup, startProcess, summary, type Database, type Proc } from './lib/harness.js';

const TENANTS = Number(process.env.BENCH_TENANTS ?? 10_000);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 2_000);
const CONNECTIONS = 4;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const B_CONTACTS = 300;
const PER_TENANT = 10;
const UNDER_LOAD_AFTER_MS = 1_000;
const POLL_MS = 20;
const DRAIN_POLL_MS = 200;
const TEXT = 'Scheduler benchmark: your order has shipped.';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

// Everything started is stopped on the way out: at the end, on a failure, and on SIGINT / SIGTERM.
let herald: Proc | undefined;
let db: Database | undefined;
const clients: pg.Client[] = [];
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  (cleaning ??= (async () => {
    for (const c of clients) await c.end().catch(() => {});
    await herald?.stop();
    await db?.stop().catch((err) => console.error(`dropping the bench database: ${err}`));
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}
process.once('exit', () => {
  if (herald && herald.child.exitCode === null) herald.child.kill('SIGTERM');
});

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

/** A claim statement as Herald runs it: prepared (named) on each connection, one autocommitted execution at a time. */
interface Claim {
  name: string;
  text: string;
}
const HERALD: Claim = { name: takeTurn.name, text: takeTurn.text };
const BARE_TEXT = `WITH pick AS (
     SELECT q.campaign_id, q.channel FROM send_queue q
     WHERE q.ready_at <= now()
     ORDER BY q.served_at
     LIMIT 1
     FOR UPDATE SKIP LOCKED)
   UPDATE send_queue q SET served_at = clock_timestamp()
   FROM pick WHERE q.campaign_id = pick.campaign_id AND q.channel = pick.channel
   RETURNING q.organization_id, q.campaign_id, q.channel, q.lane, clock_timestamp() AS taken_at`;
const BARE: Claim = { name: 'bench_bare_claim', text: BARE_TEXT };

/** `n` claims on one connection: each statement's ms. Every one must claim a row. */
async function claimLoop(c: pg.Client, claim: Claim, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await c.query({ name: claim.name, text: claim.text });
    ms.push(performance.now() - t0);
    if (res.rowCount !== 1) throw new Error(`${claim.name}: claimed ${res.rowCount} rows on execution ${i + 1}`);
  }
  return ms;
}

try {
  console.log(`scheduler: ${TENANTS} organizations with queued work; load average at start ${loadavg()}`);
  db = await freshDatabase('scheduler');
  await migrateDatabase(db.url);
  const sql = await connect(db.url);

  // ---- The tenants, as their launches leave them (the rows not ready yet for part 2 come later).
  const seedStart = performance.now();
  await sql.query('BEGIN');
  await sql.query(
    `CREATE TEMP TABLE seed ON COMMIT DROP AS
     SELECT i, gen_random_uuid() AS org, gen_random_uuid() AS campaign FROM generate_series(1, $1::int) AS i`,
    [TENANTS],
  );
  await sql.query(`INSERT INTO organizations (id, name, sector, country) SELECT org, 'Tenant ' || i, 'Tech', 'KE' FROM seed`);
  // The signup's 100 credits, less the 10 the launch reserved (1 credit per one-segment sms).
  await sql.query(`INSERT INTO organization_credits (organization_id, credits) SELECT org, 100 - $1::int FROM seed`, [PER_TENANT]);
  await sql.query(
    `INSERT INTO campaigns (organization_id, id, name, type, channels, status, recipient_type, messages, total_recipients, started_at)
     SELECT org, campaign, 'Campaign of tenant ' || i, 'broadcast', '{sms}', 'active', 'selected', $1::json, $2::int, now() FROM seed`,
    [JSON.stringify({ sms: { content: 'Hi' } }), PER_TENANT],
  );
  // Numbers +2547<i, 6 digits><11..20>: none ends in 0000 or 0001 (the sandbox's reserved failures and undelivered).
  await sql.query(
    `INSERT INTO campaign_batches (organization_id, campaign_id, channel, batch_no, addresses, recipient_count, reserved)
     SELECT org, campaign, 'sms', 0, a.addresses, cardinality(a.addresses), cardinality(a.addresses) * 1.00
     FROM seed, LATERAL (SELECT array_agg('+2547' || lpad(seed.i::text, 6, '0') || (10 + j)::text ORDER BY j) AS addresses
                         FROM generate_series(1, $1::int) AS j) a`,
    [PER_TENANT],
  );
  await sql.query(`INSERT INTO send_turns (organization_id) SELECT org FROM seed`);
  await sql.query(`INSERT INTO send_queue (organization_id, campaign_id, channel, lane) SELECT org, campaign, 'sms', 1 FROM seed`);
  await sql.query('COMMIT');
  // As autovacuum leaves tables a minute after such inserts.
  await sql.query('VACUUM ANALYZE organizations, organization_credits, campaigns, campaign_batches, send_turns, send_queue');
  console.log(`  seeded ${TENANTS} organizations (campaign, batch of ${PER_TENANT}, credits held, queue and turn rows) in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  // ---- 1. The claim's cost.
  const conns = [sql, ...(await Promise.all(Array.from({ length: CONNECTIONS - 1 }, () => connect(db!.url))))];
  /** Before each series: the table as autovacuum would keep it, so no contender pays for another's dead rows. */
  const fresh = () => sql.query('VACUUM ANALYZE send_queue, send_turns');
  type Series = { name: string; perSec1: number; med: number; p99: number; perSec4: number; load: string };
  const series: Series[] = [];
  async function measure(name: string, claim: Claim): Promise<void> {
    await fresh();
    await claimLoop(sql, claim, 50); // Warm-up: the prepared statement, the caches.
    await fresh();
    const load = loadavg();
    const t0 = performance.now();
    const ms = await claimLoop(sql, claim, CLAIMS);
    const perSec1 = (CLAIMS / (performance.now() - t0)) * 1000;
    await fresh();
    await Promise.all(conns.map((c) => claimLoop(c, claim, 20)));
    const t1 = performance.now();
    await Promise.all(conns.map((c) => claimLoop(c, claim, Math.ceil(CLAIMS / CONNECTIONS))));
    const perSec4 = ((Math.ceil(CLAIMS / CONNECTIONS) * CONNECTIONS) / (performance.now() - t1)) * 1000;
    const s = { name, perSec1, med: median(ms), p99: quantile(ms, 0.99), perSec4, load };
    series.push(s);
    console.log(
      `  ${name.padEnd(34)} 1 connection: ${perSec1.toFixed(0).padStart(6)} claims/s, median ${s.med.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms; ` +
        `${CONNECTIONS} connections: ${perSec4.toFixed(0).padStart(6)} claims/s  (load ${load})`,
    );
  }
  async function explain(title: string, text: string) {
    await fresh();
    const plan = await sql.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`);
    console.log(`  EXPLAIN (ANALYZE, BUFFERS) ${title}:`);
    for (const row of plan.rows as { 'QUERY PLAN': string }[]) console.log(`    ${row['QUERY PLAN']}`);
  }

  console.log(`claim cost: ${TENANTS} ready rows in send_queue, ${CLAIMS} claims per series (prepared, autocommitted)`);
  await measure('takeTurn (Herald)', HERALD);
  await measure('bare: ORDER BY served_at, no index', BARE);
  await sql.query('CREATE INDEX bench_send_queue_served ON send_queue (served_at)');
  await measure('bare: ORDER BY served_at, indexed', { ...BARE, name: 'bench_bare_claim_indexed' });
  await explain('bare claim, indexed', BARE_TEXT);
  await sql.query('DROP INDEX bench_send_queue_served');
  await explain('bare claim, no index', BARE_TEXT);
  await explain('takeTurn', takeTurn.text);
  const herald1 = series[0]!;
  const bareIdx = series[2]!;
  console.log(
    `  takeTurn against the indexed bare claim: ${(herald1.med / bareIdx.med).toFixed(1)}x its median time per statement; ` +
      `${(herald1.perSec1 / bareIdx.perSec1).toFixed(2)}x its claims/s on 1 connection, ${(herald1.perSec4 / bareIdx.perSec4).toFixed(2)}x on ${CONNECTIONS}`,
  );

  // ---- Back to the state a launch leaves, with the rows not ready yet: part 2's "B alone" first.
  for (const c of conns.slice(1)) await c.end();
  clients.splice(1);
  await sql.query(`UPDATE send_turns SET turn_at = '-infinity'`);
  await sql.query(`UPDATE send_queue SET served_at = '-infinity', ready_at = now() + interval '1 year'`);
  // Batches made "now": the sweeper queues again (ready) pending batches older than a lease (60 s).
  await sql.query(`UPDATE campaign_batches SET created_at = now()`);
  await sql.query('VACUUM ANALYZE send_queue, send_turns, campaign_batches');

  // ---- 2. B's small campaign, alone and under the tenants' work.
  const env = {
    DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox',
    JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
  herald = await startProcess('src/main.ts', env, 4771, '/ready');
  const h = herald.url;
  const { token, orgId: bOrg } = await signup(h);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  await sql.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [bOrg]);
  await sql.query(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT $1, 'Contact ' || i, '+25472' || lpad((1000 + i)::text, 7, '0') FROM generate_series(1, $2::int) AS i`,
    [bOrg, B_CONTACTS],
  );
  await sql.query('VACUUM ANALYZE contacts');

  async function create(name: string): Promise<string> {
    const res = await fetch(`${h}/campaigns`, {
      method: 'POST', headers: auth,
      body: JSON.stringify({ name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: TEXT } } }),
    });
    if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { _id: string })._id;
  }
  /** Launches B's campaign `id`; its ms from the launch request until GET /campaigns/:id says completed. */
  async function launch(id: string, launched?: () => void): Promise<{ ms: number; completedAt: number }> {
    const t0 = performance.now();
    const res = await fetch(`${h}/campaigns/${id}/launch`, { method: 'POST', headers: auth });
    const body = (await res.json()) as { status?: string };
    if (!res.ok || (body.status !== 'active' && body.status !== 'completed')) throw new Error(`launch ${id}: ${res.status} ${JSON.stringify(body)}`);
    launched?.();
    for (let status = body.status; status !== 'completed'; ) {
      if (performance.now() - t0 > 15 * 60_000) throw new Error(`B ${id}: not completed after 15 minutes (${status})`);
      await sleep(POLL_MS);
      const r = await fetch(`${h}/campaigns/${id}`, { headers: auth });
      const c = (await r.json()) as { status: string; sent?: number };
      if (!r.ok || c.status === 'canceled' || c.status === 'failed') throw new Error(`B ${id}: ${r.status} ${JSON.stringify(c)}`);
      status = c.status;
    }
    const completedAt = performance.now();
    const [row] = (await sql.query('SELECT sent FROM campaigns WHERE organization_id = $1 AND id = $2', [bOrg, id])).rows as { sent: number }[];
    if (row?.sent !== B_CONTACTS) throw new Error(`B ${id}: completed with ${row?.sent} sent, not ${B_CONTACTS}`);
    return { ms: completedAt - t0, completedAt };
  }
  const readyTenantRows = async () =>
    Number((await sql.query(`SELECT count(*) FROM send_queue WHERE organization_id <> $1 AND ready_at <= now()`, [bOrg])).rows[0].count);

  const warm = await launch(await create('Warm-up'));
  const bAlone: number[] = [];
  const aloneLoads: string[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    aloneLoads.push(loadavg());
    bAlone.push((await launch(await create(`B alone ${r}`))).ms);
  }
  const readyMeanwhile = await readyTenantRows();
  if (readyMeanwhile) throw new Error(`${readyMeanwhile} tenant rows became ready while B ran alone (the sweeper?): B alone was not alone`);
  console.log(`B alone (tenants' ${TENANTS} rows queued, not ready): warm-up ${warm.ms.toFixed(0)} ms; ${bAlone.map((m) => m.toFixed(0)).join(', ')} ms (load ${aloneLoads.join(' | ')})`);

  // The tenants' work made ready, as their launches would (and the dispatchers woken); B launched 1 s later.
  const bId = await create('B under load');
  const openCampaigns = async () =>
    Number((await sql.query(`SELECT count(*) FROM campaigns WHERE organization_id <> $1 AND status <> 'completed'`, [bOrg])).rows[0].count);
  const queuedRows = async () => Number((await sql.query(`SELECT count(*) FROM send_queue WHERE organization_id <> $1`, [bOrg])).rows[0].count);
  const loadAtReady = loadavg();
  await sql.query('BEGIN');
  // The tenants' work arrives now: their turn rows as an enqueue leaves an organization that had
  // nothing queued (its arrival time mirrored before 1970, src/delivery/sql/engine.ts enqueueSends).
  await sql.query(`UPDATE send_turns SET turn_at = timestamptz 'epoch' - (now() - timestamptz 'epoch') WHERE organization_id <> $1`, [bOrg]);
  const made = await sql.query(`UPDATE send_queue SET ready_at = now() WHERE organization_id <> $1`, [bOrg]);
  await sql.query(`SELECT pg_notify('herald_send', '')`);
  await sql.query('COMMIT');
  const readyAt = performance.now();
  if (made.rowCount !== TENANTS) throw new Error(`made ${made.rowCount} rows ready, not ${TENANTS}`);

  // The drain, watched beside B (its own connection, so B's checks never wait for it).
  const watch = await connect(db.url);
  let campaignsDoneAt = 0;
  let queueEmptyAt = 0;
  let stopWatching = false;
  const loads: string[] = [];
  const watcher = (async () => {
    let lastLoad = 0;
    while (!stopWatching && !(campaignsDoneAt && queueEmptyAt)) {
      if (performance.now() - readyAt > 30 * 60_000) throw new Error('the tenants\' work did not drain in 30 minutes');
      const { rows } = await watch.query(
        `SELECT (SELECT count(*) FROM campaigns WHERE organization_id <> $1 AND status <> 'completed')::int AS open,
                (SELECT count(*) FROM send_queue WHERE organization_id <> $1)::int AS queued`,
        [bOrg],
      );
      const now = performance.now();
      if (!campaignsDoneAt && rows[0].open === 0) campaignsDoneAt = now;
      if (!queueEmptyAt && rows[0].queued === 0) queueEmptyAt = now;
      if (now - lastLoad > 5_000) {
        loads.push(loadavg().split(' ')[0]!);
        lastLoad = now;
      }
      await sleep(DRAIN_POLL_MS);
    }
  })();
  watcher.catch(() => {}); // Awaited below.

  await sleep(Math.max(0, readyAt + UNDER_LOAD_AFTER_MS - performance.now()));
  const openAtLaunch = await openCampaigns();
  const loadAtLaunch = loadavg();
  // Where B's queue row stands once launched: the ready rows takeTurn orders before it.
  let position: Promise<{ ahead: number; ready: number; turn_age_s: number } | undefined> = Promise.resolve(undefined);
  const under = await launch(bId, () => {
    position = watch
      .query(
        `SELECT count(*) FILTER (WHERE (q.lane, t.turn_at, q.served_at) < (b.lane, bt.turn_at, b.served_at))::int AS ahead, count(*)::int AS ready,
                CASE WHEN bt.turn_at = '-infinity' THEN -1 ELSE extract(epoch FROM now() - bt.turn_at)::float8 END AS turn_age_s
         FROM send_queue b JOIN send_turns bt ON bt.organization_id = b.organization_id,
              send_queue q JOIN send_turns t ON t.organization_id = q.organization_id
         WHERE b.campaign_id = $1 AND q.ready_at <= now() AND q.organization_id <> $2
         GROUP BY bt.turn_at`,
        [bId, bOrg],
      )
      .then((r) => r.rows[0]);
    position.catch(() => {});
  });
  const pos = await position;
  const openAtDone = await openCampaigns();
  const queuedAtDone = await queuedRows();
  console.log(
    `B under load: ${under.ms.toFixed(0)} ms, launched ${((under.completedAt - under.ms - readyAt) / 1000).toFixed(1)} s after the tenants' rows were made ready; ` +
      `tenants' campaigns open at its launch ${openAtLaunch}, at its completion ${openAtDone} (queue rows left ${queuedAtDone}) (load ${loadAtLaunch})`,
  );
  console.log(
    pos
      ? `  at B's launch: its organization last served ${pos.turn_age_s.toFixed(1)} s before; ${pos.ahead} of the ${pos.ready} ready tenant rows ordered before B's by takeTurn`
      : `  at B's launch: B's queue row was already taken`,
  );
  if (!openAtDone) console.log(`  (every tenant's campaign had completed before B did: B ran under load, but behind the tenants' first turns)`);
  await watcher;

  // Every tenant's campaign completed, 10 sent, its batch settled, and its credits spent as held.
  const { rows: [check] } = await sql.query(
    `SELECT count(*) FILTER (WHERE c.status = 'completed' AND c.sent = $2 AND c.failed = 0)::int AS completed,
            count(*)::int AS campaigns,
            (SELECT count(*) FROM campaign_batches b WHERE b.organization_id <> $1 AND b.status = 'settled' AND b.sent = $2)::int AS settled,
            (SELECT count(*) FROM organization_credits k WHERE k.organization_id <> $1 AND k.credits = 100 - $2)::int AS credits_ok
     FROM campaigns c WHERE c.organization_id <> $1`,
    [bOrg, PER_TENANT],
  );
  const drainS = (campaignsDoneAt - readyAt) / 1000;
  const queueS = (queueEmptyAt - readyAt) / 1000;
  console.log(
    `tenants' work drained: every campaign completed ${drainS.toFixed(1)} s after their rows were made ready (${((TENANTS * PER_TENANT) / drainS).toFixed(0)} msg/s, ` +
      `${(TENANTS / drainS).toFixed(0)} campaigns/s); queue empty after ${queueS.toFixed(1)} s; load ${loadAtReady.split(' ')[0]} at start, every 5 s: ${loads.join(' ')}`,
  );
  console.log(
    `  check: ${check.completed} of ${check.campaigns} tenants' campaigns completed with ${PER_TENANT} sent; ${check.settled} batches settled with ${PER_TENANT} sent; ` +
      `${check.credits_ok} balances at ${100 - PER_TENANT} (spent what was held)`,
  );
  if (check.completed !== TENANTS || check.campaigns !== TENANTS || check.settled !== TENANTS || check.credits_ok !== TENANTS) {
    throw new Error('not every tenant\'s campaign completed as launched');
  }

  const bA = median(bAlone);
  const goalMs = 1.5 * bA + 1000;
  console.log(`B alone: median ${bA.toFixed(0)} ms; B under load: ${under.ms.toFixed(0)} ms, ${(under.ms / bA).toFixed(1)}x B alone (goal <= 1.5x + 1 s = ${goalMs.toFixed(0)} ms)`);
  summary({ goal: '>= 1', spread: ['b-alone', bAlone, 'b-under-load', [under.ms], 'ms'] });
  console.log(`ratio: ${(goalMs / under.ms).toFixed(3)}`);
} finally {
  await cleanup();
}
