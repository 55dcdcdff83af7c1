// Fairness between organizations sharing one Herald in live delivery mode, into the SMS gateway fake
// (tests/fakes/sms-gateway-fake.ts, in its own process) made slow: every gateway call answers after
// 50 ms (BENCH_GATEWAY_LATENCY_MS). Organization A has 100,000 contacts, B 300, each its own gateway
// account (partnerID and API key). Each round times, from the launch request until GET /campaigns/:id
// says `completed` (polled every 20 ms):
//   - B's 300-recipient sms campaign alone;
//   - A's 100,000-recipient campaign alone, with 20 OTPs beside it: one-recipient POST
//     /notifications/send by A, one after the other ~100 ms apart from 1 s after the launch, each
//     timed request to answer (goal: p99 <= the gateway's 50 ms + 250 ms; with 20 samples p99 is the max);
//   - A's campaign again and, 4 s after its launch, B's: B's time under A.
// Then, once, pacing: organization C with `sms_rate: 200` among its credentials (messages per second)
// sends a 20,000-recipient campaign; the fake records each call's arrival (a bulk call's messages all
// count at its arrival). Goals: at most 210 messages in any 1-second window (slid over the arrival
// times), and the mean rate from first to last arrival within 5% of 200/s. Where the credential is
// refused, it prints `pacing: not supported (<status> <body>)`.
// The gateway checks exactly-once: each of B's (and C's) recipients reached it once, and each of A's.
// Medians over BENCH_ROUNDS (default 3). Prints `ratio: <(1.5 x B alone + 1 s) / B under A>`: the
// goal is >= 1, B's campaign at most 1.5x (plus a second) slower with A's big one running beside it.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { freshDatabase, median, signup, startProcess, summary, type Database, type Proc } from './lib/harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const A_CONTACTS = Number(process.env.BENCH_A_CONTACTS ?? 100_000);
const B_CONTACTS = Number(process.env.BENCH_B_CONTACTS ?? 300);
const C_CONTACTS = Number(process.env.BENCH_C_CONTACTS ?? 20_000);
const LATENCY_MS = Number(process.env.BENCH_GATEWAY_LATENCY_MS ?? 50);
/** B's launch, after A's. */
const B_AFTER_MS = 4_000;
const OTPS = 20;
const OTP_START_MS = 1_000;
const OTP_GAP_MS = 100;
const OTP_GOAL_MS = LATENCY_MS + 250;
const OTP_NUMBER = '+254799999999';
const POLL_MS = 20;
const RATE = 200;
const PACING_MAX_WINDOW = 210;
const TEXT = 'Fairness benchmark: your order has shipped.';
const ACCOUNTS = {
  A: { sms_apiKey: 'bench-key-a', sms_partnerID: '1001', sms_shortCode: 'HERALDA' },
  B: { sms_apiKey: 'bench-key-b', sms_partnerID: '1002', sms_shortCode: 'HERALDB' },
  C: { sms_apiKey: 'bench-key-c', sms_partnerID: '1003', sms_shortCode: 'HERALDC' },
};
/** Each organization's contacts get numbers of their own: +2547<first><7 digits>. */
const FIRST = { A: 1, B: 2, C: 3 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The busiest 1-second window (slid over the arrivals) and the mean rate from first to last arrival of `[at, messages]` calls. */
function windowsOf(calls: [number, number][], total: number) {
  calls.sort((x, y) => x[0] - y[0]);
  let maxWindow = 0;
  let inWindow = 0;
  for (let i = 0, j = 0; i < calls.length; i++) {
    while (j < calls.length && calls[j]![0] < calls[i]![0] + 1000) inWindow += calls[j++]![1];
    maxWindow = Math.max(maxWindow, inWindow);
    inWindow -= calls[i]![1];
  }
  const span = calls.at(-1)![0] - calls[0]![0];
  // The first call's messages open the span: the rate counts those sent after it.
  return { maxWindow, span, mean: span > 0 ? ((total - calls[0]![1]) / span) * 1000 : Infinity, calls: calls.length };
}

/** Posts `total` messages to the gateway fake as `sendbulk` calls of `size`, each at its exact time for `rate` a second; answers the fake's arrivals. */
async function barePacing(gatewayUrl: string, size: number, rate: number, total: number): Promise<[number, number][]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const url = new URL(`${gatewayUrl.replace(/\/+$/, '')}/api/services/sendbulk/`);
  const post = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(body);
    });
  const t0 = performance.now() + 50;
  const posts: Promise<void>[] = [];
  for (let k = 0; k * size < total; k++) {
    const due = t0 + (k * size * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const n = Math.min(size, total - k * size);
    const smslist = Array.from({ length: n }, (_, i) => ({ partnerID: 'floor', apikey: 'floor', pass_type: 'plain', clientsmsid: `${k}-${i}`, mobile: `2547900${String(k * size + i).padStart(5, '0')}`, message: TEXT, shortcode: 'FLOOR' }));
    posts.push(post(JSON.stringify({ count: n, smslist })));
  }
  await Promise.all(posts);
  agent.destroy();
  return (await fetch(`${gateway!.url}/arrivals?partnerID=floor`).then((r) => r.json())) as [number, number][];
}

// Everything started is stopped on the way out: at the end, on a failure, and on SIGINT / SIGTERM.
let gateway: Proc | undefined;
let herald: Proc | undefined;
let db: Database | undefined;
let pool: pg.Pool | undefined;
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  (cleaning ??= (async () => {
    await pool?.end().catch(() => {});
    await herald?.stop();
    await gateway?.stop();
    await db?.stop().catch((err) => console.error(`dropping the bench database: ${err}`));
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}
// Last resort (process.exit elsewhere): no child outlives the bench.
process.once('exit', () => {
  for (const p of [herald, gateway]) if (p && p.child.exitCode === null) p.child.kill('SIGTERM');
});

type Org = { name: keyof typeof ACCOUNTS; orgId: string; auth: Record<string, string>; contacts: number };

try {
  gateway = await startProcess('bench/lib/peer-server.ts', { PEER: 'sms', LATENCY_MS: String(LATENCY_MS) }, 4761);
  const { url: gatewayUrl } = (await fetch(`${gateway.url}/info`).then((r) => r.json())) as { url: string };
  db = await freshDatabase('fairness');
  const env = {
    DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'live', BLOCK_PRIVATE_HOSTS: 'false',
    SMS_API_URL: gatewayUrl, JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
  herald = await startProcess('src/main.ts', env, 4762, '/ready');
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const h = herald.url;
  const g = gateway.url;

  type Stats = { calls: number; messages: number; mobiles: number; bulkSizes: number[] };
  const stats = (partnerID: string) => fetch(`${g}/stats?partnerID=${partnerID}`).then((r) => r.json() as Promise<Stats>);
  const arrivals = (partnerID: string) => fetch(`${g}/arrivals?partnerID=${partnerID}`).then((r) => r.json() as Promise<[number, number][]>);
  const resetGateway = () => fetch(`${g}/reset`, { method: 'POST' });

  const putCredentials = (org: Org, body: Record<string, unknown>) =>
    fetch(`${h}/organizations/current/credentials`, { method: 'PUT', headers: org.auth, body: JSON.stringify(body) });
  async function organization(name: Org['name'], contacts: number): Promise<Org> {
    const { token, orgId } = await signup(h);
    const org: Org = { name, orgId, auth: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, contacts };
    await pool!.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
    return org;
  }
  async function loadContacts(org: Org) {
    await pool!.query(
      `INSERT INTO contacts (organization_id, name, phone)
       SELECT $1, 'Contact ' || i, '+2547' || $3::text || lpad(i::text, 7, '0') FROM generate_series(1, $2) AS i`,
      [org.orgId, org.contacts, FIRST[org.name]],
    );
  }

  const A = await organization('A', A_CONTACTS);
  const B = await organization('B', B_CONTACTS);
  for (const org of [A, B]) {
    const res = await putCredentials(org, ACCOUNTS[org.name]);
    if (!res.ok) throw new Error(`credentials of ${org.name}: ${res.status} ${await res.text()}`);
    await loadContacts(org);
  }
  // C's credentials with the rate: refused by a Herald that does not know it.
  const C = await organization('C', C_CONTACTS);
  const rated = await putCredentials(C, { ...ACCOUNTS.C, sms_rate: RATE });
  const pacingRefused = rated.ok ? undefined : `${rated.status} ${(await rated.text()).trim().slice(0, 300)}`;
  if (!pacingRefused) await loadContacts(C);
  // As autovacuum leaves a table a minute after a bulk import (see bench/campaign.ts).
  await pool.query('VACUUM ANALYZE contacts');

  /** Creates an sms campaign to all of `org`'s contacts (a draft); answers its id. */
  async function create(org: Org, name: string): Promise<string> {
    const created = await fetch(`${h}/campaigns`, {
      method: 'POST',
      headers: org.auth,
      body: JSON.stringify({ name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: TEXT } } }),
    });
    if (created.status !== 201) throw new Error(`create ${name}: ${created.status} ${await created.text()}`);
    return ((await created.json()) as { _id: string })._id;
  }

  /** Launches the campaign `id` (created first when a name is given); resolves when GET /campaigns/:id says completed. */
  async function campaign(org: Org, idOrName: { id: string } | { name: string }, onLaunch?: (t0: number) => void): Promise<{ ms: number; completedAt: number }> {
    const id = 'id' in idOrName ? idOrName.id : await create(org, idOrName.name);
    const t0 = performance.now();
    onLaunch?.(t0);
    const launched = await fetch(`${h}/campaigns/${id}/launch`, { method: 'POST', headers: org.auth });
    const body = (await launched.json()) as { status?: string };
    if (!launched.ok || (body.status !== 'active' && body.status !== 'completed')) throw new Error(`launch ${org.name} ${id}: ${launched.status} ${JSON.stringify(body)}`);
    for (let status = body.status; status !== 'completed'; ) {
      if (performance.now() - t0 > 15 * 60_000) throw new Error(`${org.name} ${id}: not completed after 15 minutes (${status})`);
      await sleep(POLL_MS);
      const res = await fetch(`${h}/campaigns/${id}`, { headers: org.auth });
      const c = (await res.json()) as { status: string };
      if (!res.ok || c.status === 'canceled') throw new Error(`${org.name} ${id}: ${res.status} ${JSON.stringify(c)}`);
      status = c.status;
    }
    const completedAt = performance.now();
    return { ms: completedAt - t0, completedAt };
  }

  /** Every one of the organization's recipients reached its gateway account once (plus `extra` other messages). */
  async function exactlyOnce(org: Org, what: string, extra = { messages: 0, mobiles: 0 }) {
    const s = await stats(ACCOUNTS[org.name].sms_partnerID);
    if (s.messages !== org.contacts + extra.messages || s.mobiles !== org.contacts + extra.mobiles) {
      // What Herald logged for a failed recipient, if any, says why.
      const { rows } = await pool!.query(
        `SELECT r->>'error' AS error FROM message_logs m, json_array_elements(m.recipients) r WHERE m.organization_id = $1 AND r->>'status' = 'failed' LIMIT 1`,
        [org.orgId],
      );
      const why = rows[0] ? `; Herald logged failures such as: ${rows[0].error}` : '';
      throw new Error(`${what}: ${org.name}'s gateway account got ${s.messages} messages to ${s.mobiles} numbers, not each of ${org.contacts} once${why}`);
    }
  }

  /** 20 OTPs by A, one at a time, ~100 ms apart, from 1 s after `t0`; their latencies, and those of the ones sent while `running()`. */
  async function otps(t0: number, running: () => boolean): Promise<{ ms: number[]; beside: number[] }> {
    const ms: number[] = [];
    const beside: number[] = [];
    await sleep(Math.max(0, t0 + OTP_START_MS - performance.now()));
    for (let i = 0; i < OTPS; i++) {
      const start = performance.now();
      const during = running();
      const res = await fetch(`${h}/notifications/send`, {
        method: 'POST',
        headers: A.auth,
        body: JSON.stringify({ type: 'sms', to: OTP_NUMBER, message: `Your Herald code is ${String(100000 + i)}` }),
      });
      const body = (await res.json()) as { status?: string };
      const end = performance.now();
      if (!res.ok || body.status !== 'success') throw new Error(`OTP ${i + 1}: ${res.status} ${JSON.stringify(body)}`);
      ms.push(end - start);
      if (during) beside.push(end - start);
      await sleep(Math.max(0, start + OTP_GAP_MS - performance.now()));
    }
    return { ms, beside };
  }

  // Untimed warm-up (JIT, caches): B's campaign once.
  await resetGateway();
  const warm = await campaign(B, { name: 'Warm-up' });
  await exactlyOnce(B, 'warm-up');
  console.log(
    `fairness: A ${A_CONTACTS} contacts, B ${B_CONTACTS}, sms campaigns into the SMS gateway fake answering every call after ${LATENCY_MS} ms; live delivery; ${ROUNDS} rounds`,
  );
  console.log(`  warm-up: B alone ${warm.ms.toFixed(0)} ms`);

  const bAlone: number[] = [];
  const aAlone: number[] = [];
  const bUnder: number[] = [];
  const aWithB: number[] = [];
  const otpMedians: number[] = [];
  const otpP99s: number[] = [];
  const otpAll: number[] = [];
  const otpBeside: number[] = [];
  /** `n of 20 sent while A ran: median, max`: the medians over all 20 flatter Herald once A completes first. */
  const besideOf = (xs: number[], of: number) => `${xs.length} of ${of} sent while A ran${xs.length ? `: median ${median(xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms` : ''}`;
  for (let round = 1; round <= ROUNDS; round++) {
    await resetGateway();
    const b = await campaign(B, { name: `B alone ${round}` });
    await exactlyOnce(B, `B alone ${round}`);
    bAlone.push(b.ms);

    // A alone, with the OTPs beside it.
    await resetGateway();
    let aRunning = true;
    let launchedAt!: (t0: number) => void;
    const launched = new Promise<number>((r) => (launchedAt = r));
    const aRun = campaign(A, { id: await create(A, `A alone ${round}`) }, launchedAt).finally(() => (aRunning = false));
    aRun.catch(() => {}); // Awaited below; a failure meanwhile must not end the bench before its cleanup.
    const otp = await otps(await launched, () => aRunning);
    const a = await aRun;
    await exactlyOnce(A, `A alone ${round}`, { messages: OTPS, mobiles: 1 });
    aAlone.push(a.ms);
    const otpMedian = median(otp.ms);
    const otpP99 = Math.max(...otp.ms);
    otpMedians.push(otpMedian);
    otpP99s.push(otpP99);
    otpAll.push(...otp.ms);
    otpBeside.push(...otp.beside);

    // A again, and B 4 s after A's launch (both created before).
    await resetGateway();
    const [aId, bId] = [await create(A, `A with B ${round}`), await create(B, `B under A ${round}`)];
    let aDoneAt = Infinity;
    let bLaunchedAt = 0;
    let launchedA!: (t0: number) => void;
    const aLaunched = new Promise<number>((r) => (launchedA = r));
    const aAgain = campaign(A, { id: aId }, launchedA).then((r) => ((aDoneAt = r.completedAt), r));
    aAgain.catch(() => {}); // Awaited below, as above.
    const aT0 = await aLaunched;
    await sleep(Math.max(0, aT0 + B_AFTER_MS - performance.now()));
    const bUnderA = await campaign(B, { id: bId }, (t0) => (bLaunchedAt = t0 - aT0));
    const bDoneBeforeA = bUnderA.completedAt < aDoneAt;
    const a2 = await aAgain;
    await exactlyOnce(B, `B under A ${round}`);
    await exactlyOnce(A, `A with B ${round}`);
    bUnder.push(bUnderA.ms);
    aWithB.push(a2.ms);
    const note = bLaunchedAt > a2.ms ? ' (A had completed before B launched: B was not under A)' : bDoneBeforeA ? '' : ' (B completed after A)';
    console.log(
      `  round ${round}: B alone ${b.ms.toFixed(0)} ms; A alone ${a.ms.toFixed(0)} ms (${((A_CONTACTS / a.ms) * 1000).toFixed(0)} msg/s), ` +
        `OTP median ${otpMedian.toFixed(0)} ms, p99 ${otpP99.toFixed(0)} ms (${besideOf(otp.beside, OTPS)}); ` +
        `A with B ${a2.ms.toFixed(0)} ms, B launched at ${(bLaunchedAt / 1000).toFixed(1)} s: B under A ${bUnderA.ms.toFixed(0)} ms${note}`,
    );
    console.log(`    OTP latencies (ms): ${otp.ms.map((m) => m.toFixed(0)).join(' ')}`);
  }
  console.log(`  exactly once: each of B's ${B_CONTACTS} and each of A's ${A_CONTACTS} recipients reached the gateway once per campaign`);

  const spreadOf = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
  const bA = median(bAlone);
  const bU = median(bUnder);
  console.log(`B alone: median ${bA.toFixed(0)} ms (${spreadOf(bAlone)})`);
  console.log(`A alone: median ${median(aAlone).toFixed(0)} ms (${spreadOf(aAlone)}), ${((A_CONTACTS / median(aAlone)) * 1000).toFixed(0)} msg/s`);
  console.log(`A with B: median ${median(aWithB).toFixed(0)} ms (${spreadOf(aWithB)})`);
  console.log(`B under A: median ${bU.toFixed(0)} ms (${spreadOf(bUnder)}), ${(bU / bA).toFixed(1)}x B alone (goal <= 1.5x + 1 s = ${(1.5 * bA + 1000).toFixed(0)} ms)`);
  const otpP99 = median(otpP99s);
  console.log(
    `OTP beside A's campaign: median ${median(otpMedians).toFixed(0)} ms, p99 ${otpP99.toFixed(0)} ms (medians over rounds; all ${otpAll.length}: median ${median(otpAll).toFixed(0)} ms, max ${Math.max(...otpAll).toFixed(0)} ms; ${besideOf(otpBeside, otpAll.length)}); goal p99 <= ${OTP_GOAL_MS} ms`,
  );

  // Pacing: C's campaign at `sms_rate` messages per second.
  if (pacingRefused) {
    console.log(`pacing: not supported (${pacingRefused})`);
  } else {
    await resetGateway();
    const c = await campaign(C, { name: 'Paced' });
    await exactlyOnce(C, 'paced');
    const herald = windowsOf((await arrivals(ACCOUNTS.C.sms_partnerID)).sort((x, y) => x[0] - y[0]), C_CONTACTS);
    console.log(
      `pacing: ${C_CONTACTS} messages at sms_rate ${RATE} in ${(c.ms / 1000).toFixed(1)} s: max 1-s window ${herald.maxWindow} (goal <= ${PACING_MAX_WINDOW}), ` +
        `mean ${herald.mean.toFixed(1)} msg/s from first to last arrival over ${(herald.span / 1000).toFixed(1)} s (goal ${(RATE * 0.95).toFixed(0)}-${(RATE * 1.05).toFixed(0)}); ${herald.calls} calls`,
    );
    // The floor: the barest pacing, in this process, into the same fake: calls of the same size as
    // Herald's slices, each posted at its exact time on one schedule (t0 + k x size / rate), none
    // waiting for the one before to answer. What the fake sees of it is what this machine allows.
    await resetGateway();
    const floor = windowsOf(await barePacing(gatewayUrl, Math.max(1, Math.floor(RATE * 0.05)), RATE, C_CONTACTS), C_CONTACTS);
    console.log(
      `pacing floor (a bare loop posting calls of ${Math.max(1, Math.floor(RATE * 0.05))} on an exact schedule): max 1-s window ${floor.maxWindow}, ` +
        `mean ${floor.mean.toFixed(1)} msg/s over ${(floor.span / 1000).toFixed(1)} s`,
    );
  }

  summary({ goal: '>= 1', p99: ['otp', otpP99, 'goal', OTP_GOAL_MS], spread: ['b-alone', bAlone, 'b-under-a', bUnder, 'ms'] });
  console.log(`ratio: ${((1.5 * bA + 1000) / bU).toFixed(3)}`);
} finally {
  await cleanup();
}
