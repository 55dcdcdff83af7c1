// GET /contacts (1,000 contacts in one page) on Herald against a bare node:http + pg server running
// Herald's list statement and writing the same JSON (checked equal), in interleaved autocannon rounds. Prints the figures and `ratio: <herald/bare>`, and
// before them `creates: <n> contacts/s`, the rate at which the 1,000 contacts were created through
// the API (the figure compared between Citus and plain Postgres: run it with each `DATABASE_URL`).
import { randomBytes } from 'node:crypto';
import { compare, freshDatabase, load, median, report, startProcess, summary } from './lib/harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const CONTACTS = 1000;
const CREATORS = 10;

const db = await freshDatabase('contacts');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4701, '/ready');
try {
  const signup = await fetch(`${herald.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE',
    }),
  }).then((r) => r.json() as Promise<any>);
  const token = signup.token as string;
  const orgId = signup.user.organization as string;
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  // 1,000 contacts through the API, 10 requests in flight, with a few groups among them: timed, the
  // creation rate is this bench's second figure (on Citus it is compared with a plain Postgres run).
  const groups: string[] = [];
  for (const name of ['VIP', 'Leads', 'Staff']) {
    const g = await fetch(`${herald.url}/groups`, { method: 'POST', headers: auth, body: JSON.stringify({ name, color: 'bg-blue-500' }) }).then((r) => r.json() as Promise<any>);
    groups.push(g._id);
  }
  const create = async (i: number) => {
    const res = await fetch(`${herald.url}/contacts`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: `Contact ${i}`,
        email: `contact${i}@example.com`,
        phone: `+2547${String(10000000 + i).slice(-8)}`,
        tags: ['bench', i % 2 ? 'odd' : 'even'],
        groups: [groups[i % 3]],
        attributes: { plan: ['gold', 'silver', 'basic'][i % 3], seats: i % 10 },
      }),
    });
    if (res.status !== 201) throw new Error(`seed failed: ${res.status}`);
  };
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CREATORS }, async () => {
    while (next < CONTACTS) await create(next++);
  }));
  const createsPerSecond = CONTACTS / ((performance.now() - started) / 1000);
  console.log(`creates: ${createsPerSecond.toFixed(0)} contacts/s (POST /contacts, ${CONTACTS} contacts, ${CREATORS} in flight)`);
  const bare = await startProcess('bench/baseline/contacts-server.ts', { DATABASE_URL: db.url, BENCH_ORG_ID: orgId }, 4702);
  try {
    const check = await fetch(`${herald.url}/contacts?limit=1000`, { headers: auth }).then((r) => r.json() as Promise<any>);
    // The baseline writes what Herald writes, byte for byte in content: the comparison is fair.
    const bareBody = await fetch(`${bare.url}/contacts`).then((r) => r.json());
    if (JSON.stringify(bareBody) !== JSON.stringify(check)) throw new Error('the baseline does not write what Herald writes');
    console.log(`contacts: GET /contacts?limit=1000 -> ${check.length} contacts; ${ROUNDS} rounds x ${SECONDS}s, ${CONNECTIONS} connections`);
    const results = await compare(
      [
        { name: 'herald', run: () => load(`${herald.url}/contacts?limit=1000`, { authorization: `Bearer ${token}` }, SECONDS, CONNECTIONS) },
        { name: 'bare', run: () => load(`${bare.url}/contacts`, {}, SECONDS, CONNECTIONS) },
      ],
      ROUNDS,
    );
    const ratio = report(results, 'herald', 'bare');
    summary({
      goal: '>= 0.90',
      p99: ['herald', median(results.herald!.map((r) => r.p99)), 'baseline', median(results.bare!.map((r) => r.p99))],
      spread: ['herald', results.herald!.map((r) => r.rps), 'baseline', results.bare!.map((r) => r.rps), 'req/s'],
    });
    console.log(`ratio: ${ratio.toFixed(3)}`);
  } finally {
    await bare.stop();
  }
} finally {
  await herald.stop();
  await db.stop();
}
