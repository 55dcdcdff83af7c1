import { integration } from './jest.config.js';

/** `npm run test:faults`: process and database faults, one file at a time (they stop servers). */
export default {
  projects: [{ ...integration, displayName: 'faults', testMatch: ['<rootDir>/tests/faults/**/*.test.ts'], testPathIgnorePatterns: ['/node_modules/'] }],
  maxWorkers: 1,
  testTimeout: 120_000,
};
