// POST /notifications/send-to-all (email) to 10,000 contacts, Herald in live delivery mode, into a
// local SMTP sink (tests/fakes/smtp-sink.ts, in its own process), against a bare loop of
// nodemailer `sendMail` calls on one pooled transport sending the same 10,000 messages to the same
// sink. Both use 5 pooled connections and 20 messages in flight (Herald: SEND_CONCURRENCY 8 gives 4
// log batches at once, each with 5 sends in flight on the organization's 5-connection pool).
// Time from request to answer (every recipient settled and logged) vs time until every sendMail has
// resolved. Prints `ratio: <Herald msg/s / baseline msg/s>`; the goal is >= 0.80. In the same rounds, two
// more organizations with a DKIM key for the From domain send the same (every message signed), one
// with an RSA key (`dkim: <signed msg/s / unsigned msg/s>`, the goal >= 0.90), one with an Ed25519 key
// (`dkim-ed25519: ...`, the same goal).
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import pMap from 'p-map';
import pg from 'pg';
import { compareTimed, freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = 5;
const IN_FLIGHT = 20;
const SUBJECT = 'Benchmark';
const MESSAGE = 'Hello from the Herald benchmark. This is a plain-text message of an ordinary length.';

const sink = await startProcess('bench/lib/peer-server.ts', { PEER: 'smtp' }, 4721);
const db = await freshDatabase('email');
const env = {
  DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'live', BLOCK_PRIVATE_HOSTS: 'false',
  SEND_CONCURRENCY: '8', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
};
const herald = await startProcess('src/main.ts', env, 4722, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const stats = () => fetch(`${sink.url}/stats`).then((r) => r.json() as Promise<{ messages: number; recipients: number }>);
const resetSink = () => fetch(`${sink.url}/reset`, { method: 'POST' });
try {
  const { smtpPort } = (await fetch(`${sink.url}/info`).then((r) => r.json())) as { smtpPort: number };
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const creds = await fetch(`${herald.url}/organizations/current/credentials`, {
    method: 'PUT',
    headers: auth,
    body: JSON.stringify({ email_host: '127.0.0.1', email_port: String(smtpPort), email_from: 'bench@example.com' }),
  });
  if (!creds.ok) throw new Error(`credentials: ${creds.status} ${await creds.text()}`);
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, email)
     SELECT $1, 'Contact ' || i, 'contact' || i || '@example.com' FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  const addresses = Array.from({ length: CONTACTS }, (_, i) => `contact${i + 1}@example.com`);

  /** A signing organization: the same credentials and contacts, and a DKIM key of `algorithm` for example.com. */
  const signingOrg = async (algorithm: 'rsa' | 'ed25519') => {
    const signing = await signup(herald.url);
    const headers = { authorization: `Bearer ${signing.token}`, 'content-type': 'application/json' };
    for (const [path, method, body] of [
      ['/organizations/current/credentials', 'PUT', { email_host: '127.0.0.1', email_port: String(smtpPort), email_from: 'bench@example.com' }],
      ['/dkim-keys', 'POST', { domain: 'example.com', selector: `bench-${algorithm}`, algorithm }],
    ] as const) {
      const res = await fetch(`${herald.url}${path}`, { method, headers, body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    }
    await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [signing.orgId]);
    await pool.query(
      `INSERT INTO contacts (organization_id, name, email)
       SELECT $1, 'Contact ' || i, 'contact' || i || '@example.com' FROM generate_series(1, $2) AS i`,
      [signing.orgId, CONTACTS],
    );
    return headers;
  };
  const rsaAuth = await signingOrg('rsa');
  const edAuth = await signingOrg('ed25519');

  const transport = nodemailer.createTransport({ pool: true, host: '127.0.0.1', port: smtpPort, ignoreTLS: true, maxConnections: POOL });
  const bare = (to: string[]) =>
    pMap(to, (address) => transport.sendMail({ from: { name: 'Bench', address: 'bench@example.com' }, to: address, subject: SUBJECT, text: MESSAGE }), { concurrency: IN_FLIGHT });

  const expectAll = async (who: string) => {
    const s = await stats();
    if (s.messages !== CONTACTS || s.recipients !== CONTACTS) throw new Error(`${who}: sink got ${s.messages} messages for ${s.recipients} recipients, expected ${CONTACTS}`);
    await resetSink();
  };

  // Warm them all: open the pools, let the JIT see the paths.
  const warm = addresses.slice(0, 200);
  const w = await fetch(`${herald.url}/notifications/send`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'email', subject: SUBJECT, message: MESSAGE, to: warm }) });
  if (!w.ok) throw new Error(`warm-up: ${w.status} ${await w.text()}`);
  for (const [label, headers] of [['rsa', rsaAuth], ['ed25519', edAuth]] as const) {
    const ws = await fetch(`${herald.url}/notifications/send`, { method: 'POST', headers, body: JSON.stringify({ type: 'email', subject: SUBJECT, message: MESSAGE, to: warm }) });
    if (!ws.ok) throw new Error(`warm-up (signed, ${label}): ${ws.status} ${await ws.text()}`);
  }
  await bare(warm);
  await resetSink();

  /** One organization's send-to-all, timed from request to answer. */
  const sendToAll = async (name: string, headers: Record<string, string>) => {
    const t0 = performance.now();
    const res = await fetch(`${herald.url}/notifications/send-to-all`, { method: 'POST', headers, body: JSON.stringify({ type: 'email', subject: SUBJECT, message: MESSAGE, to: 'all' }) });
    const outcomes = (await res.json()) as { status: string }[];
    const ms = performance.now() - t0;
    if (!res.ok || outcomes.length !== CONTACTS || outcomes.some((o) => o.status !== 'success')) throw new Error(`${name}: ${res.status} ${JSON.stringify(outcomes).slice(0, 300)}`);
    await expectAll(name);
    return ms;
  };

  console.log(`email: send-to-all to ${CONTACTS} contacts into a local SMTP sink; pool ${POOL}, ${IN_FLIGHT} in flight; ${ROUNDS} rounds`);
  const results = await compareTimed(
    [
      { name: 'herald', run: () => sendToAll('herald', auth) },
      { name: 'herald-dkim', run: () => sendToAll('herald-dkim', rsaAuth) },
      { name: 'herald-dkim-ed25519', run: () => sendToAll('herald-dkim-ed25519', edAuth) },
      {
        name: 'nodemailer',
        run: async () => {
          const t0 = performance.now();
          await bare(addresses);
          const ms = performance.now() - t0;
          await expectAll('nodemailer');
          return ms;
        },
      },
    ],
    ROUNDS,
    CONTACTS,
  );
  transport.close();
  const h = median(results.herald!);
  const b = median(results.nodemailer!);
  const d = median(results['herald-dkim']!);
  const e = median(results['herald-dkim-ed25519']!);
  console.log(`herald     median ${h.toFixed(0)} msg/s; signed RSA median ${d.toFixed(0)} msg/s; signed Ed25519 median ${e.toFixed(0)} msg/s; nodemailer median ${b.toFixed(0)} msg/s`);
  console.log(`dkim: ${(d / h).toFixed(3)} (signed RSA msg/s / unsigned msg/s; goal >= 0.90)`);
  console.log(`dkim-ed25519: ${(e / h).toFixed(3)} (signed Ed25519 msg/s / unsigned msg/s; goal >= 0.90)`);
  summary({ goal: '>= 0.80', spread: ['herald', results.herald!, 'baseline', results.nodemailer!, 'msg/s'] });
  console.log(`ratio: ${(h / b).toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await sink.stop();
  await db.stop();
}
