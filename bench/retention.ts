// Retention's purge beside sending: an organization's campaign to 100,000 contacts (sandbox
// delivery, launch until completed) alone, and while the retention job's purge deletes 1,000,000
// logged recipients (10,000 logs of 100 written 400 days ago, 100,000 receipts with them) of the
// same organization, in the job's own batches, rounds alternating which goes first. Prints each
// batch's longest statement (the longest any of its locks is held: each is a statement of its
// own), and `ratio: <campaign alone / campaign beside the purge>` (goal >= 0.909: at most 10%
// slower).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb } from '../src/db/database.js';
import { purgeOrganization } from '../src/modules/retention/service.js';
import { freshDatabase, median, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const OLD_LOGS = Number(process.env.BENCH_OLD_LOGS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DAY_MS = 86_400_000;

/** `$2` logs of 100 recipients of organization `$1` written 400 days ago, and a receipt for one recipient in ten. */
const SEED = `
  WITH logs AS (
    INSERT INTO message_logs (organization_id, id, channel, recipients, pending_count, success_count, failed_count, message_preview, message_length, unit_cost, cost, settled_at, created_at)
    SELECT $1, gen_random_uuid(), 'sms', r.recipients, 0, 100, 0, 'Old', 3, 1, 100, now() - interval '400 days' + i * interval '1 second', now() - interval '400 days' + i * interval '1 second'
    FROM generate_series(1, $2::int) AS i
    CROSS JOIN LATERAL (SELECT json_agg('+2547' || lpad((i % 1000 * 100 + p)::text, 8, '0') ORDER BY p) AS recipients FROM generate_series(0, 99) AS p) r
    RETURNING id, created_at)
  INSERT INTO recipient_receipts (organization_id, log_id, position, delivered_at)
  SELECT $1, l.id, p, l.created_at + interval '5 seconds' FROM logs l CROSS JOIN generate_series(1, 100, 10) AS p`;

const db = await freshDatabase('retention');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'), DATABASE_POOL_MAX: '20' };
const herald = await startProcess('src/main.ts', env, 4751, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const knex = createDb(db.url, 2);
try {
  const signup = (await fetch(`${herald.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password', countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE' }),
  }).then((r) => r.json())) as { token: string; user: { organization: string } };
  const auth = { authorization: `Bearer ${signup.token}`, 'content-type': 'application/json' };
  const orgId = signup.user.organization;
  // The longest retention, so that Herald's own daily job leaves the old rows to the bench.
  await pool.query('UPDATE organizations SET retention_days = 3650 WHERE id = $1', [orgId]);
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone) SELECT $1, 'Contact ' || i, '+2547' || lpad((20000000 + i)::text, 8, '0') FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  await pool.query('VACUUM ANALYZE contacts');
  console.log(`retention: a campaign to ${CONTACTS.toLocaleString('en')} contacts, alone and beside the purge of ${(OLD_LOGS * 100).toLocaleString('en')} logged recipients (${OLD_LOGS.toLocaleString('en')} logs, ${(OLD_LOGS * 10).toLocaleString('en')} receipts); ${ROUNDS} rounds`);

  async function receiptsDone(id: string) {
    for (const start = Date.now(); Date.now() - start < 120_000; await new Promise((r) => setTimeout(r, 100))) {
      const { rows } = await pool.query(
        `SELECT (SELECT sent FROM campaigns WHERE organization_id = $1 AND id = $2) AS sent, (SELECT count(*)::int FROM recipient_receipts WHERE organization_id = $1 AND campaign_id = $2) AS reported`,
        [orgId, id],
      );
      if (rows[0].reported >= rows[0].sent) return;
    }
    throw new Error(`campaign ${id}: its receipts did not arrive within 2 minutes`);
  }

  async function campaign(name: string): Promise<{ id: string; ms: number }> {
    const created = (await fetch(`${herald.url}/campaigns`, { method: 'POST', headers: auth, body: JSON.stringify({ name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Benchmark' } } }) }).then((r) => r.json())) as { _id: string };
    const t0 = performance.now();
    const launched = (await fetch(`${herald.url}/campaigns/${created._id}/launch`, { method: 'POST', headers: auth }).then((r) => r.json())) as { status: string };
    if (launched.status !== 'active' && launched.status !== 'completed') throw new Error(`launch: ${JSON.stringify(launched)}`);
    for (;;) {
      const { rows } = await pool.query('SELECT status FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, created._id]);
      if (rows[0].status === 'completed') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return { id: created._id, ms: performance.now() - t0 };
  }

  const alone: number[] = [];
  const beside: number[] = [];
  const purges: { ms: number; rows: number; longest: number; statements: number }[] = [];
  // Round 0 warms both up, untimed.
  for (let round = 0; round <= ROUNDS; round++) {
    const t = performance.now();
    await pool.query(SEED, [orgId, OLD_LOGS]);
    await pool.query('VACUUM ANALYZE message_logs, recipient_receipts');
    const seeded = performance.now() - t;
    const order = round % 2 ? ['beside', 'alone'] : ['alone', 'beside'];
    for (const kind of order) {
      if (kind === 'alone') {
        const run = await campaign(`alone ${round}`);
        await receiptsDone(run.id);
        if (round) alone.push(run.ms);
        continue;
      }
      let longest = 0;
      let statements = 0;
      const p0 = performance.now();
      const purge = purgeOrganization(knex, orgId, new Date(Date.now() - 395 * DAY_MS), undefined, (_table, _deleted, ms) => {
        longest = Math.max(longest, ms);
        statements++;
      });
      const run = await campaign(`beside ${round}`);
      const counts = await purge;
      const purgeMs = performance.now() - p0;
      await receiptsDone(run.id);
      if (round) {
        beside.push(run.ms);
        purges.push({ ms: purgeMs, rows: Object.values(counts).reduce((a, b) => a + b, 0), longest, statements });
      }
      console.log(`  round ${round}: seeded in ${(seeded / 1000).toFixed(1)} s; beside the purge ${run.ms.toFixed(0)} ms; the purge ${purgeMs.toFixed(0)} ms, ${counts.message_logs} logs in ${statements} statements, the longest ${longest.toFixed(0)} ms`);
    }
    if (round) console.log(`  round ${round}: alone ${alone.at(-1)!.toFixed(0)} ms`);
  }
  const [a, b] = [median(alone), median(beside)];
  console.log(`campaign alone: median ${a.toFixed(0)} ms (${alone.map((x) => x.toFixed(0)).join(', ')}); beside the purge: median ${b.toFixed(0)} ms (${beside.map((x) => x.toFixed(0)).join(', ')}): ${(((b - a) / a) * 100).toFixed(1)}% slower (goal <= 10%)`);
  console.log(`purge: ${purges.map((p) => `${(p.ms / 1000).toFixed(1)} s`).join(', ')}; its longest statement ${Math.max(...purges.map((p) => p.longest)).toFixed(0)} ms (goal: no lock held over 1,000 ms)`);
  summary({ goal: '>= 0.909', spread: ['alone', alone, 'beside', beside, 'ms'] });
  console.log(`ratio: ${(a / b).toFixed(3)}`);
} finally {
  await knex.destroy();
  await pool.end();
  await herald.stop();
  await db.stop();
}
