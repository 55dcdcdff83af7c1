// The bare baseline for bench/receipts: node:http + pg, no framework. It does what Herald's
// WhatsApp webhook does for a delivery status, and no more: reads the raw body, verifies
// X-Hub-Signature-256 with the app secret, parses it, finds the log by the reference's id prefix
// and upserts the recipient's row with its campaign's counter in one statement.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const orgId = process.env.BENCH_ORG_ID!;
const secret = process.env.BENCH_APP_SECRET!;

const FIND = `SELECT id FROM message_logs WHERE organization_id = $1 AND id BETWEEN $2::uuid AND $3::uuid LIMIT 2`;
const UPSERT = `WITH ins AS (
    INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, delivered_at)
    SELECT $1, m.id, $3, m.campaign_id, to_timestamp($4) FROM message_logs m WHERE m.organization_id = $1 AND m.id = $2
    ON CONFLICT (organization_id, log_id, position) DO NOTHING RETURNING campaign_id)
  UPDATE campaigns c SET delivered = c.delivered + 1 FROM ins WHERE c.organization_id = $1 AND c.id = ins.campaign_id`;

createServer((req, res) => {
  if (req.url === '/health') return res.end('ok');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const raw = Buffer.concat(chunks);
    const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? '').replace(/^sha256=/, ''), 'hex');
    const expected = createHmac('sha256', secret).update(raw).digest();
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      res.writeHead(401).end();
      return;
    }
    const status = JSON.parse(raw.toString('utf8')).entry[0].changes[0].value.statuses[0];
    const ref: string = status.biz_opaque_callback_data;
    const prefix = ref.slice(0, 28);
    const logs = await pool.query(FIND, [orgId, `${prefix}00000000`, `${prefix}ffffffff`]);
    if (logs.rows.length === 1) await pool.query(UPSERT, [orgId, logs.rows[0].id, parseInt(ref.slice(28), 16), Number(status.timestamp)]);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
