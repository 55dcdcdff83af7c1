// One send to every contact, BENCH_CONTACTS of them (1,000,000 by default), SMS in sandbox mode,
// its answer read by this process as a stream: each item counted and checked a success, the whole
// array parsed. Timed from the request to the answer's last byte. Herald's memory is read from
// /proc: its resident set idle before the send (VmRSS) and its peak (VmHWM) after. Beside it, in
// the same run, a bare node:http + pg server (bench/baseline/send-to-all-server.ts) writes the same
// items for the same contacts from keyset pages: its peak is the floor of writing such an answer.
// Prints `ratio: <Herald's peak VmHWM in MiB>`; the goal is at most 300 MiB (idle is about 200).
import pg from 'pg';
import { freshDatabase, heraldEnv, memoryOf, signup, startProcess, summary, type Proc } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);

/** POSTs to `url` and reads the answer as it comes: its size, its chunks, its items (each a success), in ms. */
async function readAnswer(url: string, headers: Record<string, string>, body: unknown) {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  let chunks = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    chunks++;
    parts.push(decoder.decode(chunk, { stream: true }));
  }
  const ms = performance.now() - started;
  const items = JSON.parse(parts.join('') + decoder.decode()) as { recipient: string; status: string }[];
  if (items.length !== CONTACTS) throw new Error(`${url}: ${items.length} items, not ${CONTACTS}`);
  const failed = items.filter((i) => i.status !== 'success');
  if (failed.length) throw new Error(`${url}: ${failed.length} items not a success, the first ${JSON.stringify(failed[0])}`);
  for (let i = 1; i < items.length; i++) if (!(items[i - 1]!.recipient < items[i]!.recipient)) throw new Error(`${url}: item ${i} out of order`);
  return { ms, bytes, chunks };
}

const db = await freshDatabase('send_to_all');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
let herald: Proc | null = null;
let baseline: Proc | null = null;
try {
  herald = await startProcess(
    'src/main.ts',
    heraldEnv(db.url),
    4793,
    '/ready',
  );
  const { token, orgId } = await signup(herald.url);
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  // Numbers ending in 5: never one the sandbox fails (0000) or reports undelivered (0001).
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone) SELECT $1, 'Contact ' || i, '+2547' || (10000005 + i * 10)::text FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  // As autovacuum leaves a table a minute after a bulk import: statistics and the visibility map current.
  await pool.query('VACUUM ANALYZE contacts');
  baseline = await startProcess('bench/baseline/send-to-all-server.ts', { DATABASE_URL: db.url, BENCH_ORG_ID: orgId }, 4794);
  console.log(`send-to-all: ${CONTACTS.toLocaleString('en')} contacts, one SMS each, sandbox delivery`);

  const pid = herald.child.pid!;
  const idle = memoryOf(pid).rss;
  console.log(`herald idle: VmRSS ${idle.toFixed(0)} MiB, VmHWM so far ${memoryOf(pid).peak.toFixed(0)} MiB`);
  const sent = await readAnswer(`${herald.url}/notifications/send-to-all`, { authorization: `Bearer ${token}` }, { type: 'sms', to: 'all', message: 'Benchmark' });
  const peak = memoryOf(pid).peak;
  const logs = await pool.query<{ n: number; unsettled: number; spent: string }>(
    'SELECT count(*)::int AS n, count(*) FILTER (WHERE settled_at IS NULL)::int AS unsettled, sum(cost) AS spent FROM message_logs WHERE organization_id = $1',
    [orgId],
  );
  const { n, unsettled, spent } = logs.rows[0]!;
  if (unsettled || Number(spent) !== CONTACTS) throw new Error(`${n} logs, ${unsettled} unsettled, ${spent} credits spent for ${CONTACTS} recipients`);
  console.log(
    `herald: ${(sent.ms / 1000).toFixed(1)} s, ${(CONTACTS / (sent.ms / 1000)).toFixed(0)} recipients/s, answer ${(sent.bytes / 1024 / 1024).toFixed(1)} MiB in ${sent.chunks} reads, ${n} logs; peak VmHWM ${peak.toFixed(0)} MiB (${(peak - idle).toFixed(0)} over idle)`,
  );

  const bpid = baseline.child.pid!;
  const bidle = memoryOf(bpid).rss;
  const bare = await readAnswer(`${baseline.url}/send-to-all`, {}, {});
  const bpeak = memoryOf(bpid).peak;
  console.log(
    `baseline (node:http + pg, the answer alone): ${(bare.ms / 1000).toFixed(1)} s, answer ${(bare.bytes / 1024 / 1024).toFixed(1)} MiB; idle VmRSS ${bidle.toFixed(0)} MiB, peak VmHWM ${bpeak.toFixed(0)} MiB`,
  );
  summary({ goal: '<= 300' });
  console.log(`ratio: ${peak.toFixed(0)}`);
} finally {
  await baseline?.stop();
  await herald?.stop();
  await pool.end();
  await db.stop();
}
