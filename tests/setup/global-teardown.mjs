import { rmSync } from 'node:fs';
import pg from 'pg';

export default async function globalTeardown() {
  const db = globalThis.__heraldTestDb;
  if (db && process.env.KEEP_TEST_DB !== '1') {
    const client = new pg.Client({ connectionString: db.adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS "${db.name}" WITH (FORCE)`);
    await client.end();
  }
  const embedded = globalThis.__heraldEmbedded;
  if (embedded) {
    await embedded.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
  }
}
