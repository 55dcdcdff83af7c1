import pg from 'pg';

/**
 * Creates the database `name` on the server of `adminUrl` and answers its URL. When the admin
 * database is a Citus coordinator (it has the `citus` extension and nodes), the new database joins
 * the same cluster: the extension, the coordinator and the same workers. The workers must have the
 * database (CREATE DATABASE propagates with `citus.enable_create_database_propagation`) and the
 * `citus` extension in it (install it in the workers' `template1`); see the README, "Scaling out".
 * Herald's migrations then lay the tables out on the cluster (`src/db/citus.ts`).
 */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const nodes = await withClient(adminUrl, async (admin) => {
    await admin.query(`CREATE DATABASE "${name}"`);
    const citus = await admin.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
    if (!citus.rowCount) return [];
    return (await admin.query<{ nodename: string; nodeport: number; groupid: number }>(
      'SELECT nodename, nodeport, groupid FROM pg_dist_node WHERE isactive ORDER BY groupid',
    )).rows;
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  if (nodes.length) {
    await withClient(url.toString(), async (db) => {
      await db.query('CREATE EXTENSION IF NOT EXISTS citus');
      for (const node of nodes) {
        if (node.groupid === 0) await db.query('SELECT citus_set_coordinator_host($1, $2)', [node.nodename, node.nodeport]);
        else await db.query('SELECT citus_add_node($1, $2)', [node.nodename, node.nodeport]);
      }
    });
  }
  return url.toString();
}

/** Drops the database `name` (on Citus, the drop propagates to the workers). */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
