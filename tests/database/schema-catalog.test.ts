import { randomBytes } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { LAYOUT } from '../../src/db/layout.js';
import { startTestHerald } from '../helpers/herald.js';

/**
 * decisions.md, "Data layout": every table holding one organization's data carries a NOT NULL
 * `organization_id`, its primary key is `(organization_id, ...)`, and its unique constraints,
 * indexes and foreign keys to other such tables lead with `organization_id`. `users` and
 * `api_keys` are global tables (found by email or key hash before the organization is known).
 *
 * The same rules are what lets Citus distribute the tenant tables by `organization_id`
 * (`src/db/layout.ts` says where each table lives there): every table is placed, and nothing keeps a
 * tenant table from being distributed (a trigger, a key from a global table into it).
 */

let herald: Herald;

beforeAll(async () => {
  herald = await startTestHerald();
});
afterAll(() => herald.stop());

const GLOBAL_TABLES = new Set<string>([...LAYOUT.reference, ...LAYOUT.coordinator, ...LAYOUT.local]);
const EXPECTED_TENANT_TABLES = ['campaign_batches', 'campaigns', 'contact_groups', 'contacts', 'groups', 'idempotency_keys', 'message_logs', 'sandbox_sends'];
/** Tenant tables of one row per organization (its balance): their key is `organization_id` alone. */
const ONE_ROW_PER_ORGANIZATION = new Set(['organization_credits']);

type Rows<T> = { rows: T[] };

/** The tables of `schema` that have an `organization_id` column, global ones excluded. */
async function tenantTables(schema: string): Promise<string[]> {
  const { rows } = (await herald.db.raw(
    `SELECT c.table_name
       FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = ? AND c.column_name = 'organization_id' AND t.table_type = 'BASE TABLE'
      ORDER BY c.table_name`,
    [schema],
  )) as Rows<{ table_name: string }>;
  return rows.map((r) => r.table_name).filter((t) => !GLOBAL_TABLES.has(t));
}

/** Every breach of the layout rule in `schema`, as readable lines; empty when the rule holds. */
async function layoutViolations(schema: string): Promise<string[]> {
  const tables = await tenantTables(schema);
  const tenant = new Set(tables);
  const problems: string[] = [];
  if (!tables.length) return problems;

  // organization_id NOT NULL.
  const nullable = (await herald.db.raw(
    `SELECT table_name FROM information_schema.columns
      WHERE table_schema = ? AND column_name = 'organization_id' AND is_nullable <> 'NO' AND table_name = ANY(?)`,
    [schema, tables],
  )) as Rows<{ table_name: string }>;
  for (const r of nullable.rows) problems.push(`${r.table_name}: organization_id is nullable`);

  // Constraints: primary key, unique and foreign keys, with their first column on each side.
  const constraints = (await herald.db.raw(
    `SELECT rel.relname AS table_name, con.conname, con.contype,
            (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = con.conrelid AND a.attnum = con.conkey[1]) AS first_col,
            frel.relname AS ref_table, fns.nspname AS ref_schema,
            (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = con.confrelid AND a.attnum = con.confkey[1]) AS ref_first_col,
            (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS cols,
            (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) AS ref_cols
       FROM pg_constraint con
       JOIN pg_class rel ON rel.oid = con.conrelid
       JOIN pg_namespace ns ON ns.oid = rel.relnamespace
       LEFT JOIN pg_class frel ON frel.oid = con.confrelid
       LEFT JOIN pg_namespace fns ON fns.oid = frel.relnamespace
      WHERE ns.nspname = ? AND rel.relname = ANY(?) AND con.contype IN ('p', 'u', 'f', 'x')`,
    [schema, tables],
  )) as Rows<{
    table_name: string;
    conname: string;
    contype: string;
    first_col: string;
    ref_table: string | null;
    ref_schema: string | null;
    ref_first_col: string | null;
    cols: string[];
    ref_cols: string[] | null;
  }>;

  for (const table of tables) {
    const pk = constraints.rows.find((c) => c.table_name === table && c.contype === 'p');
    if (!pk) problems.push(`${table}: no primary key`);
    else if (pk.first_col !== 'organization_id') problems.push(`${table}: primary key ${pk.conname} (${pk.cols.join(', ')}) does not start with organization_id`);
  }
  for (const c of constraints.rows) {
    if ((c.contype === 'u' || c.contype === 'x') && c.first_col !== 'organization_id') {
      problems.push(`${c.table_name}: unique constraint ${c.conname} (${c.cols.join(', ')}) does not lead with organization_id`);
    }
    if (c.contype === 'f' && c.ref_schema === schema && tenant.has(c.ref_table!)) {
      const oi = c.cols.indexOf('organization_id');
      if (c.first_col !== 'organization_id' || c.ref_first_col !== 'organization_id' || oi !== c.ref_cols!.indexOf('organization_id')) {
        problems.push(
          `${c.table_name}: foreign key ${c.conname} (${c.cols.join(', ')}) -> ${c.ref_table} (${c.ref_cols!.join(', ')}) does not lead with organization_id on both sides`,
        );
      }
    }
  }

  // Indexes (unique ones, including expression indexes, and plain ones): the first key is organization_id.
  const indexes = (await herald.db.raw(
    `SELECT t.relname AS table_name, i.relname AS index_name, x.indisunique AS is_unique,
            pg_get_indexdef(x.indexrelid, 1, true) AS first_key, pg_get_indexdef(x.indexrelid) AS def
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_namespace ns ON ns.oid = t.relnamespace
      WHERE ns.nspname = ? AND t.relname = ANY(?)`,
    [schema, tables],
  )) as Rows<{ table_name: string; index_name: string; is_unique: boolean; first_key: string; def: string }>;
  for (const ix of indexes.rows) {
    if (ix.first_key.replace(/"/g, '') !== 'organization_id') {
      problems.push(`${ix.table_name}: ${ix.is_unique ? 'unique ' : ''}index ${ix.index_name} does not lead with organization_id: ${ix.def}`);
    }
  }

  // Foreign keys from elsewhere (global tables included) into a tenant table must also carry the organization.
  const inbound = (await herald.db.raw(
    `SELECT rel.relname AS table_name, con.conname, frel.relname AS ref_table,
            (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = con.conrelid AND a.attnum = con.conkey[1]) AS first_col,
            (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = con.confrelid AND a.attnum = con.confkey[1]) AS ref_first_col
       FROM pg_constraint con
       JOIN pg_class rel ON rel.oid = con.conrelid
       JOIN pg_class frel ON frel.oid = con.confrelid
       JOIN pg_namespace fns ON fns.oid = frel.relnamespace
      WHERE con.contype = 'f' AND fns.nspname = ? AND frel.relname = ANY(?) AND NOT (rel.relname = ANY(?))`,
    [schema, tables, tables],
  )) as Rows<{ table_name: string; conname: string; ref_table: string; first_col: string; ref_first_col: string }>;
  for (const c of inbound.rows) {
    if (c.first_col !== 'organization_id' || c.ref_first_col !== 'organization_id') {
      problems.push(`${c.table_name}: foreign key ${c.conname} into tenant table ${c.ref_table} does not lead with organization_id`);
    }
  }
  return problems;
}

test('every tenant table the decisions list is recognised as one', async () => {
  const tables = await tenantTables('public');
  for (const t of EXPECTED_TENANT_TABLES) expect(tables).toContain(t);
  // The global tables do carry organization_id, and are the only ones excused.
  const all = (await herald.db.raw(`SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'organization_id'`)) as Rows<{
    table_name: string;
  }>;
  expect(all.rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['users', 'api_keys']));
});

test('tenant tables: organization_id NOT NULL, primary key, unique constraints and indexes and foreign keys lead with it', async () => {
  expect(await layoutViolations('public')).toEqual([]);
});

test('every tenant primary key is (organization_id, ...) with at least one more column, or organization_id alone for one row per organization', async () => {
  const { rows } = (await herald.db.raw(
    `SELECT rel.relname AS table_name, array_length(con.conkey, 1) AS n
       FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid JOIN pg_namespace ns ON ns.oid = rel.relnamespace
      WHERE ns.nspname = 'public' AND con.contype = 'p' AND rel.relname = ANY(?)`,
    [await tenantTables('public')],
  )) as Rows<{ table_name: string; n: number }>;
  expect(rows.length).toBe((await tenantTables('public')).length);
  for (const r of rows) {
    const expected = ONE_ROW_PER_ORGANIZATION.has(r.table_name) ? 1 : 'more than 1';
    expect({ table: r.table_name, keyColumns: r.n > 1 ? 'more than 1' : r.n }).toEqual({ table: r.table_name, keyColumns: expected });
  }
});

test('every table is placed for Citus: the tenant tables are exactly those with an organization_id', async () => {
  const { rows } = (await herald.db.raw(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  )) as Rows<{ table_name: string }>;
  const placed = new Set<string>([...LAYOUT.tenant, ...LAYOUT.reference, ...LAYOUT.coordinator, ...LAYOUT.local]);
  expect(rows.map((r) => r.table_name).filter((t) => !placed.has(t))).toEqual([]);
  expect(await tenantTables('public')).toEqual([...LAYOUT.tenant].sort());
});

/**
 * What would keep Citus from distributing `tenant` tables of `schema` (next to `reference` ones): a
 * trigger on them, a key from a tenant table to a table that is neither, or into a tenant table
 * from a table that is not one.
 */
async function distributionBlockers(schema: string, tenantTables: readonly string[], referenceTables: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const triggers = (await herald.db.raw(
    `SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ? AND NOT t.tgisinternal AND c.relname = ANY(?)`,
    [schema, [...tenantTables, ...referenceTables]],
  )) as Rows<{ relname: string; tgname: string }>;
  for (const t of triggers.rows) problems.push(`${t.relname}: trigger ${t.tgname}`);
  const keys = (await herald.db.raw(
    `SELECT rel.relname AS from_table, ref.relname AS to_table, con.conname
       FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid JOIN pg_class ref ON ref.oid = con.confrelid
       JOIN pg_namespace n ON n.oid = rel.relnamespace
      WHERE con.contype = 'f' AND n.nspname = ? AND (rel.relname = ANY(?) OR ref.relname = ANY(?))`,
    [schema, [...tenantTables], [...tenantTables]],
  )) as Rows<{ from_table: string; to_table: string; conname: string }>;
  const tenant = new Set(tenantTables);
  const reference = new Set(referenceTables);
  for (const k of keys.rows) {
    if (!(tenant.has(k.from_table) && (tenant.has(k.to_table) || reference.has(k.to_table)))) {
      problems.push(`${k.from_table}: foreign key ${k.conname} -> ${k.to_table}`);
    }
  }
  return problems;
}

/**
 * Triggers Citus takes to the shards (`src/db/citus.ts` distributes with `citus.enable_unsafe_triggers`):
 * row triggers that only raise and read no other table.
 */
const SHARD_SAFE_TRIGGERS = ['audit_log: trigger audit_log_append_only'];

test('nothing keeps a tenant table from being distributed: no triggers (but shard-safe guards), no keys into it from a table that is not one', async () => {
  const blockers = await distributionBlockers('public', LAYOUT.tenant, LAYOUT.reference);
  expect(blockers.filter((b) => !SHARD_SAFE_TRIGGERS.includes(b))).toEqual([]);
});

test('that check fails on a trigger and on keys Citus refuses', async () => {
  const schema = `citus_probe_${randomBytes(4).toString('hex')}`;
  await herald.db.raw(`CREATE SCHEMA ${schema}`);
  try {
    await herald.db.raw(`
      CREATE TABLE ${schema}.orgs (id uuid PRIMARY KEY);
      CREATE TABLE ${schema}.items (organization_id uuid NOT NULL REFERENCES ${schema}.orgs (id), id uuid NOT NULL, PRIMARY KEY (organization_id, id));
      CREATE TABLE ${schema}.people (id uuid PRIMARY KEY, organization_id uuid, item_id uuid,
                                     FOREIGN KEY (organization_id, item_id) REFERENCES ${schema}.items (organization_id, id));
      CREATE TABLE ${schema}.notes (organization_id uuid NOT NULL, id uuid NOT NULL, person_id uuid REFERENCES ${schema}.people (id), PRIMARY KEY (organization_id, id));
      CREATE FUNCTION ${schema}.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
      CREATE TRIGGER items_touched BEFORE UPDATE ON ${schema}.items FOR EACH ROW EXECUTE FUNCTION ${schema}.touch();
    `);
    const problems = await distributionBlockers(schema, ['items', 'notes'], ['orgs']);
    expect(problems.sort()).toEqual([
      'items: trigger items_touched',
      expect.stringMatching(/^notes: foreign key \S+ -> people$/),
      expect.stringMatching(/^people: foreign key \S+ -> items$/),
    ]);
  } finally {
    await herald.db.raw(`DROP SCHEMA ${schema} CASCADE`);
  }
});

test('on Citus, every table is where the layout puts it', async () => {
  const { rows: citus } = await herald.db.raw("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
  if (!citus.length) return; // plain Postgres: nothing is distributed
  const { rows } = (await herald.db.raw(
    `SELECT logicalrelid::regclass::text AS table_name, partmethod, repmodel, colocationid FROM pg_dist_partition`,
  )) as Rows<{ table_name: string; partmethod: string; repmodel: string; colocationid: number }>;
  const at = new Map(rows.map((r) => [r.table_name, r]));
  for (const t of LAYOUT.tenant) expect({ t, method: at.get(t)?.partmethod }).toEqual({ t, method: 'h' });
  expect(new Set(LAYOUT.tenant.map((t) => at.get(t)?.colocationid)).size).toBe(1);
  for (const t of LAYOUT.reference) expect({ t, kind: at.get(t)?.repmodel }).toEqual({ t, kind: 't' });
  for (const t of LAYOUT.coordinator) expect({ t, kind: `${at.get(t)?.partmethod}${at.get(t)?.repmodel}` }).toEqual({ t, kind: 'ns' });
  for (const t of LAYOUT.local) expect({ t, placed: at.has(t) }).toEqual({ t, placed: false });
});

test('the check itself fails on tables that break the rule', async () => {
  // A scratch schema of deliberately wrong tables, so the check is shown to catch each breach.
  const schema = `layout_probe_${randomBytes(4).toString('hex')}`;
  await herald.db.raw(`CREATE SCHEMA ${schema}`);
  try {
    await herald.db.raw(`
      CREATE TABLE ${schema}.good (organization_id uuid NOT NULL, id uuid NOT NULL, name text, PRIMARY KEY (organization_id, id));
      CREATE UNIQUE INDEX good_name ON ${schema}.good (organization_id, lower(name));
      CREATE TABLE ${schema}.bad_pk (id uuid PRIMARY KEY, organization_id uuid NOT NULL);
      CREATE TABLE ${schema}.nullable_org (organization_id uuid, id uuid NOT NULL);
      CREATE TABLE ${schema}.bad_unique (organization_id uuid NOT NULL, id uuid NOT NULL, code text, PRIMARY KEY (organization_id, id), UNIQUE (code));
      CREATE TABLE ${schema}.bad_index (organization_id uuid NOT NULL, id uuid NOT NULL, email text, PRIMARY KEY (organization_id, id));
      CREATE UNIQUE INDEX bad_index_email ON ${schema}.bad_index (lower(email));
      CREATE INDEX bad_index_plain ON ${schema}.bad_index (email, organization_id);
      CREATE TABLE ${schema}.bad_fk (organization_id uuid NOT NULL, id uuid NOT NULL, good_id uuid, PRIMARY KEY (organization_id, id));
      CREATE UNIQUE INDEX good_id_only ON ${schema}.good (id, organization_id);
      ALTER TABLE ${schema}.bad_fk ADD CONSTRAINT bad_fk_good FOREIGN KEY (good_id, organization_id) REFERENCES ${schema}.good (id, organization_id);
    `);
    const problems = await layoutViolations(schema);
    const text = problems.join('\n');
    expect(problems.some((p) => p.startsWith('bad_pk: primary key'))).toBe(true);
    expect(problems).toContain('nullable_org: organization_id is nullable');
    expect(problems).toContain('nullable_org: no primary key');
    expect(text).toMatch(/bad_unique: unique constraint bad_unique_code_key/);
    expect(text).toMatch(/bad_unique: unique index bad_unique_code_key/);
    expect(text).toMatch(/bad_index: unique index bad_index_email/);
    expect(text).toMatch(/bad_index: index bad_index_plain/);
    expect(text).toMatch(/bad_fk: foreign key bad_fk_good/);
    expect(text).toMatch(/good: unique index good_id_only/);
    // The well-formed parts raise nothing.
    expect(text).not.toMatch(/good_name|good: primary key|bad_fk: primary key/);
  } finally {
    await herald.db.raw(`DROP SCHEMA ${schema} CASCADE`);
  }
});
