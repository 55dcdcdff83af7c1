// Plain ESM, loaded by jest without its transform; the TypeScript it needs comes through tsx.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { tsImport } from 'tsx/esm/api';

/**
 * The test run's databases: on `DATABASE_URL`'s server when it is set, otherwise on an embedded
 * Postgres in a temporary directory. Migrations run once here, in a child process, on the run's
 * template database; each test file then gets a copy of its own (`environment.mjs`), so no file
 * sees another's rows or runs another's jobs.
 *
 * What the files' environments need comes to them in the environment (jest's workers are started
 * after this): HERALD_TEST_ADMIN_URL (the server's `postgres` database), HERALD_TEST_RUN (the prefix
 * of every database of this run) and HERALD_TEST_TEMPLATE (the template; empty on a Citus
 * coordinator, where each file creates and migrates its own, see `environment.mjs`).
 */
export default async function globalSetup() {
  const run = `herald_test_${Date.now().toString(36)}_${process.pid}`;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const { startEmbeddedPostgres } = await tsImport('../../src/db/embedded.ts', import.meta.url);
    const dir = mkdtempSync(path.join(tmpdir(), 'herald-test-pg-'));
    const server = await startEmbeddedPostgres(dir, 'postgres');
    globalThis.__heraldEmbedded = { stop: server.stop, dir };
    adminUrl = server.url;
  }
  const { createDatabase, migrateDatabase, sealTemplate, isCitusCoordinator } = await tsImport('./databases.ts', import.meta.url);
  globalThis.__heraldTestDb = { adminUrl, run };
  process.env.HERALD_TEST_ADMIN_URL = adminUrl;
  process.env.HERALD_TEST_RUN = run;
  // No file may use the template itself (a connection to it would fail every copy).
  delete process.env.HERALD_TEST_DATABASE_URL;
  if (await isCitusCoordinator(adminUrl)) {
    process.env.HERALD_TEST_TEMPLATE = '';
    return;
  }
  const template = `${run}_template`;
  await migrateDatabase(await createDatabase(adminUrl, template));
  await sealTemplate(adminUrl, template);
  process.env.HERALD_TEST_TEMPLATE = template;
}
