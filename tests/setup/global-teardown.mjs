import { rmSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

/**
 * Drops every database of this run still there (the template, and a copy whose file was
 * interrupted before its environment's teardown), then stops the embedded Postgres.
 */
export default async function globalTeardown() {
  const db = globalThis.__heraldTestDb;
  if (db && process.env.KEEP_TEST_DB !== '1') {
    const { dropDatabasesLike } = await tsImport('./databases.ts', import.meta.url);
    await dropDatabasesLike(db.adminUrl, db.run);
  }
  const embedded = globalThis.__heraldEmbedded;
  if (embedded) {
    await embedded.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
  }
}
