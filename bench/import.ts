// A contact import of 1,000,000 rows (BENCH_IMPORT_ROWS) from CSV (name, email, phone, two
// attributes, tags), timed from the upload's first byte until the import is `completed`, each Herald
// round into a fresh organization, so every round creates every contact. Prints the peak resident
// memory of Herald's process (`VmHWM` of /proc/<pid>/status: the kernel's own peak, from its start
// to the end of the last round) beside its memory once ready; the goal is at most 250 MiB, and the
// same at 100,000 rows as at 1,000,000.
//
// In the same rounds:
// - the floor (`ratio: <Herald time / floor time>`, goal at most 1.5): the rows of a bare
//   `COPY ... FROM STDIN (FORMAT csv)` of the file into a plain table of text columns (timed too),
//   already parsed and valid, written into `contacts` (with its indexes) by one bare
//   `INSERT ... SELECT` for another fresh organization: no parsing, checking, staging or matching;
// - the bare import: the least an import of this file does, done the barest way, for a third fresh
//   organization. This process parses the file with `csv-parse`, checks each phone with
//   `libphonenumber-js` and each email with a pattern, and streams the rows into `contacts` with one
//   `COPY`, Postgres writing while the file is parsed. Nothing is staged, matched against existing
//   contacts or deduplicated, no batch is its own transaction, and no row error is kept.
import { createReadStream, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { parse } from 'csv-parse';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { freshDatabase, heraldEnv, median, memoryOf, signup, startProcess, summary } from './lib/harness.js';

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
  heraldEnv(db.url),
  4791,
  '/ready',
);
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

const ready = memoryOf(herald.child.pid!);

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

async function heraldRound(): Promise<number> {
  const { token } = await signup(herald.url);
  {
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

/** COPY's text format for one field. */
const copyField = (value: string) => value.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The bare import (see the top): parsed, checked and copied into `contacts` in one stream. */
async function bareRound(): Promise<number> {
  const { orgId } = await signup(herald.url);
  const client = await pool.connect();
  try {
    const started = performance.now();
    let rows = 0;
    const lines = async function* (records: AsyncIterable<string[]>) {
      let out = '';
      for await (const [name, email, phone, plan, city, tags] of records) {
        const e164 = parsePhoneNumberFromString(phone!, 'KE');
        if (!e164?.isValid() || !EMAIL.test(email!)) continue;
        rows++;
        const attributes = JSON.stringify({ plan, city });
        out += `${orgId}\t${copyField(name!)}\t${copyField(email!.toLowerCase())}\t${e164.number}\t${copyField(attributes)}\t{${tags!.split('|').map((t) => `"${t}"`).join(',')}}\n`;
        if (out.length >= 64 * 1024) {
          yield out;
          out = '';
        }
      }
      if (out) yield out;
    };
    await pipeline(
      createReadStream(file),
      parse({ from_line: 2 }),
      lines,
      client.query(copyFrom('COPY contacts (organization_id, name, email, phone, attributes, tags) FROM STDIN')),
    );
    if (rows !== ROWS) throw new Error(`bare import: ${rows} rows written, not ${ROWS}`);
    return performance.now() - started;
  } finally {
    client.release();
  }
}

const copy: number[] = [];
const bare: number[] = [];
let memory = ready;
const imports: number[] = [];
const floors: number[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    copy.push(await copyRound());
    imports.push(await heraldRound());
    floors.push(await floorRound());
    bare.push(await bareRound());
    console.log(
      `  round ${r + 1}: COPY ${copy.at(-1)!.toFixed(0)} ms, Herald import ${imports.at(-1)!.toFixed(0)} ms (${(ROWS / (imports.at(-1)! / 1000)).toFixed(0)} rows/s), ` +
        `floor (bare INSERT ... SELECT into contacts) ${floors.at(-1)!.toFixed(0)} ms, bare import ${bare.at(-1)!.toFixed(0)} ms`,
    );
  }
} finally {
  memory = memoryOf(herald.child.pid!);
  await pool.end();
  await herald.stop();
  await db.stop();
  rmSync(file, { force: true });
}
console.log(`Herald's memory: ${ready.rss.toFixed(0)} MiB once ready; peak ${memory.peak.toFixed(0)} MiB (VmHWM; goal <= 250)`);
console.log(
  `medians: Herald ${median(imports).toFixed(0)} ms, COPY ${median(copy).toFixed(0)} ms (Herald ${(median(imports) / median(copy)).toFixed(1)}x), ` +
    `floor ${median(floors).toFixed(0)} ms (${(median(floors) / median(copy)).toFixed(1)}x COPY), bare import ${median(bare).toFixed(0)} ms (${(median(bare) / median(floors)).toFixed(2)}x the floor)`,
);
console.log(`the import at ${(median(imports) / median(floors)).toFixed(2)}x its floor (goal <= 1.5); per round ${imports.map((t, i) => `${(t / floors[i]!).toFixed(2)}x`).join(', ')}`);
summary({ goal: '<= 1.5', spread: ['herald', imports, 'floor', floors, 'ms'] });
console.log(`ratio: ${(median(imports) / median(floors)).toFixed(2)}`);
