// The bare baseline for bench/tracking: node:http + pg, no framework. It does what Herald's open
// pixel and tracked links do for a reader's request, and no more: reads the signed token from the
// path and checks it (the same token format, `delivery/tracking-tokens.ts`, a pure function), then
// writes the recipient's receipt, its event and its campaign's counters in one statement, and
// answers the pixel or the redirect. A click first reads when its log was sent (the scanner window).
import { createServer } from 'node:http';
import pg from 'pg';
import { readTrackingToken } from '../../src/delivery/tracking-tokens.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const secret = process.env.BENCH_JWT_SECRET!;
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/** The first open of a recipient: its row, its event, its campaign's `opened`. */
const OPEN = `WITH ins AS (
    INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, opened_at)
    SELECT $1, m.id, $3, m.campaign_id, now() FROM message_logs m WHERE m.organization_id = $1 AND m.id = $2
    ON CONFLICT (organization_id, log_id, position) DO NOTHING RETURNING campaign_id),
  ev AS (INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
    SELECT $1, 'message.opened', $2, $3, ins.campaign_id, '', now(), true, '{}' FROM ins)
  UPDATE campaigns c SET opened = c.opened + 1 FROM ins WHERE c.organization_id = $1 AND c.id = ins.campaign_id`;

/** A recipient's first click: its row (an open implied), its event, its campaign's `clicked` (and `opened` when it had none). */
const CLICK = `WITH old AS (SELECT opened_at FROM recipient_receipts WHERE organization_id = $1 AND log_id = $2 AND position = $3),
  up AS (INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, opened_at, clicked_at)
    SELECT $1, m.id, $3, m.campaign_id, now(), now() FROM message_logs m WHERE m.organization_id = $1 AND m.id = $2
    ON CONFLICT (organization_id, log_id, position) DO UPDATE SET clicked_at = EXCLUDED.clicked_at, opened_at = coalesce(recipient_receipts.opened_at, EXCLUDED.opened_at)
    WHERE recipient_receipts.clicked_at IS NULL RETURNING campaign_id),
  ev AS (INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
    SELECT $1, 'message.clicked', $2, $3, up.campaign_id, '', now(), true, json_build_object('url', $4::text) FROM up)
  UPDATE campaigns c SET clicked = c.clicked + 1, opened = c.opened + (SELECT CASE WHEN EXISTS (SELECT 1 FROM old WHERE opened_at IS NOT NULL) THEN 0 ELSE 1 END)
  FROM up WHERE c.organization_id = $1 AND c.id = up.campaign_id`;

const SENT_AT = 'SELECT created_at FROM message_logs WHERE organization_id = $1 AND id = $2';

createServer(async (req, res) => {
  if (req.url === '/health') return res.end('ok');
  const [, kind, raw] = /^\/t\/([oc])\/([^/?]+)$/.exec(req.url ?? '') ?? [];
  const token = raw ? readTrackingToken(secret, raw) : null;
  if (kind === 'o') {
    if (token?.kind === 'open') await pool.query(OPEN, [token.orgId, token.logId, token.position]);
    res.writeHead(200, { 'content-type': 'image/gif', 'cache-control': 'no-store, private' }).end(PIXEL);
    return;
  }
  if (token?.kind !== 'click') return void res.writeHead(404).end();
  const sent = await pool.query(SENT_AT, [token.orgId, token.logId]);
  if (sent.rows.length) await pool.query(CLICK, [token.orgId, token.logId, token.position, token.url]);
  res.writeHead(302, { location: token.url, 'cache-control': 'no-store, private' }).end();
}).listen(Number(process.env.PORT), '127.0.0.1');
