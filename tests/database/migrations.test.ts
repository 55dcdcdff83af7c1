import { createDb, type Db } from '../../src/db/database.js';
import { migrateLatest, migrateRollback } from '../../src/db/migrate.js';
import { isolatedDatabase } from '../helpers/herald.js';

/**
 * Every migration undoes what it does: on a database of its own, every batch is rolled back (the
 * public schema is left with knex's bookkeeping alone) and applied again, and the schema that comes
 * back is the one that went: tables, columns, indexes, constraints and functions, compared as the
 * catalog prints them. CI runs this tier on a second Postgres server of another major version.
 */

type Rows<T> = { rows: T[] };

/** The public schema as text, in a stable order. */
async function catalog(db: Db): Promise<string[]> {
  const q = async (sql: string) => ((await db.raw(sql)) as Rows<{ line: string }>).rows.map((r) => r.line);
  return [
    ...(await q(`SELECT format('column %s.%s %s %s %s', table_name, column_name, data_type, is_nullable, coalesce(column_default, '')) AS line
                   FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`)),
    ...(await q(`SELECT format('index %s', indexdef) AS line FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`)),
    ...(await q(`SELECT format('constraint %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) AS line
                   FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY conrelid::regclass::text, conname`)),
    ...(await q(`SELECT format('function %s(%s)', proname, pg_get_function_identity_arguments(oid)) AS line
                   FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY proname, 1`)),
    ...(await q(`SELECT format('type %s', typname) AS line FROM pg_type
                  WHERE typnamespace = 'public'::regnamespace AND typtype = 'e' ORDER BY typname`)),
  ];
}

let database: Awaited<ReturnType<typeof isolatedDatabase>>;
let db: Db;

beforeAll(async () => {
  database = await isolatedDatabase('migrations');
  db = createDb(database.url, 2);
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

test('rolling every migration back leaves no table of Herald, and applying them again gives the same schema', async () => {
  const isCitus = ((await db.raw("SELECT 1 FROM pg_extension WHERE extname = 'citus'")) as Rows<unknown>).rows.length > 0;
  if (isCitus) return; // a distributed table's rollback is a drop on every node; the plain server checks the migrations themselves
  const before = await catalog(db);
  expect(before.some((l) => l.startsWith('column contacts.organization_id'))).toBe(true);

  const undone = await migrateRollback(db, true);
  expect(undone.length).toBeGreaterThan(0);
  const left = ((await db.raw(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
  )) as Rows<{ table_name: string }>).rows.map((r) => r.table_name);
  expect(left).toEqual(['knex_migrations', 'knex_migrations_lock']);

  await migrateLatest(db);
  expect(await catalog(db)).toEqual(before);
});
