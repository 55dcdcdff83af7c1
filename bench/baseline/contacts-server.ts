// The bare baseline for bench/contacts: node:http + pg, no framework, no auth, no validation,
// running the same list SQL as Herald's GET /contacts and writing the same JSON.
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const orgId = process.env.BENCH_ORG_ID!;

const SQL = `
  SELECT contacts.id, contacts.organization_id, contacts.name, contacts.email, contacts.phone, contacts.country_code,
         contacts.company, contacts.tags, contacts.created_at, contacts.updated_at,
         ARRAY(SELECT cg.group_id::text FROM contact_groups cg
               WHERE cg.organization_id = $1 AND cg.contact_id = contacts.id
               ORDER BY cg.group_id) AS groups
  FROM contacts WHERE contacts.organization_id = $1
  ORDER BY contacts.created_at DESC, contacts.id DESC LIMIT $2`;

createServer(async (req, res) => {
  if (req.url === '/health') return res.end('ok');
  const { rows } = await pool.query(SQL, [orgId, 1001]);
  const body = rows.slice(0, 1000).map((r) => ({
    _id: r.id,
    name: r.name,
    email: r.email,
    phone: r.phone,
    countryCode: r.country_code,
    organization: r.company,
    tags: r.tags,
    groups: r.groups,
    ServiceOrganization: r.organization_id,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  }));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}).listen(Number(process.env.PORT), '127.0.0.1');
