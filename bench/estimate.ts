// GET /campaigns/:id/estimate for a campaign to all of 1,000,000 contacts on SMS and email, with a
// personalised SMS and 1% of the contacts unsubscribed from each channel, against the bare
// baseline of counting the same distinct addresses (one `count(DISTINCT ...)` per channel, no
// suppression, no cost). The goal is absolute: the estimate under one second. Prints
// `ratio: <1000 ms / estimate median>` (>= 1 meets it) and the baseline beside it.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

const db = await freshDatabase('estimate');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4721, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
try {
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone, email, attributes, unsubscribed)
     SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0'), 'contact' || i || '@example.com',
            jsonb_build_object('plan', (ARRAY['gold', 'silver', 'basic'])[1 + i % 3]),
            CASE WHEN i % 100 = 0 THEN '{"sms": {"at": "2026-11-01T00:00:00.000Z", "source": "api"}, "email": {"at": "2026-11-01T00:00:00.000Z", "source": "link"}}'::jsonb
                 ELSE '{}'::jsonb END
     FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  await pool.query('VACUUM ANALYZE contacts');
  const created = await fetch(`${herald.url}/campaigns`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({
      name: 'Estimate',
      type: 'broadcast',
      channels: ['sms', 'email'],
      messages: {
        sms: { content: 'Hi {{ contact.firstName }}, your {{ contact.attributes.plan }} plan renews soon' },
        email: { subject: 'Your plan', content: '<p>Hi {{ contact.firstName }}</p>' },
      },
    }),
  }).then((r) => r.json() as Promise<{ _id: string }>);
  console.log(`estimate: ${CONTACTS} contacts, sms + email, 1% unsubscribed from each; ${ROUNDS} rounds`);

  const estimateTimes: number[] = [];
  const bareTimes: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const t0 = performance.now();
    const res = await fetch(`${herald.url}/campaigns/${created._id}/estimate`, { headers: auth });
    const body = (await res.json()) as { recipients: number; suppressed: number; cost: number };
    const estimateMs = performance.now() - t0;
    const expected = 2 * (CONTACTS - Math.floor(CONTACTS / 100));
    if (res.status !== 200 || body.recipients !== expected || body.suppressed !== 2 * Math.floor(CONTACTS / 100)) {
      throw new Error(`estimate: ${res.status} ${JSON.stringify(body)} (expected ${expected} recipients)`);
    }
    const t1 = performance.now();
    await pool.query(
      `SELECT (SELECT count(DISTINCT phone) FROM contacts WHERE organization_id = $1 AND phone IS NOT NULL),
              (SELECT count(DISTINCT lower(email)) FROM contacts WHERE organization_id = $1 AND email IS NOT NULL)`,
      [orgId],
    );
    const bareMs = performance.now() - t1;
    if (!round) {
      console.log(`  warm-up: estimate ${estimateMs.toFixed(0)} ms, bare counts ${bareMs.toFixed(0)} ms (${JSON.stringify(body)})`);
      continue;
    }
    estimateTimes.push(estimateMs);
    bareTimes.push(bareMs);
    console.log(`  round ${round}: estimate ${estimateMs.toFixed(0)} ms, bare counts ${bareMs.toFixed(0)} ms`);
  }
  const e = median(estimateTimes);
  const b = median(bareTimes);
  console.log(`estimate median ${e.toFixed(0)} ms; bare counts median ${b.toFixed(0)} ms (${(e / b).toFixed(2)}x); goal < 1000 ms`);
  summary({ goal: '>= 1.00', spread: ['herald', estimateTimes, 'baseline', bareTimes, 'ms'] });
  console.log(`ratio: ${(1000 / e).toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
}
