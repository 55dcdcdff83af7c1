// The bare baseline for bench/contacts: node:http + pg, no framework, no auth, no validation,
// running Herald's own list statement for GET /contacts (its text built once at startup from
// Herald's query, with its ordering and its limit of one more than the page) and writing the same
// JSON: each contact with its attributes, groups, subscriptions and time zone.
import { createServer } from 'node:http';
import knex from 'knex';
import pg from 'pg';
import { tenant } from '../../src/db/tenant.js';
import { listQuery } from '../../src/modules/contacts/service.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const orgId = process.env.BENCH_ORG_ID!;
const PAGE = 1000;

// Only builds the statement's text: this knex never connects.
const builder = knex({ client: 'pg' });
const statement = listQuery(tenant(builder, orgId), {})
  .orderBy([
    { column: 'contacts.created_at', order: 'desc' },
    { column: 'contacts.id', order: 'desc' },
  ])
  .limit(PAGE + 1)
  .toSQL()
  .toNative();

type Left = Record<string, { at: string; source: string } | undefined> | null;
const subscription = (left: Left, channel: string) => {
  const entry = left?.[channel];
  return entry ? { status: 'unsubscribed', unsubscribedAt: entry.at, source: entry.source } : { status: 'subscribed', unsubscribedAt: null, source: null };
};

createServer(async (req, res) => {
  if (req.url === '/health') return res.end('ok');
  const { rows } = await pool.query(statement.sql, statement.bindings as unknown[]);
  const body = rows.slice(0, PAGE).map((r) => ({
    _id: r.id,
    name: r.name,
    email: r.email,
    phone: r.phone,
    countryCode: r.country_code,
    organization: r.company,
    tags: r.tags,
    attributes: r.attributes,
    groups: r.groups,
    subscriptions: { email: subscription(r.unsubscribed, 'email'), sms: subscription(r.unsubscribed, 'sms'), whatsapp: subscription(r.unsubscribed, 'whatsapp') },
    timezone: r.time_zone,
    ServiceOrganization: r.organization_id,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  }));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}).listen(Number(process.env.PORT), '127.0.0.1');
