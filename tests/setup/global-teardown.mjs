import { rmSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

export default async function globalTeardown() {
  const db = globalThis.__heraldTestDb;
  if (db && process.env.KEEP_TEST_DB !== '1') {
    const { dropDatabase } = await tsImport('./databases.ts', import.meta.url);
    await dropDatabase(db.adminUrl, db.name);
  }
  const embedded = globalThis.__heraldEmbedded;
  if (embedded) {
    await embedded.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
  }
}
