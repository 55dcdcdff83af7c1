// Plain ESM, loaded by jest without its transform; the TypeScript it needs comes through tsx.
import { randomBytes } from 'node:crypto';
import { TestEnvironment } from 'jest-environment-node';
import { tsImport } from 'tsx/esm/api';
import { Agent, setGlobalDispatcher } from 'undici';

/**
 * `fetch` (the test process's, which the files' globals share) keeps an idle connection 100 ms,
 * not the minute a Herald allows: a Herald's stop waits for its idle connections to go, and it
 * closes them itself only once a second. Each test Herald's stop then takes a tenth of a second
 * instead of a whole one. Set once per worker process, in its own realm (where `fetch` reads it).
 */
setGlobalDispatcher(new Agent({ keepAliveTimeout: 100, keepAliveMaxTimeout: 100 }));

const databases = () => tsImport('./databases.ts', import.meta.url);

/**
 * Node's environment, with a database of the test file's own: a copy of the run's template
 * (`global-setup.mjs`), made before the file's code runs and dropped after it. The file finds it
 * in `process.env.HERALD_TEST_DATABASE_URL` (at its top level too); its Heralds, workers and
 * queue see no other file's rows or jobs.
 *
 * On a Citus coordinator there is no template: a copy of a distributed database would copy the
 * coordinator's catalog and shard metadata but not the shards on the workers, so the copy's
 * tables would point at the template's shards. There each file creates its database (joining the
 * cluster, `createDatabase`) and migrates it, which takes seconds longer per file but keeps files
 * apart as everywhere else.
 */
export default class HeraldEnvironment extends TestEnvironment {
  /** @type {string | undefined} */
  database;

  async setup() {
    await super.setup();
    const { HERALD_TEST_ADMIN_URL: admin, HERALD_TEST_RUN: run, HERALD_TEST_TEMPLATE: template } = process.env;
    if (!admin || !run) throw new Error('HERALD_TEST_ADMIN_URL and HERALD_TEST_RUN are unset: run the tests through jest with tests/setup/global-setup.mjs');
    const { cloneDatabase, createDatabase, migrateDatabase } = await databases();
    const name = `${run}_${randomBytes(4).toString('hex')}`;
    this.database = name;
    const url = template ? await cloneDatabase(admin, template, name) : await createDatabase(admin, name);
    if (!template) await migrateDatabase(url);
    this.global.process.env.HERALD_TEST_DATABASE_URL = url;
  }

  async teardown() {
    try {
      if (this.database && process.env.KEEP_TEST_DB !== '1') {
        const { dropDatabase } = await databases();
        await dropDatabase(process.env.HERALD_TEST_ADMIN_URL, this.database);
      }
    } finally {
      await super.teardown();
    }
  }
}
