import type { Knex } from 'knex';
import pg from 'pg';
import type { Statement as Named } from '../../src/db/statements.js';
// @ts-expect-error node-postgres's own conversion of a parameter to its text (dates, arrays, JSON) has no types
import { prepareValue } from 'pg/lib/utils.js';
import { LAYOUT } from '../../src/db/layout.js';

/** A statement a Herald issued, as knex ran it. */
export interface Statement {
  sql: string;
  bindings: unknown[];
}

/** Statements about organizations' rows: they name a tenant table (or the outbox view over one). */
const TENANT_TABLE = new RegExp(`\\b(${[...LAYOUT.tenant, 'sandbox_outbox'].join('|')})\\b`);

/**
 * Maintenance of a table (`ANALYZE contact_import_rows` after an import's rows are staged): it reads
 * no organization's rows for anyone, and names none. The test run's database is shared, so a Herald
 * under test may run another test file's queued import while a capture is open.
 */
const MAINTENANCE = /^\s*(ANALYZE|VACUUM)\b/i;

/** Runs `request` and answers its result with the tenant statements `db` (a Herald's knex) ran meanwhile. */
export async function tenantStatementsOf<T>(db: Knex, request: () => Promise<T>): Promise<{ result: T; statements: Statement[] }> {
  const statements: Statement[] = [];
  const listener = (q: Statement) => {
    if (TENANT_TABLE.test(q.sql) && !MAINTENANCE.test(q.sql)) statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
  };
  db.on('query', listener);
  try {
    return { result: await request(), statements };
  } finally {
    db.removeListener('query', listener);
  }
}

export const isCitus = async (client: pg.Client) => (await client.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).rowCount === 1;

/**
 * The statement's text with its values written in, as node-postgres would have sent them: Citus
 * cannot EXPLAIN some statements with bound parameters (an `INSERT ... SELECT`, a step's `INSERT`).
 */
function inlined(client: pg.Client, s: Statement): string {
  return s.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const value = prepareValue(s.bindings[Number(n) - 1]) as string | null | undefined;
    return value === null || value === undefined ? 'NULL' : client.escapeLiteral(String(value));
  });
}

/** On Citus: the counts of shards the statement is sent to, one per distributed (sub)plan. */
export async function taskCounts(client: pg.Client, s: Statement): Promise<number[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${inlined(client, s)}`);
  return rows.flatMap((r) => [...r['QUERY PLAN'].matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1])));
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** A Citus plan node: the plans its shards run (their tables named with the shard's number). */
interface DistributedNode extends PlanNode {
  'Distributed Query'?: { Job: { Tasks?: { 'Remote Plan': { Plan: PlanNode }[][] }[] } };
}

/** The scans of tenant tables in the statement's plan (on Citus, in its shards' plans), with the conditions each applies. */
export async function tenantScans(client: pg.Client, s: Statement): Promise<{ table: string; conditions: string }[]> {
  const { rows } = (await isCitus(client)) ? await client.query(`EXPLAIN (FORMAT JSON) ${inlined(client, s)}`) : await client.query(`EXPLAIN (FORMAT JSON) ${s.sql}`, s.bindings);
  const scans: { table: string; conditions: string }[] = [];
  const walk = (node: DistributedNode) => {
    for (const task of node['Distributed Query']?.Job.Tasks ?? []) walk(task['Remote Plan'][0]![0]!.Plan);
    const table = node['Relation Name']?.replace(/_\d+$/, '');
    if (table && node['Node Type'].endsWith('Scan') && (LAYOUT.tenant as readonly string[]).includes(table)) {
      scans.push({ table, conditions: [node['Index Cond'], node['Recheck Cond'], node.Filter].filter(Boolean).join(' AND ') });
    }
    node.Plans?.forEach(walk);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  return scans;
}

/**
 * Every statement names the organization and stays with it: on Citus each distributed plan goes to
 * one shard; on plain Postgres each scan of a tenant table is restricted by the organization itself.
 * A statement that names another organization of the database and not this one is that
 * organization's work running meanwhile (a queued job of an earlier send: the capture sees the whole
 * pool): it is held to the same rule with its own organization.
 */
export async function expectEachWithOrganization(client: pg.Client, statements: Statement[], orgId: string) {
  const citus = await isCitus(client);
  const organizations = new Set((await client.query<{ id: string }>('SELECT id::text FROM organizations')).rows.map((r) => r.id));
  for (const s of statements) {
    const own = s.bindings.includes(orgId) ? orgId : (s.bindings.find((b): b is string => typeof b === 'string' && organizations.has(b)) ?? orgId);
    expect({ sql: s.sql, bindings: s.bindings }).toEqual({ sql: s.sql, bindings: expect.arrayContaining([own]) });
    if (citus) {
      // At least one distributed plan, and each of them on a single shard.
      const counts = await taskCounts(client, s);
      expect({ sql: s.sql, counts }).toEqual({ sql: s.sql, counts: counts.length ? counts.map(() => 1) : [1] });
    } else {
      for (const scan of await tenantScans(client, s)) {
        expect({ sql: s.sql, ...scan }).toEqual({ sql: s.sql, ...scan, conditions: expect.stringContaining(`organization_id = '${own}'::uuid`) });
      }
    }
  }
}

/** A named statement (`db/statements.ts`) as it runs with `params`, to check like a recorded one. */
export const named = <P extends object>(st: Named<P, any>, params: P): Statement => ({ sql: st.text, bindings: st.order.map((k) => params[k]) });

/** `expectEachWithOrganization` on a connection of its own to the test database (where EXPLAIN runs). */
export async function expectStatementsStayWith(statements: Statement[], orgId: string) {
  const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();
  try {
    await expectEachWithOrganization(explain, statements, orgId);
  } finally {
    await explain.end();
  }
}
