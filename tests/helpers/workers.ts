import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_CREDENTIALS_KEY, TEST_JWT_SECRET } from './herald.js';

/**
 * Real worker processes (`npm run worker`, `src/worker.ts`) on a test's own database (see
 * `isolatedDatabase`), for tests that kill and replace them:
 *
 *   const workers = workerProcesses(db.url, { CAMPAIGN_LEASE_SECONDS: '2' });
 *   const victim = workers.start({ WORKER_CONCURRENCY: '1' });
 *   await workers.stop(victim, 'SIGKILL');
 *   afterAll(() => workers.stopAll());
 */
export function workerProcesses(databaseUrl: string, env: Record<string, string> = {}) {
  const running = new Set<ChildProcess>();
  const stop = (child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM') =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  return {
    /** Starts one, with `extra` over the shared environment. */
    start(extra: Record<string, string> = {}): ChildProcess {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          NODE_ENV: 'test',
          DATABASE_URL: databaseUrl,
          DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-worker-')),
          JWT_SECRET: TEST_JWT_SECRET,
          CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
          LOG_LEVEL: 'silent',
          ...env,
          ...extra,
        },
        stdio: 'ignore',
      });
      running.add(child);
      child.once('exit', () => running.delete(child));
      return child;
    },
    stop,
    /** Kills every one still running. */
    stopAll: () => Promise.all([...running].map((w) => stop(w, 'SIGKILL'))),
  };
}
