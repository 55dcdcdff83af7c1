import pg from 'pg';

/**
 * Every place in the database where a needle is written: `schema.table.column (needle): rows` for
 * every text, array and JSON column of every table (graphile-worker's queue included). With
 * `orgId`, a table that has an `organization_id` is searched in that organization's rows only;
 * `except` leaves tables out.
 */
export async function whereWritten(needles: string[], { orgId, except = [] }: { orgId?: string; except?: string[] } = {}): Promise<string[]> {
  const client = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await client.connect();
  try {
    const { rows: columns } = await client.query<{ schema: string; table: string; column: string; tenant: boolean }>(
      `SELECT c.table_schema AS schema, c.table_name AS table, c.column_name AS column,
              EXISTS (SELECT 1 FROM information_schema.columns o WHERE o.table_schema = c.table_schema AND o.table_name = c.table_name AND o.column_name = 'organization_id') AS tenant
       FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
       WHERE c.table_schema IN ('public', 'graphile_worker', 'graphile_worker_private') AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'uuid')
         AND NOT (c.table_name = ANY($1))`,
      [except],
    );
    const found: string[] = [];
    for (const { schema, table, column, tenant } of columns) {
      for (const needle of needles) {
        const scoped = tenant && orgId !== undefined;
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM "${schema}"."${table}" WHERE "${column}"::text ILIKE '%' || $1 || '%'${scoped ? ' AND organization_id = $2' : ''}`,
          scoped ? [needle, orgId] : [needle],
        );
        if (rows[0].n) found.push(`${schema}.${table}.${column} (${needle}): ${rows[0].n}`);
      }
    }
    return found;
  } finally {
    await client.end();
  }
}
