// Plain ESM, loaded by jest without its transform; the TypeScript it needs comes through tsx.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { tsImport } from 'tsx/esm/api';

/**
 * One fresh database per test run: on `DATABASE_URL`'s server when it is set, otherwise on an
 * embedded Postgres in a temporary directory. Migrations run once here, in a child process.
 */
export default async function globalSetup() {
  const name = `herald_test_${Date.now()}_${process.pid}`;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const { startEmbeddedPostgres } = await tsImport('../../src/db/embedded.ts', import.meta.url);
    const dir = mkdtempSync(path.join(tmpdir(), 'herald-test-pg-'));
    const server = await startEmbeddedPostgres(dir, 'postgres');
    globalThis.__heraldEmbedded = { stop: server.stop, dir };
    adminUrl = server.url;
  }
  const { createDatabase } = await tsImport('./databases.ts', import.meta.url);
  const url = await createDatabase(adminUrl, name);
  process.env.HERALD_TEST_DATABASE_URL = url;
  globalThis.__heraldTestDb = { adminUrl, name };
  execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/migrate.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      NODE_OPTIONS: '',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-test-data-')),
    },
    stdio: 'pipe',
  });
}
