// A campaign to 100,000 contacts (sandbox delivery) from launch until every recipient is logged,
// against COPY of the same number of log rows into the same database. Prints `ratio: <COPY time /
// campaign time>` (higher is better; the goal is the campaign within 2x of COPY, i.e. >= 0.5).
// With BENCH_PERSONALISED=1 (bench/campaign-personalised.ts) the text reads each contact's first
// name and an attribute, so every recipient is rendered on its own: goal within 2.5x (>= 0.4).
// Each of its rounds then also times, in turns with the personalised campaign and against the same
// round's COPY, what the machine allows (outside the ratio): the unpersonalised campaign alone (a
// text as long as the rendered one), and the floor, the same campaign while this process does
// beside it the least that personalising adds (every contact's fields read in one COPY, each text
// rendered and priced with Herald's own Personaliser, the texts handed to the database in one COPY).
// With BENCH_RESPECTFUL=1 (bench/campaign-respectful.ts) the timed campaign runs under sending
// hours (a window holding the hour now in the contacts' zone) and a frequency cap on SMS (that no
// contact has reached), set before its launch and cleared after, each round beside the same campaign
// without them: goal at most 1.2x (ratio, without over with, >= 0.83).
// BENCH_CHANNELS (default sms) names the campaign's channels: `sms,email` gives every contact an
// email address too and sends each recipient both. Every run prints the peak resident memory of
// Herald's process (`VmHWM`), from its start to the end of the last round, beside its memory once
// ready: run it with BENCH_CONTACTS of 100,000 and 1,000,000 to see whether a campaign's memory
// grows with its audience.
// Each campaign starts once the sandbox's simulated receipts of the one before are recorded; then
// BENCH_LOADED_ROUNDS rounds are timed while another campaign's receipts are being recorded.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { SANDBOX_RECEIPT_DELAYS_MS } from '../src/delivery/channels/sandbox.js';
import { Personaliser } from '../src/delivery/personalise.js';
import { textArrayLiteral } from '../src/db/arrays.js';
import { cpuNow, freshDatabase, median, memoryOf, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const PERSONALISED = process.env.BENCH_PERSONALISED === '1';
const RESPECTFUL = process.env.BENCH_RESPECTFUL === '1';
/** Rounds timed while another campaign's receipts are recorded (0 leaves them out). */
const LOADED_ROUNDS = Number(process.env.BENCH_LOADED_ROUNDS ?? 3);
const CHANNELS = (process.env.BENCH_CHANNELS ?? 'sms').split(',') as ('sms' | 'email')[];
const TEXT = PERSONALISED ? 'Hi {{ contact.firstName }}, your {{ contact.attributes.plan }} plan renews soon' : 'Benchmark';

const db = await freshDatabase('campaign');
const env = {
  DATABASE_URL: db.url,
  LOG_LEVEL: 'silent',
  NODE_ENV: 'production',
  DELIVERY_MODE: 'sandbox',
  JWT_SECRET: randomBytes(32).toString('hex'),
  CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  // Herald's default worker concurrency unless BENCH_WORKER_CONCURRENCY says otherwise.
  ...(process.env.BENCH_WORKER_CONCURRENCY && { WORKER_CONCURRENCY: process.env.BENCH_WORKER_CONCURRENCY }),
  DATABASE_POOL_MAX: '20',
};
/**
 * Every contact was logged once and handed to the (sandbox) provider once: none missing, none twice.
 * Checked outside the timing, once.
 */
async function exactlyOnce(campaignId: string, since: Date) {
  const logs = await pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT coalesce(r->>'recipient', r #>> '{}'))::int AS d
     FROM message_logs m, json_array_elements(m.recipients) r WHERE m.organization_id = $1 AND m.campaign_id = $2`,
    [orgId, campaignId],
  );
  const sent = await pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT r)::int AS d
     FROM sandbox_sends s, unnest(s.recipients) r WHERE s.organization_id = $1 AND s.created_at >= $2`,
    [orgId, since],
  );
  const each = CONTACTS * CHANNELS.length;
  for (const [what, { n, d }] of [['logged', logs.rows[0]], ['sent', sent.rows[0]]] as const) {
    if (n !== each || d !== each) throw new Error(`${what} ${n} times to ${d} distinct recipients, not each of ${each} once`);
  }
  if (!PERSONALISED) return;
  // Each recipient was sent its own text: its plan, as its contact has it.
  const own = await pool.query(
    `SELECT count(*)::int AS n FROM sandbox_sends s, unnest(s.recipients, s.bodies) AS r(recipient, body)
     JOIN contacts c ON c.organization_id = $1 AND c.phone = r.recipient
     WHERE s.organization_id = $1 AND s.created_at >= $2 AND r.body = 'Hi Contact, your ' || (c.attributes ->> 'plan') || ' plan renews soon'`,
    [orgId, since],
  );
  if (own.rows[0].n !== CONTACTS) throw new Error(`${own.rows[0].n} of ${CONTACTS} recipients were sent their own text`);
}

const herald = await startProcess('src/main.ts', env, 4711, '/ready');
const ready = memoryOf(herald.child.pid!);
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
let orgId = '';
try {
  const signup = (await fetch(`${herald.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      firstName: 'Bench', lastName: 'Mark', email: `bench.${Date.now()}@example.com`, password: 'benchmark password',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Bench', sector: 'Tech', country: 'KE',
    }),
  }).then((r) => r.json())) as { token: string; user: { organization: string } };
  const auth = { authorization: `Bearer ${signup.token}`, 'content-type': 'application/json' };
  orgId = signup.user.organization;
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone, email, time_zone, attributes)
     SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0'), CASE WHEN $3 THEN 'contact.' || i || '@example.com' END, 'Africa/Nairobi',
            jsonb_build_object('plan', (ARRAY['gold', 'silver', 'basic'])[1 + i % 3])
     FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS, CHANNELS.includes('email')],
  );
  // As autovacuum leaves a table a minute after a bulk import: statistics and the visibility map
  // current (the planner otherwise takes 100,000 fresh contacts for a few hundred).
  await pool.query('VACUUM ANALYZE contacts');
  await pool.query('CREATE TABLE bench_log_rows (organization_id uuid, campaign_id uuid, recipient text, status text, created_at timestamptz)');
  console.log(`campaign: ${CONTACTS} contacts, ${CHANNELS.join(' and ')}${PERSONALISED ? ' personalised' : ''} (${JSON.stringify(TEXT)}), sandbox delivery; ${ROUNDS} rounds`);

  const campaignTimes: number[] = [];
  const copyTimes: number[] = [];
  // Round 0 is an untimed warm-up of both (JIT, caches), as in the other benches.
  /** A campaign to every contact, launched and timed until it completes. */
  async function campaignRun(name: string, text = TEXT, beside?: () => Promise<unknown>): Promise<{ id: string; ms: number; launchedAt: Date; cpu: string }> {
    const created = (await fetch(`${herald.url}/campaigns`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name, type: 'broadcast', channels: CHANNELS, messages: Object.fromEntries(CHANNELS.map((c) => [c, c === 'email' ? { subject: 'Benchmark', content: text } : { content: text }])) }),
    }).then((r) => r.json())) as { _id: string };
    const launchedAt = new Date();
    const cpu0 = cpuNow(herald.child.pid!);
    const t0 = performance.now();
    const launched = (await fetch(`${herald.url}/campaigns/${created._id}/launch`, { method: 'POST', headers: auth }).then((r) => r.json())) as { status: string };
    if (launched.status !== 'active' && launched.status !== 'completed') throw new Error(`launch: ${JSON.stringify(launched)}`);
    const besideDone = beside?.();
    for (;;) {
      const { rows } = await pool.query('SELECT status FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, created._id]);
      if (rows[0].status === 'completed') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await besideDone;
    const ms = performance.now() - t0;
    const cpu1 = cpuNow(herald.child.pid!);
    return { id: created._id, ms, launchedAt, cpu: `CPU Herald ${(cpu1.herald - cpu0.herald).toFixed(0)} ms, Postgres ${(cpu1.postgres - cpu0.postgres).toFixed(0)} ms` };
  }

  /**
   * Waits (untimed) until the sandbox has reported a receipt for every SMS the campaign sent
   * (providers.md, "Sandbox": delivered, or undelivered for numbers ending in 0001; email has none),
   * so the next round starts on a quiet Herald.
   */
  async function receiptsDone(id: string) {
    for (const start = Date.now(); Date.now() - start < 120_000 * Math.max(1, CONTACTS / 100_000); await new Promise((r) => setTimeout(r, 100))) {
      const { rows } = await pool.query(
        `SELECT (SELECT coalesce(sum(success_count), 0)::int FROM message_logs WHERE organization_id = $1 AND campaign_id = $2 AND channel = 'sms') AS sent,
                (SELECT count(*)::int FROM recipient_receipts WHERE organization_id = $1 AND campaign_id = $2) AS reported`,
        [orgId, id],
      );
      if (rows[0].reported >= rows[0].sent) return;
    }
    throw new Error(`campaign ${id}: its sandbox receipts did not all arrive within 2 minutes`);
  }

  /** The references' unpersonalised text: as long as a rendered one. */
  const PLAIN = 'Hi Contact, your gold plan renews soon';
  const personaliser = new Personaliser({ publicUrl: 'http://localhost', jwtSecret: 'bench', costs: { smsSegment: 1, email: 1, whatsapp: 1 } }, 'sms', { body: TEXT }, { orgId, organizationName: 'Bench', bulk: true });
  if (PERSONALISED) await pool.query('CREATE TABLE bench_texts (bodies text[])');
  /**
   * The least personalising adds, done by this process (the floor's work, beside the campaign):
   * every contact's address, name and plan in one `COPY` of the organization's contacts, split by
   * hand (the bench's names and plans hold no tab or newline), each text rendered and priced with
   * Herald's own Personaliser, and the texts handed to the database as the sandbox keeps them, a
   * chunk's 6,250 as one array a row, in one `COPY`. No chunks to claim, no address array, no choice
   * among contacts sharing an address, no logs.
   */
  const floorWork = async () => {
    const client = await pool.connect();
    const texts: string[] = [];
    let priced = 0;
    try {
      const stream = client.query(copyTo(`COPY (SELECT phone, name, attributes ->> 'plan' FROM contacts WHERE organization_id = '${orgId}') TO STDOUT`));
      let rest = '';
      for await (const chunk of stream) {
        const lines = (rest + (chunk as Buffer).toString('utf8')).split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          const [phone, name, plan] = line.split('\t') as [string, string, string];
          const { body } = personaliser.forRecipient(phone, { name, attributes: { plan } });
          priced += personaliser.costOf(body!);
          texts.push(body!);
        }
      }
      async function* rows() {
        for (let i = 0; i < texts.length; i += 6_250) yield `${textArrayLiteral(texts.slice(i, i + 6_250)).replaceAll('\\', '\\\\')}\n`;
      }
      await pipeline(Readable.from(rows()), client.query(copyFrom('COPY bench_texts (bodies) FROM STDIN')));
    } finally {
      client.release();
    }
    if (texts.length !== CONTACTS || priced < CONTACTS) throw new Error(`the floor rendered ${texts.length} of ${CONTACTS}`);
  };
  /** Sending hours and an SMS cap (RESPECTFUL) on or off, set untimed: a window from two hours before the hour now in Nairobi to three after. */
  async function respect(on: boolean) {
    const hour = (new Date().getUTCHours() + 3) % 24;
    const at = (h: number) => `${String((h + 24) % 24).padStart(2, '0')}:00`;
    const settings = on ? { sendingHours: `${at(hour - 2)}-${at(hour + 3)}`, frequencyCaps: { sms: { messages: 1000, days: 7 } } } : { sendingHours: null, frequencyCaps: {} };
    const res = await fetch(`${herald.url}/organizations/current`, { method: 'PUT', headers: auth, body: JSON.stringify(settings) });
    if (res.status !== 200) throw new Error(`settings: ${res.status} ${await res.text()}`);
  }

  const ways = PERSONALISED ? (['campaign', 'alone', 'floor'] as const) : RESPECTFUL ? (['campaign', 'plain'] as const) : (['campaign'] as const);
  const references: Record<'alone' | 'floor' | 'plain', number[]> = { alone: [], floor: [], plain: [] };

  for (let round = 0; round <= ROUNDS; round++) {
    // The campaign and (personalised) its references in turns, the first of them another each round.
    let campaignMs = 0;
    let cpu = '';
    let created = { _id: '' };
    const reference: Partial<Record<'alone' | 'floor' | 'plain', number>> = {};
    for (let i = 0; i < ways.length; i++) {
      const way = ways[(i + round) % ways.length]!;
      if (way === 'plain') {
        const run = await campaignRun(`Plain ${round}`);
        await receiptsDone(run.id);
        reference.plain = run.ms;
        if (round) references.plain.push(run.ms);
        continue;
      }
      if (way !== 'campaign') {
        const run = await campaignRun(`${way === 'alone' ? 'Alone' : 'Floor'} ${round}`, PLAIN, way === 'floor' ? floorWork : undefined);
        await receiptsDone(run.id);
        reference[way] = run.ms;
        if (round) references[way].push(run.ms);
        continue;
      }
      if (RESPECTFUL) await respect(true);
      const run = await campaignRun(`Bench ${round}`);
      if (RESPECTFUL) await respect(false);
      ({ ms: campaignMs, cpu } = run);
      created = { _id: run.id };
      await receiptsDone(run.id);
      const logged = await pool.query(`SELECT sum(json_array_length(recipients))::int AS n FROM message_logs WHERE campaign_id = $1`, [run.id]);
      if (logged.rows[0].n !== CONTACTS * CHANNELS.length) throw new Error(`logged ${logged.rows[0].n} of ${CONTACTS * CHANNELS.length}`);
      if (round === 1) await exactlyOnce(run.id, run.launchedAt);
      if (round) campaignTimes.push(campaignMs);
    }

    const client = await pool.connect();
    const t1 = performance.now();
    try {
      const stream = client.query(copyFrom('COPY bench_log_rows (organization_id, campaign_id, recipient, status, created_at) FROM STDIN'));
      const now = new Date().toISOString();
      async function* rows() {
        for (let i = 0; i < CONTACTS; i += 1000) {
          let chunk = '';
          for (let j = i; j < Math.min(i + 1000, CONTACTS); j++) chunk += `${orgId}\t${created._id}\t+2547${String(10000000 + j).slice(-8)}\tsuccess\t${now}\n`;
          yield chunk;
        }
      }
      await pipeline(Readable.from(rows()), stream);
    } finally {
      client.release();
    }
    const copyMs = performance.now() - t1;
    const besides = PERSONALISED
      ? `; unpersonalised alone ${reference.alone!.toFixed(0)} ms, the floor ${reference.floor!.toFixed(0)} ms`
      : RESPECTFUL
        ? `; without sending hours and caps ${reference.plain!.toFixed(0)} ms`
        : '';
    if (!round) {
      console.log(`  warm-up: campaign ${campaignMs.toFixed(0)} ms, COPY ${copyMs.toFixed(0)} ms${besides}`);
      continue;
    }
    copyTimes.push(copyMs);
    console.log(`  round ${round}: campaign ${campaignMs.toFixed(0)} ms (${((CONTACTS / campaignMs) * 1000).toFixed(0)} recipients/s), COPY ${copyTimes.at(-1)!.toFixed(0)} ms; ${cpu}${besides}`);
  }
  console.log(`  exactly once: every contact in one log entry and one provider call, none twice`);
  const c = median(campaignTimes);
  const k = median(copyTimes);
  console.log(`campaign median ${c.toFixed(0)} ms (${((CONTACTS / c) * 1000).toFixed(0)} recipients/s); COPY median ${k.toFixed(0)} ms`);

  // The same campaign while the receipts of another pour in (platform.md: ingesting receipts does
  // not slow down sending): each timed launch comes once the previous campaign's simulated receipts
  // (SANDBOX_RECEIPT_DELAYS_MS after its sends) are being recorded, the first of them written, so
  // the workers have taken receipts jobs already and its sending and their recording overlap.
  const loaded: number[] = [];
  for (let round = 1; round <= LOADED_ROUNDS; round++) {
    const before = await campaignRun(`Load ${round}`);
    await new Promise((r) => setTimeout(r, Math.max(0, SANDBOX_RECEIPT_DELAYS_MS.delivered - before.ms)));
    for (const start = Date.now(); ; await new Promise((r) => setTimeout(r, 5))) {
      const { rows } = await pool.query('SELECT EXISTS (SELECT 1 FROM recipient_receipts WHERE organization_id = $1 AND campaign_id = $2) AS begun', [orgId, before.id]);
      if (rows[0].begun) break;
      if (Date.now() - start > 30_000) throw new Error(`campaign ${before.id}: no receipt recorded within 30 s`);
    }
    const timed = await campaignRun(`Under receipts ${round}`);
    loaded.push(timed.ms);
    console.log(`  under receipts ${round}: campaign ${timed.ms.toFixed(0)} ms while ${CONTACTS} receipts of the previous one are recorded`);
    await receiptsDone(before.id);
    await receiptsDone(timed.id);
  }
  if (LOADED_ROUNDS) {
    const l = median(loaded);
    console.log(`under receipts: median ${l.toFixed(0)} ms, ${(((l - c) / c) * 100).toFixed(0)}% slower than on a quiet Herald (goal: within 20%)`);
  }
  if (PERSONALISED) {
    // For reference, not in the ratio: what the machine allows, from the same rounds.
    const alone: number[] = [];
    for (let round = 0; round <= 3; round++) {
      const t0 = performance.now();
      await floorWork();
      if (round) alone.push(performance.now() - t0);
    }
    console.log(`  the floor's work alone (the contacts' fields read, the texts rendered, priced and written): ${median(alone).toFixed(0)} ms (${alone.map((m) => m.toFixed(0)).join(', ')})`);
    const a = median(references.alone);
    const f = median(references.floor);
    const spreadOf = (times: number[]) => times.map((m) => m.toFixed(0)).join(', ');
    console.log(`  in the same rounds, the campaign unpersonalised alone: ${a.toFixed(0)} ms (${spreadOf(references.alone)}), ${(a / k).toFixed(2)}x COPY`);
    console.log(`  in the same rounds, the floor (the unpersonalised campaign with the floor's work beside it): ${f.toFixed(0)} ms (${spreadOf(references.floor)}), ${(f / k).toFixed(2)}x COPY`);
    console.log(
      `  the personalised campaign against the floor of its round: ${campaignTimes.map((t, i) => `${(t / references.floor[i]!).toFixed(2)}x`).join(', ')}; ` +
        `medians ${(c / f).toFixed(2)}x`,
    );
  }
  const memory = memoryOf(herald.child.pid!);
  console.log(`Herald's memory: ${ready.rss.toFixed(0)} MiB once ready; peak ${memory.peak.toFixed(0)} MiB (VmHWM) over ${CONTACTS.toLocaleString('en')} contacts x ${CHANNELS.length} channel(s)`);
  if (RESPECTFUL) {
    const p = median(references.plain);
    const spreadOf = (times: number[]) => times.map((m) => m.toFixed(0)).join(', ');
    console.log(`  with sending hours and a cap: ${spreadOf(campaignTimes)} ms; without, in the same rounds: ${spreadOf(references.plain)} ms`);
    console.log(`with / without: ${(c / p).toFixed(2)}x (goal <= 1.2x); per round ${campaignTimes.map((t, i) => `${(t / references.plain[i]!).toFixed(2)}x`).join(', ')}`);
    summary({ goal: '>= 0.83', spread: ['herald', campaignTimes, 'baseline', references.plain, 'ms'] });
    console.log(`ratio: ${(p / c).toFixed(3)}`);
  } else {
    console.log(`campaign / COPY: ${(c / k).toFixed(2)}x (goal <= ${PERSONALISED ? '2.5' : '2'}x)`);
    summary({ goal: PERSONALISED ? '>= 0.40' : '>= 0.50', spread: ['herald', campaignTimes, 'baseline', copyTimes, 'ms'] });
    console.log(`ratio: ${(k / c).toFixed(3)}`);
  }
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
}
