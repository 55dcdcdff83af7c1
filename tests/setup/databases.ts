import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

/** The repository's root, where `src/cli/migrate.ts` is run from. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Creates the database `name` on the server of `adminUrl` and answers its URL. When the admin
 * database is a Citus coordinator (it has the `citus` extension and nodes), the new database joins
 * the same cluster: the extension, the coordinator and the same workers. The workers must have the
 * database (CREATE DATABASE propagates with `citus.enable_create_database_propagation`) and the
 * `citus` extension in it (install it in the workers' `template1`); see docs/operations.md, "Scaling out".
 * Herald's migrations then lay the tables out on the cluster (`src/db/citus.ts`).
 */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const nodes = await withClient(adminUrl, async (admin) => {
    await admin.query(`CREATE DATABASE "${name}"`);
    return citusNodes(admin);
  });
  const url = databaseUrl(adminUrl, name);
  if (nodes.length) {
    await withClient(url, async (db) => {
      await db.query('CREATE EXTENSION IF NOT EXISTS citus');
      for (const node of nodes) {
        if (node.groupid === 0) await db.query('SELECT citus_set_coordinator_host($1, $2)', [node.nodename, node.nodeport]);
        else await db.query('SELECT citus_add_node($1, $2)', [node.nodename, node.nodeport]);
      }
    });
  }
  return url;
}

/** The Citus nodes the admin database knows (none when it is no coordinator). */
async function citusNodes(admin: pg.Client) {
  const citus = await admin.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
  if (!citus.rowCount) return [];
  return (await admin.query<{ nodename: string; nodeport: number; groupid: number }>(
    'SELECT nodename, nodeport, groupid FROM pg_dist_node WHERE isactive ORDER BY groupid',
  )).rows;
}

/** Whether the server of `adminUrl` is a Citus coordinator with nodes. */
export async function isCitusCoordinator(adminUrl: string): Promise<boolean> {
  return withClient(adminUrl, async (admin) => (await citusNodes(admin)).length > 0);
}

/** `adminUrl` with the database `name`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs Herald's migrations (its own and the queue's) on `url`, in a child process as an operator would. */
export async function migrateDatabase(url: string): Promise<void> {
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/migrate.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, NODE_OPTIONS: '', DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-test-data-')) },
  });
}

/**
 * Makes the migrated database `name` a template: no one may connect to it any more (a connection
 * open to a template makes every CREATE DATABASE from it fail), and it is cloned by
 * `cloneDatabase`.
 */
export async function sealTemplate(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (admin) => {
    await admin.query(`ALTER DATABASE "${name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
    // Sessions still open on it (the migration's have ended; a pool may linger for a moment).
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  });
}

/**
 * A new database `name`, a copy of the template `template` (its schema and the queue's, migrated
 * once): a file copy on the server, a fraction of a second where migrating takes seconds.
 */
export async function cloneDatabase(adminUrl: string, template: string, name: string): Promise<string> {
  await withClient(adminUrl, (admin) => admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return databaseUrl(adminUrl, name);
}

/**
 * Drops the database `name` (on Citus, the drop propagates to the workers). `WITH (FORCE)` ends
 * the sessions still on it: a test file's Herald, its workers' and LISTEN connections, whatever a
 * failed test left open.
 */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (admin) => {
    await admin.query(`ALTER DATABASE "${name}" WITH IS_TEMPLATE false`).catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
}

/** Drops every database whose name starts with `prefix` (a test run's, left by an interrupted file); answers their names. */
export async function dropDatabasesLike(adminUrl: string, prefix: string): Promise<string[]> {
  const names = await withClient(adminUrl, async (admin) =>
    (await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [prefix])).rows.map((r) => r.datname),
  );
  // Copies first, the template last.
  names.sort((a, b) => b.length - a.length);
  for (const name of names) await dropDatabase(adminUrl, name);
  return names;
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
