import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';

export interface Database {
  url: string;
  stop(): Promise<void>;
}

/** A fresh database for one bench run: on `DATABASE_URL`'s server, or an embedded Postgres. */
export async function freshDatabase(label: string): Promise<Database> {
  let admin = process.env.DATABASE_URL;
  let stopServer = async () => {};
  if (!admin) {
    const server = await startEmbeddedPostgres(mkdtempSync(path.join(tmpdir(), `herald-bench-${label}-`)), 'postgres');
    admin = server.url;
    stopServer = server.stop;
  }
  const name = `herald_bench_${label}_${Date.now()}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE "${name}"`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async stop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
      await stopServer();
    },
  };
}

export interface Proc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Runs a TypeScript entry point as its own process and waits until `readyPath` answers. */
export async function startProcess(entry: string, env: Record<string, string>, port: number, readyPath = '/health'): Promise<Proc> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, ...env, PORT: String(port), NODE_OPTIONS: '' },
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
