// 100,000 WhatsApp delivery statuses posted by 50 concurrent clients, each signed with the
// organization's app secret as Meta signs them, to Herald's POST /webhooks/whatsapp/:orgId, against
// the bare node:http + pg server of bench/baseline/receipts-server.ts, which verifies the same
// signature and writes the same rows (the recipient's receipt and its campaign's counter). Each
// contender gets its own campaign of 100,000 recipients (1,000 logs of 100), so every status is a
// first delivery. Prints `ratio: <Herald statuses/s / baseline statuses/s>`; the goal is >= 0.5.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { LogTarget } from '../src/delivery/types.js';
import { freshDatabase, signup, startProcess, summary } from './lib/harness.js';

const RECEIPTS = Number(process.env.BENCH_RECEIPTS ?? 100_000);
const CONNECTIONS = 50;
const APP_SECRET = randomBytes(16).toString('hex');

const db = await freshDatabase('receipts');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4731, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
let baseline: Awaited<ReturnType<typeof startProcess>> | null = null;
try {
  const { token, orgId } = await signup(herald.url);
  const creds = await fetch(`${herald.url}/organizations/current/credentials`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ whatsapp_app_secret: APP_SECRET, whatsapp_verify_token: 'bench' }),
  });
  if (!creds.ok) throw new Error(`credentials: ${creds.status} ${await creds.text()}`);
  baseline = await startProcess('bench/baseline/receipts-server.ts', { DATABASE_URL: db.url, BENCH_ORG_ID: orgId, BENCH_APP_SECRET: APP_SECRET }, 4732);

  /** A sent campaign of RECEIPTS WhatsApp recipients, written as its settle writes it; its recipients' references. */
  async function sentCampaign(name: string): Promise<{ id: string; references: string[] }> {
    const id = randomUUID();
    await pool.query(
      `INSERT INTO campaigns (organization_id, id, name, type, channels, status, recipient_type, messages, sent, total_recipients)
       VALUES ($1, $2, $3, 'broadcast', '{whatsapp}', 'completed', 'all', '{"whatsapp": {"content": "Bench"}}', $4, $4)`,
      [orgId, id, name, RECEIPTS],
    );
    const logIds = Array.from({ length: Math.ceil(RECEIPTS / 100) }, () => randomUUID());
    await pool.query(
      `INSERT INTO message_logs (organization_id, id, channel, campaign_id, recipients, pending_count, success_count, message_preview, message_length, unit_cost, settled_at)
       SELECT $1, l.id, 'whatsapp', $2, (SELECT json_agg('+2547' || lpad((l.n * 100 + p)::text, 8, '0')) FROM generate_series(1, 100) p), 0, 100, 'Bench', 5, 1, now()
       FROM unnest($3::uuid[]) WITH ORDINALITY AS l(id, n)`,
      [orgId, id, logIds],
    );
    return { id, references: logIds.flatMap((logId) => Array.from({ length: 100 }, (_, p) => new LogTarget('', logId, p + 1).clientId)).slice(0, RECEIPTS) };
  }

  /** Meta's notification of one delivery status, and its signature. */
  const notification = (reference: string, i: number) => {
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: 'WABA', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { phone_number_id: '1' },
        statuses: [{ id: `wamid.bench${i}`, status: 'delivered', timestamp: String(1_790_000_000 + i), recipient_id: '254700000000', biz_opaque_callback_data: reference }] } }] }],
    });
    return { body, signature: `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}` };
  };

  async function post(url: string, campaign: { references: string[] }): Promise<{ rate: number; p99: number; errors: number }> {
    const prepared = campaign.references.map(notification);
    let next = 0;
    const t0 = performance.now();
    const result = await autocannon({
      url,
      connections: CONNECTIONS,
      amount: prepared.length,
      method: 'POST',
      requests: [{ setupRequest: (req) => {
        const n = prepared[next++ % prepared.length]!;
        return { ...req, body: n.body, headers: { ...req.headers, 'content-type': 'application/json', 'x-hub-signature-256': n.signature } };
      } }],
    });
    const ms = performance.now() - t0;
    return { rate: (prepared.length / ms) * 1000, p99: result.latency.p99, errors: result.errors + result.non2xx };
  }

  const counted = async (id: string) => (await pool.query('SELECT delivered FROM campaigns WHERE organization_id = $1 AND id = $2', [orgId, id])).rows[0].delivered as number;

  console.log(`receipts: ${RECEIPTS} signed WhatsApp delivery statuses, ${CONNECTIONS} concurrent clients`);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const rates: Record<'herald' | 'baseline', number[]> = { herald: [], baseline: [] };
  const p99s: Record<'herald' | 'baseline', number[]> = { herald: [], baseline: [] };
  for (let r = 0; r < rounds; r++) {
    for (const who of (r % 2 ? ['baseline', 'herald'] : ['herald', 'baseline']) as ('herald' | 'baseline')[]) {
      const campaign = await sentCampaign(`${who} ${r}`);
      const url = who === 'herald' ? `${herald.url}/webhooks/whatsapp/${orgId}` : `${baseline.url}/`;
      const res = await post(url, campaign);
      const delivered = await counted(campaign.id);
      if (res.errors || delivered !== RECEIPTS) throw new Error(`${who}: ${res.errors} errors, ${delivered} of ${RECEIPTS} counted`);
      rates[who].push(res.rate);
      p99s[who].push(res.p99);
      console.log(`  round ${r + 1} ${who.padEnd(8)} ${res.rate.toFixed(0).padStart(6)} receipts/s  p99 ${res.p99} ms  (${delivered} counted)`);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`herald median ${med(rates.herald).toFixed(0)} receipts/s; baseline median ${med(rates.baseline).toFixed(0)} receipts/s`);
  summary({ goal: '>= 0.50', p99: ['herald', med(p99s.herald), 'baseline', med(p99s.baseline)], spread: ['herald', rates.herald, 'baseline', rates.baseline, 'receipts/s'] });
  console.log(`ratio: ${(med(rates.herald) / med(rates.baseline)).toFixed(3)}`);
} finally {
  await pool.end();
  await baseline?.stop();
  await herald.stop();
  await db.stop();
}
