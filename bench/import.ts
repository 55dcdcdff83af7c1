// A contact import of 1,000,000 rows (BENCH_IMPORT_ROWS) from CSV (name, email, phone, two
// attributes, tags), timed from the upload's first byte until the import is `completed`, against a
// bare `COPY ... FROM STDIN (FORMAT csv)` of the same file into a plain table of text columns.
// Prints Herald's peak resident memory (sampled every 100 ms) and `ratio: <Herald time / COPY time>`;
// the goal is at most 3x (and the memory under 300 MB). Each Herald round imports into a fresh
// organization, so every round creates every contact.
//
// Each round also times the floor of any import into Herald's table: the rows the COPY left, already
// parsed and valid, written into `contacts` (with its indexes) by one bare `INSERT ... SELECT` for
// another fresh organization, no parsing, checking, staging or matching. It shows how much of the
// import's time is the table's own cost, whatever Herald does before it.
import { randomBytes } from 'node:crypto';
import { createReadStream, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { freshDatabase, median, signup, spread, startProcess, summary } from './lib/harness.js';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const file = path.join(tmpdir(), `herald-import-${Date.now()}.csv`);
{
  const lines = ['name,email,phone,attributes.plan,attributes.city,tags'];
  for (let i = 0; i < ROWS; i++) {
    lines.push(`Person ${i},person.${i}@example.com,+2547${String(10_000_000 + i).slice(-8)},${i % 3 ? 'gold' : 'free'},Nairobi,customer|${i % 2 ? 'odd' : 'even'}`);
  }
  writeFileSync(file, lines.join('\n') + '\n');
}
const bytes = statSync(file).size;
console.log(`file: ${ROWS.toLocaleString('en')} rows, ${(bytes / 1024 / 1024).toFixed(1)} MiB`);

const db = await freshDatabase('import');
const herald = await startProcess(
  'src/main.ts',
  {
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    DELIVERY_MODE: 'sandbox',
    JWT_SECRET: randomBytes(32).toString('hex'),
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  },
  4791,
  '/ready',
);
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${herald.child.pid}/status`, 'utf8'))![1]) / 1024;

async function copyRound(): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('DROP TABLE IF EXISTS bare_import');
    await client.query('CREATE TABLE bare_import (name text, email text, phone text, plan text, city text, tags text)');
    const started = performance.now();
    await pipeline(createReadStream(file), client.query(copyFrom('COPY bare_import FROM STDIN (FORMAT csv, HEADER true)')));
    return performance.now() - started;
  } finally {
    client.release();
  }
}

let peak = 0;
async function heraldRound(): Promise<number> {
  const { token } = await signup(herald.url);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB())), 100);
  try {
    const started = performance.now();
    const res = await fetch(`${herald.url}/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
      body: createReadStream(file) as unknown as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    if (res.status !== 202) throw new Error(`import: ${res.status} ${await res.text()}`);
    const { _id } = (await res.json()) as { _id: string };
    for (;;) {
      const state = (await (await fetch(`${herald.url}/contact-imports/${_id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as Record<string, unknown>;
      if (state.status === 'completed') {
        if (state.created !== ROWS) throw new Error(`created ${String(state.created)} of ${ROWS}`);
        return performance.now() - started;
      }
      if (state.status !== 'queued' && state.status !== 'running') throw new Error(`import ${String(state.status)}: ${String(state.failure)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    clearInterval(sampler);
  }
}

/** The floor (see the top): the rows of `bare_import` into `contacts` for a fresh organization, in one statement. */
async function floorRound(): Promise<number> {
  const { orgId } = await signup(herald.url);
  const started = performance.now();
  const { rowCount } = await pool.query(
    `INSERT INTO contacts (organization_id, name, email, phone, attributes, tags)
     SELECT $1, name, email, phone, jsonb_build_object('plan', plan, 'city', city), string_to_array(tags, '|') FROM bare_import`,
    [orgId],
  );
  if (rowCount !== ROWS) throw new Error(`floor: ${rowCount} rows written, not ${ROWS}`);
  return performance.now() - started;
}

const copy: number[] = [];
const imports: number[] = [];
const floors: number[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    copy.push(await copyRound());
    imports.push(await heraldRound());
    floors.push(await floorRound());
    console.log(
      `  round ${r + 1}: COPY ${copy.at(-1)!.toFixed(0)} ms, Herald import ${imports.at(-1)!.toFixed(0)} ms (${(ROWS / (imports.at(-1)! / 1000)).toFixed(0)} rows/s), ` +
        `floor (bare INSERT ... SELECT into contacts) ${floors.at(-1)!.toFixed(0)} ms`,
    );
  }
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
  rmSync(file, { force: true });
}
console.log(`COPY median ${median(copy).toFixed(0)} ms; Herald median ${median(imports).toFixed(0)} ms; Herald peak RSS ${peak.toFixed(0)} MiB (goal < 300)`);
console.log(
  `floor median ${median(floors).toFixed(0)} ms: ${(median(floors) / median(copy)).toFixed(1)}x COPY for the rows alone written into contacts; ` +
    `the import at ${(median(imports) / median(floors)).toFixed(2)}x its floor`,
);
summary({ goal: '<= 3', spread: ['herald', imports, 'copy', copy, 'ms'] });
console.log(`ratio: ${(median(imports) / median(copy)).toFixed(2)}`);
