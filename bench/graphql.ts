// The same 1,000-contact read through both doors: GraphQL `contacts(first: 1000)` asking for the
// fields REST answers, against REST `GET /contacts?limit=1000`, on one Herald process, in
// interleaved autocannon rounds with the same token. Prints `ratio: <GraphQL req/s / REST req/s>`;
// the goal is >= 0.80.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { compare, freshDatabase, load, median, report, signup, startProcess, summary } from './lib/harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const CONTACTS = 1000;

// `first` goes as a variable, as a frontend sends it; the cost limit (src/graphql/cost-limit.ts) counts
// it all the same: about 13,000 for this page, under the limit of 100,000.
const QUERY = `query Bench($first: Int) {
  contacts(first: $first) {
    edges { node { _id name email phone countryCode organization tags groupIds ServiceOrganization createdAt updatedAt } }
  }
}`;

const db = await freshDatabase('graphql');
const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex') };
const herald = await startProcess('src/main.ts', env, 4741, '/ready');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
try {
  const { token, orgId } = await signup(herald.url);
  // 1,000 contacts, each in one of three groups, as bench/contacts seeds them through the API.
  await pool.query(`INSERT INTO groups (organization_id, name, color) SELECT $1, n, 'bg-blue-500' FROM unnest(ARRAY['VIP', 'Leads', 'Staff']) AS n`, [orgId]);
  await pool.query(
    `WITH c AS (
       INSERT INTO contacts (organization_id, name, email, phone, tags, created_at)
       SELECT $1, 'Contact ' || i, 'contact' || i || '@example.com', '+2547' || lpad((10000000 + i)::text, 8, '0'),
              ARRAY['bench', CASE WHEN i % 2 = 1 THEN 'odd' ELSE 'even' END], date_trunc('milliseconds', now()) - i * interval '1 ms'
       FROM generate_series(0, $2 - 1) AS i
       RETURNING id, name, created_at
     ), g AS (SELECT id, row_number() OVER (ORDER BY name) - 1 AS k FROM groups WHERE organization_id = $1)
     INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
     SELECT $1, c.id, g.id, c.created_at FROM c JOIN g ON g.k = substring(c.name from 9)::int % 3`,
    [orgId, CONTACTS],
  );
  const authHeader = { authorization: `Bearer ${token}` };
  const gqlHeaders = { ...authHeader, 'content-type': 'application/json' };
  const body = JSON.stringify({ query: QUERY, variables: { first: CONTACTS } });

  // Both doors must answer the same contacts with the same field values.
  const rest = (await fetch(`${herald.url}/contacts?limit=${CONTACTS}`, { headers: authHeader }).then((r) => r.json())) as Record<string, unknown>[];
  const gql = (await fetch(`${herald.url}/graphql`, { method: 'POST', headers: gqlHeaders, body }).then((r) => r.json())) as any;
  if (gql.errors) throw new Error(`graphql: ${JSON.stringify(gql.errors)}`);
  const nodes = (gql.data.contacts.edges as { node: Record<string, unknown> }[]).map((e) => {
    const { groupIds, ...rest } = e.node;
    return { ...rest, groups: groupIds };
  });
  const same = (a: Record<string, unknown>, b: Record<string, unknown>) => Object.keys(a).every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
  if (rest.length !== CONTACTS || nodes.length !== CONTACTS || !rest.every((r, i) => same(r, nodes[i]!))) throw new Error('GraphQL and REST answers differ');
  const bytes = (await fetch(`${herald.url}/graphql`, { method: 'POST', headers: gqlHeaders, body }).then((r) => r.arrayBuffer())).byteLength;
  const restBytes = (await fetch(`${herald.url}/contacts?limit=${CONTACTS}`, { headers: authHeader }).then((r) => r.arrayBuffer())).byteLength;
  console.log(`graphql: ${CONTACTS} contacts (GraphQL ${(bytes / 1024).toFixed(0)} KB, REST ${(restBytes / 1024).toFixed(0)} KB); ${ROUNDS} rounds x ${SECONDS}s, ${CONNECTIONS} connections`);

  const results = await compare(
    [
      { name: 'graphql', run: () => load(`${herald.url}/graphql`, gqlHeaders, SECONDS, CONNECTIONS, { method: 'POST', body }) },
      { name: 'rest', run: () => load(`${herald.url}/contacts?limit=${CONTACTS}`, authHeader, SECONDS, CONNECTIONS) },
    ],
    ROUNDS,
  );
  const ratio = report(results, 'graphql', 'rest');
  summary({
    goal: '>= 0.80',
    p99: ['herald', median(results.graphql!.map((r) => r.p99)), 'baseline', median(results.rest!.map((r) => r.p99))],
    spread: ['herald', results.graphql!.map((r) => r.rps), 'baseline', results.rest!.map((r) => r.rps), 'req/s'],
  });
  console.log(`ratio: ${ratio.toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
}
