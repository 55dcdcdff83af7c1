// Authentication's share of a request's CPU, for a JWT and for an API key.
//  - Request CPU: Herald's process CPU time (utime + stime from /proc) over an autocannon run against a
//    cheap authenticated endpoint (GET /groups?limit=10, 3 groups), divided by the requests answered. It
//    includes everything Herald does for a request (HTTP, routing, authentication, the groups query,
//    JSON), so a cheap endpoint makes authentication's share look as large as it gets.
//  - Auth CPU: the same `authenticate()` Herald runs on every request (src/modules/auth/authenticate.ts:
//    token verification or key check and hash, plus the user or key row through the caller cache as
//    Herald builds it: reused for AUTH_CACHE_MS, dropped on change), called in this process 10 at a
//    time (as under load), CPU time per call. The harness's
//    own cost per call (p-map and an awaited no-op, measured the same way) is subtracted; it is not
//    authentication's. Measured in ROUNDS interleaved rounds after the load runs; the median counts.
//  - Also shown, not graded: the credential check alone (jsonwebtoken verify with a KeyObject; key
//    format, checksum and SHA-256), without the row lookup; and authenticate() with the cache off, what
//    a request pays whose row is not cached (once per AUTH_CACHE_MS per credential, or after a change).
// Both sides count Node's CPU only: Postgres's own CPU (parsing, planning and reading the row) is
// counted on neither side. What the row lookup costs Node (pool, protocol, socket, parsing) is counted
// as auth. Share = auth CPU / request CPU; the goal is <= 2%.
// Prints `ratio: <0.02 / the larger of the two shares>` (higher is better; >= 1 meets the goal).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pMap from 'p-map';
import pino from 'pino';
import type { Deps } from '../src/context.js';
import { createDb } from '../src/db/database.js';
import { hashApiKey, isWellFormedApiKey } from '../src/modules/api-keys/format.js';
import { KeyUsage } from '../src/modules/api-keys/usage.js';
import { authenticate } from '../src/modules/auth/authenticate.js';
import { CallerCache } from '../src/modules/auth/caller-cache.js';
import { TokenService } from '../src/modules/auth/tokens.js';
import { freshDatabase, load, median, signup, startProcess, summary } from './lib/harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20_000);
const GOAL = 0.02;

const TICKS_PER_MS = 100 / 1000; // USER_HZ is 100 on Linux
const cpuMsOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_MS; // utime, stime
};

const db = await freshDatabase('auth');
const jwtSecret = randomBytes(32).toString('hex');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: jwtSecret, CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4751, '/ready');
const knex = createDb(db.url, 10);
try {
  const { token } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  for (const name of ['VIP', 'Leads', 'Staff']) await fetch(`${herald.url}/groups`, { method: 'POST', headers: auth, body: JSON.stringify({ name, color: 'bg-blue-500' }) });
  const created = (await fetch(`${herald.url}/api-keys`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench' }) }).then((r) => r.json())) as { key: string };
  const key = created.key;
  const credentials = {
    jwt: { header: { authorization: `Bearer ${token}` }, creds: { authorization: `Bearer ${token}` } },
    apiKey: { header: { 'unified-api-key': key }, creds: { headerKey: key } },
  } as const;
  const url = `${herald.url}/groups?limit=10`;
  for (const c of Object.values(credentials)) if ((await fetch(url, { headers: c.header })).status !== 200) throw new Error('endpoint refused the credential');

  // Request CPU, interleaved rounds, after a warm-up of each credential so JIT compilation is not billed to round 1.
  for (const c of Object.values(credentials)) await load(url, c.header, 2, CONNECTIONS);
  const perRequest: Record<string, number[]> = { jwt: [], apiKey: [] };
  const p99s: Record<string, number[]> = { jwt: [], apiKey: [] };
  const pid = herald.child.pid!;
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of (r % 2 ? ['apiKey', 'jwt'] : ['jwt', 'apiKey']) as ('jwt' | 'apiKey')[]) {
      const before = cpuMsOf(pid);
      const res = await load(url, credentials[name].header, SECONDS, CONNECTIONS);
      const cpu = cpuMsOf(pid) - before;
      const requests = res.rps * SECONDS;
      if (res.errors) throw new Error(`${name}: ${res.errors} errors`);
      perRequest[name]!.push((cpu / requests) * 1000);
      p99s[name]!.push(res.p99);
      console.log(`  round ${r + 1} ${name.padEnd(7)} ${res.rps.toFixed(0).padStart(6)} req/s  p99 ${res.p99} ms  Herald CPU ${((cpu / requests) * 1000).toFixed(0)} µs/request`);
    }
  }

  // Auth CPU in this process: the function Herald calls, then the credential check alone.
  const tokens = new TokenService(jwtSecret, '24h');
  // As Herald builds it (AUTH_CACHE_MS's default, listening for changes), and with the cache off: the
  // latter is what a request pays when its row is not cached (the first in 2 s, or after a change).
  const callers = new CallerCache(2000);
  await callers.listen(db.url);
  const keyUsage = new KeyUsage(knex, pino({ level: 'silent' }));
  const deps = { db: knex, keyUsage, callers } as unknown as Deps;
  const uncachedDeps = { db: knex, keyUsage, callers: new CallerCache(0) } as unknown as Deps;
  const cpuPerCall = async (fn: () => unknown, n: number, concurrency = 10) => {
    await pMap(Array.from({ length: Math.min(n, 2000) }), fn, { concurrency }); // warm
    const t0 = process.cpuUsage();
    await pMap(Array.from({ length: n }), fn, { concurrency });
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / n; // µs
  };
  const calls = {
    jwt: () => authenticate(deps, tokens, credentials.jwt.creds),
    apiKey: () => authenticate(deps, tokens, credentials.apiKey.creds),
  };
  const authRuns: Record<string, number[]> = { jwt: [], apiKey: [] };
  const harnessRuns: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    harnessRuns.push(await cpuPerCall(async () => undefined, ITERATIONS));
    for (const name of (r % 2 ? ['apiKey', 'jwt'] : ['jwt', 'apiKey']) as ('jwt' | 'apiKey')[]) authRuns[name]!.push(await cpuPerCall(calls[name], ITERATIONS));
  }
  const harnessUs = median(harnessRuns);
  const authUs = { jwt: median(authRuns.jwt!) - harnessUs, apiKey: median(authRuns.apiKey!) - harnessUs };
  console.log(`  authenticate() µs/call by round: jwt ${authRuns.jwt!.map((x) => x.toFixed(1)).join(' ')}; apiKey ${authRuns.apiKey!.map((x) => x.toFixed(1)).join(' ')}; harness ${harnessUs.toFixed(1)} subtracted`);
  const missUs = {
    jwt: (await cpuPerCall(() => authenticate(uncachedDeps, tokens, credentials.jwt.creds), ITERATIONS)) - harnessUs,
    apiKey: (await cpuPerCall(() => authenticate(uncachedDeps, tokens, credentials.apiKey.creds), ITERATIONS)) - harnessUs,
  };
  const checkUs = {
    jwt: await cpuPerCall(() => tokens.verify(token), ITERATIONS * 5, 1),
    apiKey: await cpuPerCall(() => isWellFormedApiKey(key) && hashApiKey(key), ITERATIONS * 5, 1),
  };

  const share: Record<string, number> = {};
  for (const name of ['jwt', 'apiKey'] as const) {
    const req = median(perRequest[name]!);
    share[name] = authUs[name] / req;
    console.log(
      `${name.padEnd(7)} request ${req.toFixed(0)} µs CPU (spread ${Math.min(...perRequest[name]!).toFixed(0)}-${Math.max(...perRequest[name]!).toFixed(0)}); ` +
        `authenticate() ${authUs[name].toFixed(1)} µs = ${(share[name] * 100).toFixed(2)}%; credential check alone ${checkUs[name].toFixed(1)} µs = ${((checkUs[name] / req) * 100).toFixed(2)}%; ` +
        `uncached (row read from Postgres) ${missUs[name].toFixed(1)} µs = ${((missUs[name] / req) * 100).toFixed(2)}%`,
    );
  }
  console.log(`auth share: jwt=${(share.jwt! * 100).toFixed(2)}% apiKey=${(share.apiKey! * 100).toFixed(2)}% (goal <= 2%)`);
  summary({ goal: '>= 1.00', p99: ['jwt', median(p99s.jwt!), 'apiKey', median(p99s.apiKey!)] });
  console.log(`ratio: ${(GOAL / Math.max(share.jwt!, share.apiKey!)).toFixed(3)}`);
  await callers.close();
} finally {
  await knex.destroy();
  await herald.stop();
  await db.stop();
}
