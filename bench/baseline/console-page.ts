// The bare baseline of bench/console: node:http + pg serving one plain HTML page whose script (no
// framework) fetches the newest 25 contacts of the organization as JSON and draws them in a table:
// the least a page listing contacts can do. Same database, same rows as Herald's console page.
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
const ORG = process.env.BENCH_ORG_ID!;
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Contacts</title></head><body>
<h1>Contacts</h1><table><thead><tr><th>Name</th><th>Phone</th><th>Email</th><th>Created</th></tr></thead><tbody id="rows"></tbody></table>
<script src="/page.js"></script></body></html>`;
const SCRIPT = `fetch('/contacts.json').then((r) => r.json()).then(({ rows, total }) => {
  const body = document.getElementById('rows');
  for (const c of rows) {
    const tr = document.createElement('tr');
    for (const v of [c.name, c.phone, c.email, new Date(c.created_at).toLocaleString()]) {
      const td = document.createElement('td'); td.textContent = v ?? ''; tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  document.title = total + ' contacts';
});`;

const server = http.createServer(async (req, res) => {
  if (req.url === '/health') return void res.end('ok');
  if (req.url === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(SCRIPT);
  if (req.url === '/contacts.json') {
    const [page, count] = await Promise.all([
      pool.query('SELECT id, name, phone, email, created_at FROM contacts WHERE organization_id = $1 ORDER BY created_at DESC, id DESC LIMIT 25', [ORG]),
      pool.query('SELECT count(*)::int AS n FROM contacts WHERE organization_id = $1', [ORG]),
    ]);
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ rows: page.rows, total: count.rows[0].n }));
  }
  res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
});
server.listen(Number(process.env.PORT), '127.0.0.1');
