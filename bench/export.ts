// GET /contacts/export of 1,000,000 contacts (three attributes, two tags, one or two groups each)
// against `COPY (SELECT <the stored columns> FROM contacts WHERE organization_id = ...) TO STDOUT
// (FORMAT csv)` of the same rows through pg-copy-streams, each read to its end by this process, in
// interleaved rounds after an untimed warm-up. Prints the rates (contacts/s), Herald's peak resident
// memory, and `ratio: <export rate / COPY rate>`; the goal is the export at half COPY's rate at least.
// Once, for scale, it also times COPY writing the export's own content (each contact's group names
// looked up per contact, consent, one column per attribute, ISO times): what Postgres alone takes
// for the same file, in one COPY and in two at once over the two halves of the contacts (the
// floor: the least work the export does, on both cores).
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { freshDatabase, median, memoryOf, signup, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await freshDatabase('export');
const env = {
  DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox',
  JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
};
const herald = await startProcess('src/main.ts', env, 4731, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

/** Reads a stream to its end, counting its bytes and lines. */
function counter() {
  let bytes = 0;
  let lines = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      done();
    },
  });
  return { sink, totals: () => ({ bytes, lines }) };
}

try {
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const groups: string[] = [];
  for (const name of ['North', 'South', 'East', 'West', 'VIP']) {
    const g = (await fetch(`${herald.url}/groups`, { method: 'POST', headers: auth, body: JSON.stringify({ name, color: 'bg-blue-500' }) }).then((r) => r.json())) as { _id: string };
    groups.push(g._id);
  }
  const seeded = performance.now();
  await pool.query(
    `INSERT INTO contacts (organization_id, name, email, phone, company, tags, attributes, created_at)
     SELECT $1, 'Contact ' || i, 'contact' || i || '@example.com', '+2547' || lpad((10000000 + i)::text, 8, '0'),
            CASE WHEN i % 10 = 0 THEN 'Acme, Inc' END, ARRAY['bench', CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END],
            jsonb_build_object('plan', (ARRAY['gold', 'silver', 'basic'])[1 + i % 3], 'seats', i % 50, 'trial', i % 7 = 0),
            timestamptz '2026-01-01' + i * interval '1 millisecond'
     FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  // Each contact in one of four regions, and every third one also in VIP.
  await pool.query(
    `INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
     SELECT $1, id, ($2::uuid[])[1 + abs(hashtext(id::text)) % 4], created_at FROM contacts WHERE organization_id = $1
     UNION ALL
     SELECT $1, id, $3, created_at FROM contacts WHERE organization_id = $1 AND abs(hashtext(id::text)) % 3 = 0`,
    [orgId, groups.slice(0, 4), groups[4]],
  );
  await pool.query('UPDATE contacts SET unsubscribed = $2 WHERE organization_id = $1 AND phone LIKE $3', [orgId, JSON.stringify({ sms: { at: new Date().toISOString(), source: 'api' } }), '%7']);
  await pool.query('VACUUM ANALYZE contacts');
  await pool.query('VACUUM ANALYZE contact_groups');
  console.log(`export: ${CONTACTS} contacts seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s; ${ROUNDS} rounds after a warm-up`);

  const before = memoryOf(herald.child.pid!);

  /** The export through Herald, read to its end; its milliseconds and what it held. */
  async function exportRun() {
    const t0 = performance.now();
    const res = await fetch(`${herald.url}/contacts/export`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`export: ${res.status} ${await res.text()}`);
    const { sink, totals } = counter();
    await pipeline(res.body as unknown as AsyncIterable<Uint8Array>, sink);
    return { ms: performance.now() - t0, ...totals() };
  }

  /** The baseline: Postgres writing the same rows' stored columns as CSV itself. */
  async function copyRun() {
    const client = await pool.connect();
    const t0 = performance.now();
    try {
      const { sink, totals } = counter();
      await pipeline(
        client.query(
          copyTo(
            `COPY (SELECT id, name, email, phone, country_code, company, tags, attributes, unsubscribed, created_at, updated_at
                   FROM contacts WHERE organization_id = '${orgId}') TO STDOUT (FORMAT csv)`,
          ),
        ),
        sink,
      );
      return { ms: performance.now() - t0, ...totals() };
    } finally {
      client.release();
    }
  }

  /**
   * Postgres writing the export's content itself, in the same order: in one COPY, or (`halves`)
   * in two at once, each over half of the contacts (split at the median creation time), as the
   * least work the export does on both of the machine's cores.
   */
  async function sameContentRun(halves = false) {
    const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    // Group names aggregated once over the memberships and joined, as the export does (a lookup per contact costs twice as much).
    const content = (range: (column: string) => string) =>
      `COPY (SELECT c.id, c.name, c.email, c.phone, c.country_code, c.company, array_to_string(c.tags, '|'), m.names,
                    ${['email', 'sms', 'whatsapp'].map((ch) => `CASE WHEN (c.unsubscribed -> '${ch}') IS NULL THEN 'subscribed' ELSE 'unsubscribed' END`).join(', ')},
                    c.attributes ->> 'plan', c.attributes ->> 'seats', c.attributes ->> 'trial', ${iso('c.created_at')}, ${iso('c.updated_at')}
             FROM contacts c
             LEFT JOIN (SELECT cg.contact_id, string_agg(g.name, '|' ORDER BY g.name) AS names
                        FROM contact_groups cg JOIN groups g ON g.organization_id = '${orgId}' AND g.id = cg.group_id
                        WHERE cg.organization_id = '${orgId}' ${range('cg.contact_created_at')} GROUP BY cg.contact_id) m ON m.contact_id = c.id
             WHERE c.organization_id = '${orgId}' ${range('c.created_at')} ORDER BY c.created_at DESC, c.id DESC) TO STDOUT (FORMAT csv)`;
    const { rows } = await pool.query(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY created_at)::text AS mid FROM contacts WHERE organization_id = $1`, [orgId]);
    const mid = rows[0].mid as string;
    const parts = halves ? [(column: string) => `AND ${column} < '${mid}'`, (column: string) => `AND ${column} >= '${mid}'`] : [() => ''];
    const t0 = performance.now();
    const totals = await Promise.all(
      parts.map(async (range) => {
        const client = await pool.connect();
        try {
          const { sink, totals } = counter();
          await pipeline(client.query(copyTo(content(range))), sink);
          return totals();
        } finally {
          client.release();
        }
      }),
    );
    return { ms: performance.now() - t0, bytes: totals.reduce((n, t) => n + t.bytes, 0), lines: totals.reduce((n, t) => n + t.lines, 0) };
  }

  const rates = { herald: [] as number[], copy: [] as number[] };
  for (let round = 0; round <= ROUNDS; round++) {
    const order = round % 2 ? (['copy', 'herald'] as const) : (['herald', 'copy'] as const);
    for (const who of order) {
      const run = who === 'herald' ? await exportRun() : await copyRun();
      const rows = who === 'herald' ? run.lines - 1 : run.lines;
      if (rows !== CONTACTS) throw new Error(`${who}: ${rows} rows, not ${CONTACTS}`);
      const rate = (CONTACTS / run.ms) * 1000;
      if (round) rates[who].push(rate);
      console.log(`  ${round ? `round ${round}` : 'warm-up'} ${who.padEnd(6)} ${run.ms.toFixed(0).padStart(6)} ms  ${rate.toFixed(0).padStart(7)} contacts/s  ${(run.bytes / 1e6).toFixed(0)} MB`);
    }
  }
  const after = memoryOf(herald.child.pid!);
  const h = median(rates.herald);
  const c = median(rates.copy);
  const same = await sameContentRun();
  const sameRate = (CONTACTS / same.ms) * 1000;
  const both = await sameContentRun(true);
  if (both.lines !== CONTACTS) throw new Error(`the two halves wrote ${both.lines} rows, not ${CONTACTS}`);
  const bothRate = (CONTACTS / both.ms) * 1000;
  console.log(`export median ${h.toFixed(0)} contacts/s; COPY median ${c.toFixed(0)} contacts/s`);
  console.log(`COPY of the export's own content: ${same.ms.toFixed(0)} ms, ${sameRate.toFixed(0)} contacts/s (${(sameRate / c).toFixed(2)} of COPY; the export at ${(h / sameRate).toFixed(2)}x of it)`);
  console.log(
    `the same content by two COPYs at once (both cores): ${both.ms.toFixed(0)} ms, ${bothRate.toFixed(0)} contacts/s, ${(bothRate / c).toFixed(2)} of COPY: ` +
      `the floor of the export on this machine (the export at ${(h / bothRate).toFixed(2)}x of it)`,
  );
  console.log(`Herald's memory: ${before.rss.toFixed(0)} MiB resident before the exports, ${after.rss.toFixed(0)} MiB after; peak ${after.peak.toFixed(0)} MiB (VmHWM)`);
  summary({ goal: '>= 0.5', spread: ['herald', rates.herald, 'baseline', rates.copy, 'contacts/s'] });
  console.log(`ratio: ${(h / c).toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
}
