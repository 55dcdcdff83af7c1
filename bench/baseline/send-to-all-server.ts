// The bare baseline for bench/send-to-all: node:http + pg, no framework, no auth, no sending. It
// writes the answer a send to every contact gives when every recipient succeeds, for the
// organization BENCH_ORG_ID's SMS addresses: each distinct phone, in the order of the phone index,
// as `{"recipient":..,"status":"success"}`, read in keyset pages and written as they come, waiting
// for the socket to drain. Its peak memory is the floor of writing such an answer in Node.
import { once } from 'node:events';
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
const orgId = process.env.BENCH_ORG_ID!;
const PAGE = 5000;
const PAGE_SQL = `SELECT DISTINCT phone AS address FROM contacts
  WHERE organization_id = $1 AND phone IS NOT NULL AND phone > $2 ORDER BY 1 LIMIT ${PAGE}`;

createServer(async (req, res) => {
  if (req.url === '/health') return res.end('ok');
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  let started = false;
  for (let after = ''; ; ) {
    const { rows } = await pool.query<{ address: string }>(PAGE_SQL, [orgId, after]);
    let text = '';
    for (const r of rows) {
      text += `${started ? ',' : '['}${JSON.stringify({ recipient: r.address, status: 'success' })}`;
      started = true;
    }
    if (text && !res.write(text)) await once(res, 'drain');
    if (rows.length < PAGE) break;
    after = rows.at(-1)!.address;
  }
  res.end(started ? ']' : '[]');
}).listen(Number(process.env.PORT), '127.0.0.1');
