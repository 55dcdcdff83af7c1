import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { createDatabase, dropDatabase } from '../../tests/setup/databases.js';

export interface Database {
  url: string;
  stop(): Promise<void>;
}

/**
 * A fresh database for one bench run: on `DATABASE_URL`'s server, or an embedded Postgres. Made as the
 * tests make theirs (`tests/setup/databases.ts`), so that on a Citus coordinator it joins the cluster
 * and Herald's migrations distribute its tables.
 */
export async function freshDatabase(label: string): Promise<Database> {
  let admin = process.env.DATABASE_URL;
  let stopServer = async () => {};
  if (!admin) {
    const dir = mkdtempSync(path.join(tmpdir(), `herald-bench-${label}-`));
    const server = await startEmbeddedPostgres(dir, 'postgres');
    admin = server.url;
    // The data directory goes with the server: a bench run leaves nothing behind (~100 MB each).
    stopServer = async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const adminUrl = admin;
  const name = `herald_bench_${label}_${Date.now()}`;
  const url = await createDatabase(adminUrl, name);
  return {
    url,
    async stop() {
      await dropDatabase(adminUrl, name);
      await stopServer();
    },
  };
}

/** CPU time (user + system, ms) a process has taken so far, from /proc (Linux); 0 when it is gone. */
function cpuOf(pid: number | string): number {
  try {
    // Fields after the command (which may hold spaces) start at its closing parenthesis: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
const CLOCK_TICKS = 100;

/**
 * CPU taken so far by the process `pid` (Herald) and by every Postgres process on the machine, in
 * ms: read before and after a round, it says where the round's work went, which is steadier than
 * wall time on a shared machine. (Postgres backends that ended meanwhile are not counted.)
 */
export function cpuNow(pid: number): { herald: number; postgres: number } {
  let postgres = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') postgres += cpuOf(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return { herald: cpuOf(pid), postgres };
}

/**
 * A process's resident memory now and its peak since it started (`VmRSS`, `VmHWM` of
 * `/proc/<pid>/status`, in MiB): the peak is the kernel's own, so nothing between two samples is missed.
 */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** What Herald runs with in a bench: the database, production mode, sandbox delivery, fresh secrets, no logs. */
export function heraldEnv(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    DELIVERY_MODE: 'sandbox',
    JWT_SECRET: randomBytes(32).toString('hex'),
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
}

export interface Proc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The Node flags and environment `npm start` runs Herald with (package.json's start script), so
 * that a bench measures Herald as it is deployed. Other entry points (baselines, fakes) run with
 * Node's defaults.
 */
const START = (JSON.parse(readFileSync('package.json', 'utf8')).scripts.start as string).split(/\s+/);
const HERALD_FLAGS = START.filter((a) => /^--[\w-]+/.test(a) && a !== '--import');
const HERALD_ENV = Object.fromEntries(START.slice(0, START.indexOf('node')).map((a) => a.split('=') as [string, string]));

/** Runs a TypeScript entry point as its own process and waits until `readyPath` answers. */
export async function startProcess(entry: string, env: Record<string, string>, port: number, readyPath = '/health'): Promise<Proc> {
  // BENCH_HERALD_FLAGS adds Node flags to Herald's processes only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const flags = entry.startsWith('src/') ? [...HERALD_FLAGS, ...(process.env.BENCH_HERALD_FLAGS ?? '').split(/\s+/).filter(Boolean)] : [];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', entry], {
    env: { ...process.env, ...(entry.startsWith('src/') && HERALD_ENV), ...env, PORT: String(port), NODE_OPTIONS: '' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}`);
    try {
      if ((await fetch(url + readyPath)).ok) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface LoadResult {
  rps: number;
  p99: number;
  errors: number;
}

export async function load(url: string, headers: Record<string, string>, seconds: number, connections: number, extra: Partial<autocannon.Options> = {}): Promise<LoadResult> {
  const result = await autocannon({ url, headers, duration: seconds, connections, ...extra });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const spread = (xs: number[]) => (xs.length ? `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}` : '-');

/**
 * Interleaved rounds of two contenders under the same load, alternating which goes first, so
 * drift in the machine's state touches both alike.
 */
export async function compare(
  contenders: { name: string; run: () => Promise<LoadResult> }[],
  rounds: number,
): Promise<Record<string, LoadResult[]>> {
  const results: Record<string, LoadResult[]> = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const res = await c.run();
      results[c.name]!.push(res);
      console.log(`  round ${r + 1} ${c.name.padEnd(10)} ${res.rps.toFixed(0).padStart(6)} req/s  p99 ${res.p99} ms  errors ${res.errors}`);
    }
  }
  return results;
}

export function report(results: Record<string, LoadResult[]>, herald: string, baseline: string): number {
  const h = results[herald]!;
  const b = results[baseline]!;
  const ratio = median(h.map((x) => x.rps)) / median(b.map((x) => x.rps));
  for (const [name, xs] of Object.entries(results)) {
    console.log(
      `${name.padEnd(10)} median ${median(xs.map((x) => x.rps)).toFixed(0)} req/s (spread ${spread(xs.map((x) => x.rps))}), p99 median ${median(xs.map((x) => x.p99))} ms, errors ${xs.reduce((n, x) => n + x.errors, 0)}`,
    );
  }
  return ratio;
}

/** Signs up a fresh organization (its admin user) and returns the admin's token and the organization id. */
export async function signup(baseUrl: string): Promise<{ token: string; orgId: string }> {
  const res = await fetch(`${baseUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE',
    }),
  });
  if (res.status !== 201) throw new Error(`signup: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { token: string; user: { organization: string } };
  return { token: body.token, orgId: body.user.organization };
}

/**
 * The parseable summary lines `npm run bench` puts in its table (keep `ratio:` the last line):
 *   goal: >= 0.80
 *   p99: herald=12.3ms baseline=9.8ms
 *   spread: herald=700-760 baseline=790-830 req/s
 */
export function summary(lines: { goal: string; p99?: [string, number, string, number]; spread?: [string, number[], string, number[], string] }) {
  console.log(`goal: ${lines.goal}`);
  if (lines.p99) console.log(`p99: ${lines.p99[0]}=${lines.p99[1].toFixed(1)}ms ${lines.p99[2]}=${lines.p99[3].toFixed(1)}ms`);
  if (lines.spread) console.log(`spread: ${lines.spread[0]}=${spread(lines.spread[1])} ${lines.spread[2]}=${spread(lines.spread[3])} ${lines.spread[4]}`);
}

/**
 * Interleaved rounds of two contenders doing the same fixed amount of work (`units` messages):
 * each run returns its elapsed milliseconds; printed and returned as units per second.
 */
export async function compareTimed(
  contenders: { name: string; run: () => Promise<number> }[],
  rounds: number,
  units: number,
): Promise<Record<string, number[]>> {
  const results: Record<string, number[]> = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const ms = await c.run();
      const rate = (units / ms) * 1000;
      results[c.name]!.push(rate);
      console.log(`  round ${r + 1} ${c.name.padEnd(10)} ${ms.toFixed(0).padStart(6)} ms  ${rate.toFixed(0).padStart(6)} msg/s`);
    }
  }
  return results;
}
