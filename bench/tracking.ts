// Email engagement: every recipient of a campaign opens its message (the pixel) and then clicks its
// link, 50 concurrent readers with a browser's user agent, against Herald's GET /t/o/:token and
// /t/c/:token, and against the bare node:http + pg server of bench/baseline/tracking-server.ts,
// which checks the same signed tokens and writes the same rows (the recipient's receipt, its event,
// its campaign's counters). Each contender gets its own campaign of BENCH_RECIPIENTS email
// recipients (logs of 100, sent an hour ago), so each open is a first open and each click a first
// click of a recipient that has opened. A phase's time runs until its last answer and until its
// receipts are all counted in the campaign, whichever is later (Herald answers a reader before it
// writes the receipt). Prints `ratio: <Herald requests/s / baseline requests/s>`; the goal is >= 0.7
// with Herald's p99 under 50 ms.
import { randomBytes, randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { clickUrl, openUrl } from '../src/delivery/tracking-tokens.js';
import { freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 20_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const JWT_SECRET = randomBytes(32).toString('hex');
const AGENT = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';

const db = await freshDatabase('tracking');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET, CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4741, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
let baseline: Awaited<ReturnType<typeof startProcess>> | null = null;
try {
  const { orgId } = await signup(herald.url);
  baseline = await startProcess('bench/baseline/tracking-server.ts', { DATABASE_URL: db.url, BENCH_JWT_SECRET: JWT_SECRET }, 4742);

  /** A sent email campaign of RECIPIENTS recipients, written as its settle writes it, an hour ago; each recipient's open and click paths. */
  async function sentCampaign(name: string): Promise<{ id: string; opens: string[]; clicks: string[] }> {
    const id = randomUUID();
    await pool.query(
      `INSERT INTO campaigns (organization_id, id, name, type, channels, status, recipient_type, messages, sent, total_recipients)
       VALUES ($1, $2, $3, 'broadcast', '{email}', 'completed', 'all', '{"email": {"subject": "Bench", "content": "<p>Bench</p>"}}', $4, $4)`,
      [orgId, id, name, RECIPIENTS],
    );
    const logIds = Array.from({ length: Math.ceil(RECIPIENTS / 100) }, () => randomUUID());
    await pool.query(
      `INSERT INTO message_logs (organization_id, id, channel, campaign_id, recipients, pending_count, success_count, message_preview, message_length, unit_cost, settled_at, created_at)
       SELECT $1, l.id, 'email', $2, (SELECT json_agg('reader' || (l.n * 100 + p) || '@example.com') FROM generate_series(1, 100) p), 0, 100, 'Bench', 5, 1,
              now() - interval '1 hour', now() - interval '1 hour'
       FROM unnest($3::uuid[]) WITH ORDINALITY AS l(id, n)`,
      [orgId, id, logIds],
    );
    const refs = logIds.flatMap((logId) => Array.from({ length: 100 }, (_, p) => ({ orgId, logId, position: p + 1 }))).slice(0, RECIPIENTS);
    return {
      id,
      opens: refs.map((ref) => new URL(openUrl('', JWT_SECRET, ref), 'http://x').pathname),
      clicks: refs.map((ref) => new URL(clickUrl('', JWT_SECRET, ref, `https://example.com/offer?r=${ref.position}`)!, 'http://x').pathname),
    };
  }

  /**
   * Requests `paths` in order over CONNECTIONS connections while `recorded` is polled; the rate (until
   * the last answer, or until `recorded` first held if that is later), p99 and any unexpected answer.
   */
  async function hit(base: string, paths: string[], expect: number, recorded: () => Promise<boolean>): Promise<{ rate: number; p99: number; errors: number }> {
    let next = 0;
    let wrong = 0;
    // autocannon notices that `amount` requests are done only on its next one-second tick: the time is the last answer's.
    let last = 0;
    const t0 = performance.now();
    let answered = false;
    const counted = (async () => {
      for (;;) {
        if (await recorded()) return performance.now();
        if (answered && performance.now() - last > 30_000) throw new Error('receipts still not counted 30 s after the last answer');
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const result = await autocannon({
      url: base,
      connections: CONNECTIONS,
      amount: paths.length,
      headers: { 'user-agent': AGENT, accept: 'image/avif,image/webp,*/*' },
      requests: [{
        setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length]! }),
        onResponse: (status) => {
          last = performance.now();
          if (status !== expect) wrong++;
        },
      }],
    });
    answered = true;
    const ms = Math.max(last, await counted) - t0;
    return { rate: (paths.length / ms) * 1000, p99: result.latency.p99, errors: result.errors + wrong };
  }

  const counted = async (id: string) =>
    (await pool.query('SELECT opened, clicked FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, id])).rows[0] as { opened: number; clicked: number };

  console.log(`tracking: ${RECIPIENTS} opens then ${RECIPIENTS} clicks, ${CONNECTIONS} concurrent readers`);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  type Who = 'herald' | 'baseline';
  const rates: Record<Who, number[]> = { herald: [], baseline: [] };
  const p99s: Record<Who, number[]> = { herald: [], baseline: [] };
  for (let r = 0; r < rounds; r++) {
    for (const who of (r % 2 ? ['baseline', 'herald'] : ['herald', 'baseline']) as Who[]) {
      const campaign = await sentCampaign(`${who} ${r}`);
      const base = who === 'herald' ? herald.url : baseline.url;
      const opens = await hit(base, campaign.opens, 200, async () => (await counted(campaign.id)).opened >= RECIPIENTS);
      const clicks = await hit(base, campaign.clicks, 302, async () => (await counted(campaign.id)).clicked >= RECIPIENTS);
      const rate = (2 * RECIPIENTS) / (RECIPIENTS / opens.rate + RECIPIENTS / clicks.rate);
      const got = await counted(campaign.id);
      if (opens.errors || clicks.errors || got.opened !== RECIPIENTS || got.clicked !== RECIPIENTS) {
        throw new Error(`${who}: ${opens.errors + clicks.errors} errors, ${got.opened} opened and ${got.clicked} clicked of ${RECIPIENTS}`);
      }
      const p99 = Math.max(opens.p99, clicks.p99);
      rates[who].push(rate);
      p99s[who].push(p99);
      console.log(`  round ${r + 1} ${who.padEnd(8)} ${rate.toFixed(0).padStart(6)} req/s (opens ${opens.rate.toFixed(0)}, clicks ${clicks.rate.toFixed(0)})  p99 opens ${opens.p99} ms, clicks ${clicks.p99} ms`);
    }
  }
  console.log(`herald median ${median(rates.herald).toFixed(0)} req/s; baseline median ${median(rates.baseline).toFixed(0)} req/s`);
  summary({ goal: '>= 0.70 (Herald p99 < 50 ms)', p99: ['herald', median(p99s.herald), 'baseline', median(p99s.baseline)], spread: ['herald', rates.herald, 'baseline', rates.baseline, 'req/s'] });
  console.log(`ratio: ${(median(rates.herald) / median(rates.baseline)).toFixed(3)}`);
} finally {
  await pool.end();
  await baseline?.stop();
  await herald.stop();
  await db.stop();
}
