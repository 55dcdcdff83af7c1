// A campaign to 100,000 contacts (sandbox delivery) with a webhook endpoint taking `message.sent`,
// timed from launch until the receiver has received events covering every recipient, against the
// same campaign with the endpoint disabled (no events written), timed from launch until it
// completes. Each round runs both, and the floor beside the campaign (below), in an order that turns
// from round to round. Prints `ratio: <without / with>`; the goal is the campaign with its webhooks
// within 1.5x of the campaign alone (>= 0.67).
//
// The receiver runs in this process, on the machine Herald runs on; a customer's receiver runs on
// theirs. So it answers each delivery at once and verifies every one (standardwebhooks' `verify`)
// after the round's clock stops: the timed window holds Herald's work and the HTTP, not the
// receiver's hashing (its pure-JS SHA-256 took 170-260 ms of CPU a round in the window). A delivery
// that does not verify still fails the bench.
//
// For reference, not in the ratio: the floor of delivering those events, the last round's bodies
// signed with the package and posted again to the same receiver by a bare undici client in this
// process (as many connections as Herald's pool), with no database at all; and the floor beside the
// campaign, timed in the same rounds as the two: the campaign alone while that client posts the same
// events, each once the campaign has sent the recipients of the events before it (the campaign with
// its webhooks, were Herald's own work per event free: what the machine allows).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { Agent } from 'undici';
import { cpuNow, freshDatabase, median, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await freshDatabase('webhooks');
const env = {
  DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'test', DELIVERY_MODE: 'sandbox', DATABASE_POOL_MAX: '20',
  JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
};
const herald = await startProcess('src/main.ts', env, 4721, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

/**
 * The receiver: counts the recipients of each campaign's `message.sent` as they arrive, and keeps
 * every delivery (body and headers) for `verifyReceived`, after the clock.
 */
let hook: Webhook | null = null;
const received = new Map<string, number>();
let unverified: { body: string; headers: Record<string, string> }[] = [];
/** The bodies of the last round with webhooks, for the bare floor. */
let lastBodies: string[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    res.writeHead(204).end();
    unverified.push({ body, headers: req.headers as Record<string, string> });
    const event = JSON.parse(body) as { type: string; data: { campaignId: string | null; recipients: unknown[] } };
    if (event.type !== 'message.sent' || !event.data.campaignId) return;
    const n = (received.get(event.data.campaignId) ?? 0) + event.data.recipients.length;
    received.set(event.data.campaignId, n);
  });
});

/**
 * Verifies every delivery kept since the last call with standardwebhooks' own `verify` (it throws on
 * a bad one); answers how many, their bytes, and the milliseconds it took: `verify` signs each body
 * once, as Herald's sending did, so this is also what signing them costs with the package.
 */
function verifyReceived(): { n: number; bytes: number; ms: number } {
  const t0 = performance.now();
  let bytes = 0;
  for (const { body, headers } of unverified) {
    hook!.verify(body, headers);
    bytes += Buffer.byteLength(body);
  }
  const n = unverified.length;
  if (n) lastBodies = unverified.map((u) => u.body);
  unverified = [];
  return { n, bytes, ms: performance.now() - t0 };
}
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/herald`;

try {
  const signup = (await fetch(`${herald.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE',
    }),
  }).then((r) => r.json())) as { token: string; user: { organization: string } };
  const auth = { authorization: `Bearer ${signup.token}`, 'content-type': 'application/json' };
  const orgId = signup.user.organization;
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone) SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0') FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  await pool.query('VACUUM ANALYZE contacts');
  const endpoint = (await fetch(`${herald.url}/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: receiverUrl, eventTypes: ['message.sent'] }) }).then((r) => r.json())) as {
    _id: string;
    secret: string;
  };
  hook = new Webhook(endpoint.secret);
  const setEnabled = (enabled: boolean) => fetch(`${herald.url}/webhooks/${endpoint._id}`, { method: 'PUT', headers: auth, body: JSON.stringify({ enabled }) }).then((r) => r.json());

  /** Untimed: waits until the sandbox has reported a receipt for every recipient the campaign sent, so the next round starts on a quiet Herald. */
  async function receiptsDone(id: string) {
    for (const start = Date.now(); Date.now() - start < 120_000; await new Promise((r) => setTimeout(r, 100))) {
      const { rows } = await pool.query(
        `SELECT (SELECT sent FROM campaigns WHERE organization_id = $1 AND id = $2) AS sent,
                (SELECT count(*)::int FROM recipient_receipts WHERE organization_id = $1 AND campaign_id = $2) AS reported`,
        [orgId, id],
      );
      if (rows[0].reported >= rows[0].sent) return;
    }
    throw new Error(`campaign ${id}: its sandbox receipts did not all arrive within 2 minutes`);
  }

  /** Launches a campaign to every contact; milliseconds until it completes and, with webhooks, until the receiver has every recipient. */
  async function run(
    name: string,
    withWebhooks: boolean,
    beside?: (sentSoFar: () => number) => Promise<unknown>,
  ): Promise<{ ms: number; completed: number; verified: ReturnType<typeof verifyReceived>; cpu: string }> {
    await setEnabled(withWebhooks);
    const created = (await fetch(`${herald.url}/campaigns`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Benchmark' } } }),
    }).then((r) => r.json())) as { _id: string };
    const cpu0 = cpuNow(herald.child.pid!);
    const receiverCpu0 = process.cpuUsage();
    const t0 = performance.now();
    await fetch(`${herald.url}/campaigns/${created._id}/launch`, { method: 'POST', headers: auth });
    let sent = 0;
    let completed = 0;
    const besideDone = beside?.(() => sent);
    for (;;) {
      const { rows } = await pool.query('SELECT status, sent FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, created._id]);
      sent = rows[0].sent;
      if (rows[0].status === 'completed') {
        completed = performance.now() - t0;
        sent = rows[0].sent;
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    // Every sent recipient (the sandbox fails numbers ending in 0000 on purpose) in a verified event.
    while (withWebhooks && (received.get(created._id) ?? 0) < sent) await new Promise((r) => setTimeout(r, 5));
    await besideDone;
    const ms = performance.now() - t0;
    const cpu1 = cpuNow(herald.child.pid!);
    const receiverCpu = process.cpuUsage(receiverCpu0);
    const cpu = `CPU Herald ${(cpu1.herald - cpu0.herald).toFixed(0)} ms, Postgres ${(cpu1.postgres - cpu0.postgres).toFixed(0)} ms, this process (receiver, polling) ${((receiverCpu.user + receiverCpu.system) / 1000).toFixed(0)} ms`;
    const verified = verifyReceived();
    if (withWebhooks && !verified.n) throw new Error('no delivery arrived');
    await receiptsDone(created._id);
    return { ms, completed, verified, cpu };
  }

  /** The floor: the last round's events signed and posted again by a bare client (48 connections, as Herald's pool); ms until the receiver has them all, and this process's CPU. */
  async function bare(round: number, sentSoFar?: () => number): Promise<{ ms: number; cpu: number }> {
    const { campaignId } = (JSON.parse(lastBodies[0]!) as { data: { campaignId: string } }).data;
    const total = received.get(campaignId)!;
    received.set(campaignId, 0);
    const agent = new Agent({ connections: 48, keepAliveTimeout: 4_000 });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    const lane = async () => {
      while (next < lastBodies.length) {
        const i = next++;
        // Beside a campaign: an event is posted once the campaign has sent the recipients of the events before it.
        while (sentSoFar && sentSoFar() < i * (CONTACTS / lastBodies.length)) await new Promise((r) => setTimeout(r, 2));
        const id = `msg_bare_${round}_${i}`;
        const at = new Date();
        const res = await agent.request({
          origin: new URL(receiverUrl).origin,
          path: '/herald',
          method: 'POST',
          headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': hook!.sign(id, at, lastBodies[i]!) },
          body: lastBodies[i],
        });
        await res.body.dump();
      }
    };
    await Promise.all(Array.from({ length: 48 }, lane));
    while ((received.get(campaignId) ?? 0) < total) await new Promise((r) => setTimeout(r, 5));
    const ms = performance.now() - t0;
    const used = process.cpuUsage(cpu0);
    await agent.close();
    if (verifyReceived().n !== lastBodies.length) throw new Error('the bare round lost deliveries');
    return { ms, cpu: (used.user + used.system) / 1000 };
  }
  // Each round runs the campaign alone, with its webhooks, and beside the floor (below), in an order
  // that turns from round to round: the three see the same database (its logs grow a campaign a run)
  // and the same machine, so a ratio never sets a late run against an early one.
  const alone: number[] = [];
  const withHooks: number[] = [];
  /**
   * The floor beside the campaign: the campaign alone while the same events are signed and posted by
   * the bare client, each once the campaign has sent its recipients: the least any implementation of
   * the campaign with its webhooks could take on this machine (Herald's own work per event at nothing).
   */
  const besideFloor: number[] = [];
  const MODES = ['alone', 'hooks', 'floor'] as const;
  for (let round = 0; round <= ROUNDS; round++) {
    // Round 0 (not timed) posts before its floor, which needs a round's bodies.
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]!);
    for (const mode of order) {
      if (mode === 'floor') {
        const { ms } = await run(`Bench ${round} floor`, false, (sentSoFar) => bare(10 + round, sentSoFar));
        if (round === 0) continue;
        besideFloor.push(ms);
        console.log(`  round ${round} floor beside  ${ms.toFixed(0)} ms`);
        continue;
      }
      const hooks = mode === 'hooks';
      const { ms, completed, verified, cpu } = await run(`Bench ${round} ${mode}`, hooks);
      if (round === 0) continue;
      (hooks ? withHooks : alone).push(ms);
      const verifiedNote = `${verified.n} deliveries (${(verified.bytes / 1e6).toFixed(1)} MB) verified after the clock in ${verified.ms.toFixed(0)} ms, each signed once as Herald signed it`;
      console.log(`  round ${round} ${hooks ? 'with webhooks' : 'alone        '} ${ms.toFixed(0)} ms${hooks ? ` (the campaign completed at ${completed.toFixed(0)} ms; ${verifiedNote})` : ''}; ${cpu}`);
    }
  }
  const floor: { ms: number; cpu: number }[] = [];
  for (let round = 0; round <= 3; round++) {
    const r = await bare(round);
    if (round) floor.push(r);
  }
  console.log(
    `  floor beside the campaign, for reference: the campaign alone with the bare client posting the same events as its recipients are sent: ` +
      `${median(besideFloor).toFixed(0)} ms (${besideFloor.map((m) => m.toFixed(0)).join(', ')}), ${(median(besideFloor) / median(alone)).toFixed(2)}x the campaign alone`,
  );
  console.log(
    `  floor, for reference: the last round's ${lastBodies.length} events signed with the package and posted again by a bare undici client in this process: ` +
      `${median(floor.map((f) => f.ms)).toFixed(0)} ms (${floor.map((f) => f.ms.toFixed(0)).join(', ')}), CPU of client and receiver together ${median(floor.map((f) => f.cpu)).toFixed(0)} ms`,
  );
  const [a, w] = [median(alone), median(withHooks)];
  console.log(`campaign of ${CONTACTS} alone ${a.toFixed(0)} ms; with every message.sent delivered ${w.toFixed(0)} ms (each verified): ${(w / a).toFixed(2)}x (goal <= 1.5x)`);
  summary({ goal: '>= 0.67', spread: ['with-webhooks', withHooks, 'alone', alone, 'ms'] });
  console.log(`ratio: ${(a / w).toFixed(3)}`);
} finally {
  receiver.close();
  await pool.end();
  await herald.stop();
  await db.stop();
}
