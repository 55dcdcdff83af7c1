/**
 * Two tiers, each its own jest project: `unit` (pure code, tests beside it under src/, no database)
 * and `integration` (tests/: api, workers, database, browser, docs: real Postgres, Herald over HTTP, worker processes, a real browser).
 * `npm run test:unit` runs the first alone; `npm test` runs both. The fault suite has its own
 * config (jest.faults.config.js).
 */

/** What every tier shares: ESM TypeScript through @swc/jest. */
export const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
    ],
  },
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Its ESM build imports JSON without an import attribute, which jest's ESM loader warns about on
    // every file; the CommonJS build is the same library.
    '^libphonenumber-js$': '<rootDir>/node_modules/libphonenumber-js/index.cjs',
  },
};

/**
 * The integration tier: the run's server (embedded, or DATABASE_URL's) with one migrated template
 * database (global setup), and each test file on a copy of its own (the environment), dropped after it.
 */
export const integration = {
  ...shared,
  displayName: 'integration',
  testEnvironment: '<rootDir>/tests/setup/environment.mjs',
  globalSetup: '<rootDir>/tests/setup/global-setup.mjs',
  globalTeardown: '<rootDir>/tests/setup/global-teardown.mjs',
  testMatch: ['<rootDir>/tests/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/tests/faults/'],
};

/** @type {import('jest').Config} */
export default {
  projects: [{ ...shared, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.test.ts'] }, integration],
  testTimeout: 60_000,
  maxWorkers: 2,
};
