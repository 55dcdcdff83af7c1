// The console in headless Chromium (Debian's, through playwright-core), measured with the browser's
// own Performance API:
//  1. first load: the bytes of scripts and stylesheets (as sent: gzip) a signed-in user's first
//     page (the dashboard, with its charts of the last 7 days drawn) loads; goal at most 300 KB.
//  2. the contacts page of an organization with 100,000 contacts: from navigation start until its
//     first rows are drawn, against a bare page (node:http + pg, no framework) drawing the same
//     rows; goal under 1 s. Prints `ratio: <bare / console>` (higher is better).
//  3. live progress: a 100,000-recipient campaign with a `campaignProgress` subscriber (graphql-ws,
//     as the campaign page subscribes) against the same campaign unwatched, rounds alternating:
//     the longest gap between two updates while it runs (goal: at most 1 s) and how much longer the
//     watched campaign takes (goal: at most 5%).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { chromium, type Page } from 'playwright-core';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { freshDatabase, median, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const CAMPAIGN_ROUNDS = Number(process.env.BENCH_CAMPAIGN_ROUNDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const db = await freshDatabase('console');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4711, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS });
let baseline: Awaited<ReturnType<typeof startProcess>> | undefined;
try {
  const signup = (await fetch(`${herald.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE',
    }),
  }).then((r) => r.json())) as { token: string; user: { organization: string } };
  const orgId = signup.user.organization;
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone, email, created_at)
     SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0'), 'contact' || i || '@example.com',
            now() - make_interval(secs => i)
     FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  await pool.query('VACUUM ANALYZE contacts');
  // A week of sends in the rollup the dashboard's charts read, so that they are drawn.
  await pool.query(
    `INSERT INTO message_stats_buckets (organization_id, bucket, channel, sent, failed, delivered, opened, clicked, credits)
     SELECT $1, date_bin('15 minutes', now() - make_interval(days => d), TIMESTAMPTZ '2000-01-01 00:00:00+00'), c, 100 + d, d, 90, 30, 10, 100 + d
     FROM generate_series(0, 6) AS d CROSS JOIN unnest(ARRAY['sms', 'email']) AS c`,
    [orgId],
  );
  baseline = await startProcess('bench/baseline/console-page.ts', { DATABASE_URL: db.url, BENCH_ORG_ID: orgId }, 4712);

  /** A fresh context (cold cache, as a first visit) signed in, at `url`; milliseconds until `selector` shows. */
  async function timeToRows(url: string, selector: string, signedIn: boolean): Promise<{ ms: number; page: Page }> {
    const context = await browser.newContext();
    if (signedIn) await context.addInitScript((t) => (globalThis as any).sessionStorage.setItem('herald.token', t), signup.token);
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'commit' });
    await page.waitForSelector(selector, { timeout: 30_000 });
    // Measured inside the page: navigation start is its time origin.
    const ms = await page.evaluate(() => (globalThis as any).performance.now() as number);
    return { ms, page };
  }

  // 1. First load of the dashboard, its charts drawn: scripts and stylesheets, bytes as transferred (encoded).
  const first = await timeToRows(`${herald.url}/`, 'main figure canvas', true);
  await first.page.waitForLoadState('networkidle');
  const bytes = await first.page.evaluate(() =>
    ((globalThis as any).performance.getEntriesByType('resource') as { name: string; encodedBodySize: number }[])
      .filter((e) => /\.(js|css)$/.test(new URL(e.name).pathname))
      .reduce((sum, e) => sum + e.encodedBodySize, 0),
  );
  await first.page.context().close();
  console.log(`first load (the dashboard, charts drawn): ${(bytes / 1024).toFixed(1)} KB of scripts and stylesheets (gzip), goal <= 300 KB: ${bytes <= 300 * 1024 ? 'met' : 'NOT met'}`);

  // 2. The contacts page of 100,000 contacts, against the bare page; round 0 warms both up.
  const consoleMs: number[] = [];
  const bareMs: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const c = await timeToRows(`${herald.url}/contacts`, 'main table tbody tr', true);
    await c.page.context().close();
    const b = await timeToRows(`${baseline.url}/`, '#rows tr', false);
    await b.page.context().close();
    if (round > 0) {
      consoleMs.push(c.ms);
      bareMs.push(b.ms);
    }
  }
  const [heraldMedian, bareMedian] = [median(consoleMs), median(bareMs)];
  console.log(`contacts page, ${CONTACTS.toLocaleString('en')} contacts, first rows drawn: console ${heraldMedian.toFixed(0)} ms, bare page ${bareMedian.toFixed(0)} ms (medians of ${ROUNDS})`);
  console.log(`console under 1 s: ${heraldMedian < 1000 ? 'met' : 'NOT met'}`);

  // 3. Live progress of a campaign to every contact, watched and unwatched.
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  const auth = { authorization: `Bearer ${signup.token}`, 'content-type': 'application/json' };
  const socket = createClient({ url: herald.url.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${signup.token}` } });
  /** Untimed: waits until the sandbox has reported a receipt for every recipient the campaign sent, so the next round starts on a quiet Herald. */
  async function receiptsDone(id: string) {
    for (const start = Date.now(); Date.now() - start < 120_000; await new Promise((r) => setTimeout(r, 100))) {
      const { rows } = await pool.query(
        `SELECT (SELECT sent FROM campaigns WHERE organization_id = $1 AND id = $2) AS sent,
                (SELECT count(*)::int FROM recipient_receipts WHERE organization_id = $1 AND campaign_id = $2) AS reported`,
        [orgId, id],
      );
      if (rows[0].reported >= rows[0].sent) return;
    }
    throw new Error(`campaign ${id}: its sandbox receipts did not all arrive within 2 minutes`);
  }

  async function campaign(name: string, watched: boolean): Promise<{ ms: number; gaps: number[]; events: number }> {
    const created = (await fetch(`${herald.url}/campaigns`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Benchmark' } } }),
    }).then((r) => r.json())) as { _id: string };
    const arrivals: number[] = [];
    let watching: Promise<void> = Promise.resolve();
    if (watched) {
      const events = socket.iterate({ query: 'subscription ($id: ID!) { campaignProgress(id: $id) { status analytics { sent failed } } }', variables: { id: created._id } });
      const first = await events.next(); // subscribed: its state before the launch
      if (first.done) throw new Error('the subscription ended at once');
      watching = (async () => {
        for await (const result of events) if (result.data) arrivals.push(performance.now());
      })();
    }
    const t0 = performance.now();
    await fetch(`${herald.url}/campaigns/${created._id}/launch`, { method: 'POST', headers: auth });
    for (;;) {
      const { rows } = await pool.query('SELECT status FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, created._id]);
      if (rows[0].status === 'completed') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const ms = performance.now() - t0;
    await watching;
    // The gaps between updates from the launch to the last (completed) one.
    const times = [t0, ...arrivals];
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    await receiptsDone(created._id);
    return { ms, gaps, events: arrivals.length };
  }
  const watchedMs: number[] = [];
  const unwatchedMs: number[] = [];
  let longestGap = 0;
  for (let round = 0; round <= CAMPAIGN_ROUNDS; round++) {
    for (const watched of round % 2 === 0 ? [false, true] : [true, false]) {
      const r = await campaign(`Live ${round} ${watched}`, watched);
      if (round === 0) continue;
      (watched ? watchedMs : unwatchedMs).push(r.ms);
      if (watched) longestGap = Math.max(longestGap, ...r.gaps);
      console.log(`  round ${round} ${watched ? `watched   ${r.ms.toFixed(0)} ms, ${r.events} updates, longest gap ${Math.max(...r.gaps).toFixed(0)} ms` : `unwatched ${r.ms.toFixed(0)} ms`}`);
    }
  }
  await socket.dispose();
  const [w, u] = [median(watchedMs), median(unwatchedMs)];
  console.log(`live progress: longest gap between updates ${longestGap.toFixed(0)} ms (goal <= 1000 ms: ${longestGap <= 1000 ? 'met' : 'NOT met'}); watched campaign ${w.toFixed(0)} ms against ${u.toFixed(0)} ms unwatched: ${(((w - u) / u) * 100).toFixed(1)}% (goal <= 5%)`);

  summary({ goal: '< 1000 ms for the console page', spread: ['console', consoleMs, 'bare', bareMs, 'ms'] });
  console.log(`ratio: ${(bareMedian / heraldMedian).toFixed(2)}`);
} finally {
  await browser.close();
  await pool.end();
  await baseline?.stop();
  await herald.stop();
  await db.stop();
}
