// The dashboard's and a campaign funnel's reads over one organization's 10,000,000 logged
// recipients (100,000 logs of 100 over the last 90 days: a campaign of 1,000,000 sent in its last
// hours, 30 more of 100,000, the rest ad hoc; 60% SMS, 30% email, 10% WhatsApp, 2% failed) and
// 1,000,000 receipts, beside two other organizations' 1,000,000 each, seeded with SQL; the rollup
// then counted from them as the migration counts what a database holds, with a sweep's worth of
// changes not folded yet. Sequential requests over HTTP: `GET /stats/daily?days=90` (the dashboard's
// widest range, in Nairobi's days as a browser there asks), `?days=7`, and `GET /campaigns/:id/funnel` of the big campaign, each answered as
// Herald answers it, against the bare baseline of the same statements run straight on pg. The goal
// is absolute: p99 under 200 ms. Prints `ratio: <200 ms / Herald's p99>` (>= 1 meets it), and what
// the 90 days cost counted from the logs and receipts themselves, for scale.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { backfill } from '../migrations/20261211100000_message_stats.js';
import { createDb } from '../src/db/database.js';
import { queryOf, type Statement } from '../src/db/statements.js';
import { bucketOf } from '../src/delivery/sql/stats.js';
import { dailyFigures, funnelCampaign, funnelFigures, funnelTimeline } from '../src/modules/stats/sql.js';
import { freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const LOGS = Number(process.env.BENCH_LOGS ?? 100_000);
const BIG = LOGS / 10;
const OTHER_LOGS = LOGS / 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 100);
const GOAL_MS = 200;
/** Changes the sweep has not folded yet (a busy half-minute's settles and receipts). */
const PENDING_CHANGES = 5000;
const DAY_S = 86_400;

/**
 * `count` logs of 100 recipients of organization `$1`: log i < `$3` is the big campaign `$4`'s
 * (7 in 10 SMS, sent over its last two hours), the others spread over 90 days up to now, every
 * 1,000 a campaign of its own in three (`$5`, by i / 1000 % 30), the rest ad hoc. Two recipients in
 * 100 failed (stored as objects), each sent one charged at its channel's price.
 */
const SEED_LOGS = `
  INSERT INTO message_logs (organization_id, id, channel, campaign_id, recipients, pending_count, success_count, failed_count, message_preview,
                            message_length, unit_cost, cost, settled_at, created_at)
  SELECT $1, gen_random_uuid(), l.channel, l.campaign_id, r.recipients, 0, 98, 2, 'Bench', 5, l.unit, 98 * l.unit, l.at, l.at
  FROM (SELECT i, c.channel, CASE c.channel WHEN 'email' THEN 0.5 ELSE 1 END AS unit,
               CASE WHEN i < $3::int THEN $4::uuid WHEN i / 1000 % 3 = 0 THEN ($5::uuid[])[i / 1000 % 30 + 1] END AS campaign_id,
               CASE WHEN i < $3::int THEN now() - interval '2 hours' + i * (interval '2 hours' / nullif($3::int, 0))
                    ELSE now() - ($2::int - 1 - i) * (interval '90 days' / nullif($2::int - $3::int, 0)) END AS at
        FROM generate_series(0, $2::int - 1) AS i
        CROSS JOIN LATERAL (SELECT CASE WHEN i < $3::int THEN (CASE WHEN i % 10 < 7 THEN 'sms' ELSE 'email' END)
                                        ELSE (CASE WHEN i % 10 < 6 THEN 'sms' WHEN i % 10 < 9 THEN 'email' ELSE 'whatsapp' END) END AS channel) c) l
  CROSS JOIN LATERAL (
    SELECT json_agg(CASE WHEN p % 50 = 7 THEN json_build_object('recipient', a, 'status', 'failed', 'error', 'Undeliverable') ELSE to_json(a) END ORDER BY p) AS recipients
    FROM (SELECT p, CASE WHEN l.channel = 'email' THEN 'contact' || (l.i % 10000 * 100 + p) || '@example.com'
                         ELSE '+2547' || (10000000 + l.i % 10000 * 100 + p) END AS a
          FROM generate_series(0, 99) AS p) s) r`;

/** Receipts of every recipient sent of one log in ten: SMS and WhatsApp delivered, a third of emails opened, a ninth clicked, one in 50 bounced. */
const SEED_RECEIPTS = `
  INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, delivered_at, opened_at, clicked_at, bounced_at, bounce_type)
  SELECT m.organization_id, m.id, p, m.campaign_id,
         CASE WHEN m.channel <> 'email' THEN m.created_at + interval '5 seconds' END,
         CASE WHEN m.channel = 'email' AND p % 3 = 0 THEN m.created_at + interval '1 hour' END,
         CASE WHEN m.channel = 'email' AND p % 9 = 0 THEN m.created_at + interval '1 hour' END,
         CASE WHEN m.channel = 'email' AND p % 50 = 13 THEN m.created_at + interval '1 minute' END,
         CASE WHEN m.channel = 'email' AND p % 50 = 13 THEN 'hard' END
  FROM (SELECT *, row_number() OVER (ORDER BY created_at) AS n FROM message_logs WHERE organization_id = $1) m
  CROSS JOIN generate_series(1, 100) AS p
  WHERE m.n % 10 = 0 AND (p - 1) % 50 <> 7`;

const db = await freshDatabase('stats');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4743, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const knex = createDb(db.url, 2);
try {
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}` };
  const others = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
  await pool.query(`INSERT INTO organizations (id, name, sector, country) SELECT unnest($1::uuid[]), 'Other', 'Tech', 'KE'`, [others]);

  const t0 = performance.now();
  const big = randomUUID();
  const campaigns = Array.from({ length: 30 }, () => randomUUID());
  const campaignRows = `INSERT INTO campaigns (organization_id, id, name, type, channels, status, recipient_type, messages, total_recipients, sent, failed, started_at, completed_at)
                        SELECT $1, id, 'Bench', 'broadcast', '{sms,email}', 'completed', 'all', '{}', $3, $4, $5, now() - interval '2 hours', now() FROM unnest($2::uuid[]) AS id`;
  await pool.query(campaignRows, [orgId, [big], BIG * 100, BIG * 98, BIG * 2]);
  await pool.query(campaignRows, [orgId, campaigns, 100_000, 98_000, 2000]);
  // Seeded without the addresses index, which is then built in one pass (as log-search does).
  const { rows: indexes } = await pool.query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'message_logs' AND indexdef LIKE '%string_to_array%'`);
  for (const index of indexes) await pool.query(`DROP INDEX ${index.indexname}`);
  await pool.query(SEED_LOGS, [orgId, LOGS, BIG, big, campaigns]);
  for (const other of others) await pool.query(SEED_LOGS, [other, OTHER_LOGS, 0, randomUUID(), campaigns]);
  await pool.query(SEED_RECEIPTS, [orgId]);
  // The big campaign's audience: a batch per log, its addresses those of the log.
  await pool.query(
    `INSERT INTO campaign_batches (organization_id, campaign_id, channel, batch_no, addresses, recipient_count, status, sent, failed, settled_at)
     SELECT m.organization_id, m.campaign_id, m.channel, row_number() OVER (PARTITION BY m.channel ORDER BY m.created_at)::int,
            ARRAY(SELECT coalesce(r ->> 'recipient', r #>> '{}') FROM json_array_elements(m.recipients) r), 100, 'settled', 98, 2, m.created_at
     FROM message_logs m WHERE m.organization_id = $1 AND m.campaign_id = $2`,
    [orgId, big],
  );
  const client = await pool.connect();
  try {
    await client.query("SET maintenance_work_mem = '256MB'");
    for (const index of indexes) await client.query(index.indexdef);
  } finally {
    client.release();
  }
  await backfill(knex);
  // A sweep's worth of changes not folded yet: today's, spread over the channels and the big campaign.
  await pool.query(
    `INSERT INTO message_stats_changes (organization_id, bucket, channel, campaign_id, sent, failed, delivered, opened, credits)
     SELECT $1, ${bucketOf('now()')}, (ARRAY['sms', 'email', 'whatsapp'])[i % 3 + 1], CASE WHEN i % 2 = 0 THEN $2::uuid END, 1, 0, 1, i % 2, 1
     FROM generate_series(1, $3::int) AS i`,
    [orgId, big, PENDING_CHANGES],
  );
  await pool.query('VACUUM ANALYZE');
  const recipients = Number((await pool.query('SELECT sum(success_count + failed_count)::bigint AS n FROM message_logs WHERE organization_id = $1', [orgId])).rows[0].n);
  const receipts = Number((await pool.query('SELECT count(*) AS n FROM recipient_receipts WHERE organization_id = $1', [orgId])).rows[0].n);
  const rollup = (await pool.query(`SELECT (SELECT count(*) FROM message_stats_buckets WHERE organization_id = $1) AS buckets, (SELECT count(*) FROM message_stats_campaigns WHERE organization_id = $1) AS campaigns`, [orgId])).rows[0];
  console.log(
    `stats: ${recipients.toLocaleString('en')} recipients in ${LOGS.toLocaleString('en')} logs, ${receipts.toLocaleString('en')} receipts, and 2 other organizations' ` +
      `${(2 * OTHER_LOGS * 100).toLocaleString('en')}; seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s; the rollup: ${rollup.buckets} quarter-hour rows, ` +
      `${rollup.campaigns} campaign rows, ${PENDING_CHANGES} changes not folded; ${ROUNDS} rounds`,
  );

  // The bare baseline: the statements Herald runs for each answer, straight on pg (no HTTP,
  // authentication, validation, zeros filled in or JSON).
  const ZONE = 'Africa/Nairobi';
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const from = (days: number) => day(Math.floor(Date.now() / (DAY_S * 1000)) * DAY_S * 1000 - (days - 1) * DAY_S * 1000);
  // Nairobi's today (UTC+3, no daylight saving) and the range's first day there.
  const fromIn = (days: number) => day(Math.floor((Date.now() + 3 * 3_600_000) / (DAY_S * 1000)) * DAY_S * 1000 - (days - 1) * DAY_S * 1000);
  const bareRun = async <P extends object>(st: Statement<P, any>, params: P) => (await pool.query(queryOf(st, params))).rows;
  const sumSent = (rows: { sent: number | string }[]) => rows.reduce((n, r) => n + Number(r.sent), 0);
  const bare = {
    days90: async () => sumSent(await bareRun(dailyFigures, { orgId, from: fromIn(90), timeZone: ZONE, channel: null })),
    days7: async () => sumSent(await bareRun(dailyFigures, { orgId, from: from(7), timeZone: 'UTC', channel: null })),
    funnel: async () => {
      await bareRun(funnelCampaign, { orgId, campaignId: big });
      const [rows] = await Promise.all([bareRun(funnelFigures, { orgId, campaignId: big }), bareRun(funnelTimeline, { orgId, campaignId: big, points: 60 })]);
      return sumSent(rows);
    },
  };
  const viaHerald = async (path: string, sent: (body: any) => number) => {
    const res = await fetch(`${herald.url}${path}`, { headers: auth });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`herald: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    return sent(body);
  };
  const cases = [
    { name: 'days=90', herald: () => viaHerald(`/stats/daily?days=90&timeZone=${ZONE}`, (b) => b.totals.sent), bare: bare.days90 },
    { name: 'days=7', herald: () => viaHerald('/stats/daily?days=7', (b) => b.totals.sent), bare: bare.days7 },
    { name: 'funnel', herald: () => viaHerald(`/campaigns/${big}/funnel`, (b) => b.sent), bare: bare.funnel },
  ];

  const times: Record<'herald' | 'baseline', Record<string, number[]>> = { herald: {}, baseline: {} };
  for (let round = 0; round <= ROUNDS; round++) {
    for (const c of cases) {
      const contenders = [
        { name: 'herald' as const, run: c.herald },
        { name: 'baseline' as const, run: c.bare },
      ];
      const found: number[] = [];
      for (const k of round % 2 ? contenders.reverse() : contenders) {
        const t = performance.now();
        found.push(await k.run());
        const ms = performance.now() - t;
        // Round 0 warms both up (JIT, caches), as in the other benches.
        if (round) (times[k.name][c.name] ??= []).push(ms);
      }
      if (found[0] !== found[1]) throw new Error(`${c.name}: herald and the baseline disagree (${found.join(' vs ')} sent)`);
    }
  }

  // For scale: the 90 days counted from the logs and receipts themselves, as a dashboard without the rollup would.
  const fromLogs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await pool.query(
      `SELECT day, channel, sum(sent), sum(failed), sum(credits), sum(delivered), sum(opened), sum(clicked) FROM (
         SELECT (created_at AT TIME ZONE 'UTC')::date AS day, channel, success_count AS sent, failed_count AS failed, cost AS credits, 0 AS delivered, 0 AS opened, 0 AS clicked
         FROM message_logs WHERE organization_id = $1 AND created_at >= $2::date AND settled_at IS NOT NULL
         UNION ALL
         SELECT (m.created_at AT TIME ZONE 'UTC')::date, m.channel, 0, 0, 0, (r.delivered_at IS NOT NULL)::int, (r.opened_at IS NOT NULL)::int, (r.clicked_at IS NOT NULL)::int
         FROM recipient_receipts r JOIN message_logs m ON m.organization_id = r.organization_id AND m.id = r.log_id
         WHERE r.organization_id = $1 AND m.created_at >= $2::date) x
       GROUP BY day, channel`,
      [orgId, from(90)],
    );
    fromLogs.push(performance.now() - t);
  }

  const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]!;
  for (const c of cases) {
    const h = times.herald[c.name]!;
    const b = times.baseline[c.name]!;
    console.log(
      `  ${c.name.padEnd(8)} herald median ${median(h).toFixed(1)} ms, p99 ${p99(h).toFixed(1)} ms; baseline median ${median(b).toFixed(1)} ms, p99 ${p99(b).toFixed(1)} ms`,
    );
  }
  console.log(`  the 90 days counted from the logs and receipts instead: median ${median(fromLogs).toFixed(0)} ms (3 runs)`);
  const all = (name: 'herald' | 'baseline') => Object.values(times[name]).flat();
  const h99 = p99(all('herald'));
  const b99 = p99(all('baseline'));
  console.log(`all ${all('herald').length} requests: herald p99 ${h99.toFixed(1)} ms, baseline p99 ${b99.toFixed(1)} ms; goal: herald p99 < ${GOAL_MS} ms`);
  summary({ goal: '>= 1.00', p99: ['herald', h99, 'baseline', b99] });
  console.log(`ratio: ${(GOAL_MS / h99).toFixed(3)}`);
} finally {
  await knex.destroy();
  await pool.end();
  await herald.stop();
  await db.stop();
}
