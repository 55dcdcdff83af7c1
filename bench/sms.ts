// POST /notifications/send-to-all (sms) to 10,000 contacts, Herald in live delivery mode, into the SMS
// gateway fake (tests/fakes/sms-gateway-fake.ts, in its own process), against a bare loop of
// keep-alive node:http POSTs to /api/services/sendbulk/ sending the same 10,000 messages in the same
// calls of 20. Same concurrency: Herald's SEND_CONCURRENCY 8 bounds the account's gateway calls in
// flight at 16 (4 log batches of 100 at once feed them), so the baseline keeps 16 bulk calls in flight.
// Time from request to answer (every recipient settled and logged) vs time until every call has
// answered and every response code was read. Prints `ratio: <Herald msg/s / baseline msg/s>`;
// the goal is >= 0.50.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import pMap from 'p-map';
import pg from 'pg';
import { compareTimed, freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);
const BULK = 20;
const IN_FLIGHT = 16;
const MESSAGE = 'Hello from the Herald benchmark: your code is 123456.';
const CREDS = { apikey: 'bench-api-key', partnerID: '1234', shortcode: 'HERALD' };

const gateway = await startProcess('bench/lib/peer-server.ts', { PEER: 'sms' }, 4731);
const { url: gatewayUrl } = (await fetch(`${gateway.url}/info`).then((r) => r.json())) as { url: string };
const db = await freshDatabase('sms');
const env = {
  DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'live', BLOCK_PRIVATE_HOSTS: 'false',
  SMS_API_URL: gatewayUrl, SEND_CONCURRENCY: '8', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
};
const herald = await startProcess('src/main.ts', env, 4732, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const stats = () => fetch(`${gateway.url}/stats`).then((r) => r.json() as Promise<{ calls: number; messages: number; mobiles: number; bulkSizes: number[] }>);
const resetGateway = () => fetch(`${gateway.url}/reset`, { method: 'POST' });
try {
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const creds = await fetch(`${herald.url}/organizations/current/credentials`, {
    method: 'PUT',
    headers: auth,
    body: JSON.stringify({ sms_apiKey: CREDS.apikey, sms_partnerID: CREDS.partnerID, sms_shortCode: CREDS.shortcode }),
  });
  if (!creds.ok) throw new Error(`credentials: ${creds.status} ${await creds.text()}`);
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0') FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  const mobiles = Array.from({ length: CONTACTS }, (_, i) => `2547${String(10000000 + i + 1).padStart(8, '0')}`);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const target = new URL(`${gatewayUrl}/api/services/sendbulk/`);
  const post = (body: unknown) =>
    new Promise<{ responses: { 'response-code': number }[] }>((resolve, reject) => {
      const payload = Buffer.from(JSON.stringify(body));
      const req = http.request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': payload.length } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))) : reject(new Error(`HTTP ${res.statusCode}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  const bare = async (to: string[]) => {
    const chunks: string[][] = [];
    for (let i = 0; i < to.length; i += BULK) chunks.push(to.slice(i, i + BULK));
    const answers = await pMap(
      chunks,
      (chunk) =>
        post({
          count: chunk.length,
          smslist: chunk.map((mobile) => ({ partnerID: CREDS.partnerID, apikey: CREDS.apikey, pass_type: 'plain', clientsmsid: randomUUID(), mobile, message: MESSAGE, shortcode: CREDS.shortcode })),
        }),
      { concurrency: IN_FLIGHT },
    );
    const ok = answers.reduce((n, a) => n + a.responses.filter((r) => r['response-code'] === 200).length, 0);
    if (ok !== to.length) throw new Error(`bare: ${ok} of ${to.length} accepted`);
  };

  const expectAll = async (who: string) => {
    const s = await stats();
    if (s.messages !== CONTACTS || s.mobiles !== CONTACTS || s.bulkSizes.some((n) => n > BULK)) throw new Error(`${who}: gateway got ${JSON.stringify(s)}, expected ${CONTACTS}`);
    await resetGateway();
    return s.calls;
  };

  // One untimed full run each: the baseline's loop needs a few to reach its pace (JIT).
  const w = await fetch(`${herald.url}/notifications/send-to-all`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'sms', message: MESSAGE, to: 'all' }) });
  if (!w.ok) throw new Error(`warm-up: ${w.status} ${await w.text()}`);
  for (let i = 0; i < 3; i++) await bare(mobiles);
  await resetGateway();

  console.log(`sms: send-to-all to ${CONTACTS} contacts into the SMS gateway fake; bulk ${BULK}, ${IN_FLIGHT} calls in flight; ${ROUNDS} rounds`);
  const calls: Record<string, number> = {};
  const results = await compareTimed(
    [
      {
        name: 'herald',
        run: async () => {
          const t0 = performance.now();
          const res = await fetch(`${herald.url}/notifications/send-to-all`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'sms', message: MESSAGE, to: 'all' }) });
          const outcomes = (await res.json()) as { status: string }[];
          const ms = performance.now() - t0;
          if (!res.ok || outcomes.length !== CONTACTS || outcomes.some((o) => o.status !== 'success')) throw new Error(`herald: ${res.status} ${JSON.stringify(outcomes).slice(0, 300)}`);
          calls.herald = await expectAll('herald');
          return ms;
        },
      },
      {
        name: 'http-loop',
        run: async () => {
          const t0 = performance.now();
          await bare(mobiles);
          const ms = performance.now() - t0;
          calls['http-loop'] = await expectAll('http-loop');
          return ms;
        },
      },
    ],
    ROUNDS,
    CONTACTS,
  );
  agent.destroy();
  const h = median(results.herald!);
  const b = median(results['http-loop']!);
  console.log(`herald     median ${h.toFixed(0)} msg/s (${calls.herald} calls); http-loop median ${b.toFixed(0)} msg/s (${calls['http-loop']} calls)`);
  summary({ goal: '>= 0.50', spread: ['herald', results.herald!, 'baseline', results['http-loop']!, 'msg/s'] });
  console.log(`ratio: ${(h / b).toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await gateway.stop();
  await db.stop();
}
