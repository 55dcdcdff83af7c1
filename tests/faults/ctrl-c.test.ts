import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_CREDENTIALS_KEY, TEST_JWT_SECRET } from '../helpers/herald.js';

// Ctrl-C on `npm start` in a terminal: the terminal sends SIGINT to the whole foreground process
// group, the embedded Postgres included when it is Herald's child. Herald must drain, stop the
// embedded Postgres itself after it stopped using it, and exit 0 quietly. CI runs this on each
// supported Node through HERALD_TEST_NODE.
const node = process.env.HERALD_TEST_NODE || process.execPath;
const dataDir = mkdtempSync(path.join(tmpdir(), 'herald-ctrl-c-'));
// Postgres runs as the `postgres` user when the tests run as root: it must be able to enter the directory.
chmodSync(dataDir, 0o755);
const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
let child: ChildProcess | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether anything accepts a connection on the port (the embedded Postgres, until it stops). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

afterAll(() => {
  // Whatever a failed run left behind: Herald's group, then a Postgres still running on the directory.
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (pid > 0 && alive(pid)) process.kill(pid, 'SIGQUIT');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

test('Ctrl-C (SIGINT to the process group) on the embedded Postgres: exit 0 quietly, Postgres stopped after Herald', async () => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '',
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
    BCRYPT_ROUNDS: '4',
    LOG_LEVEL: 'info',
  };
  delete env.DATABASE_URL;
  // As `npm start` runs it, leading its own process group as a terminal's foreground job does.
  child = spawn(node, ['--max-semi-space-size=8', '--expose-gc', '--import', 'tsx', 'src/main.ts'], {
    cwd: process.cwd(),
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child!.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stdout = '';
  let stderr = '';
  const logs: { level?: number; msg?: string; at: number }[] = [];
  child.stderr!.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Herald did not start in 60 s: ${stderr}`)), 60_000);
    createInterface({ input: child!.stdout! }).on('line', (line) => {
      stdout += `${line}\n`;
      try {
        const entry = JSON.parse(line);
        logs.push({ ...entry, at: Date.now() });
        if (entry.msg === 'herald listening') {
          clearTimeout(timer);
          resolve(entry.url);
        }
      } catch {
        /* not a log line */
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`Herald exited with ${code} before listening: ${stderr}`));
    });
  });
  expect((await fetch(`${url}/health`)).status).toBe(200);
  const [postmasterPid, , , portLine] = readFileSync(pidFile, 'utf8').split('\n');
  const pgPid = Number(postmasterPid);
  const pgPort = Number(portLine);
  expect(await accepts(pgPort)).toBe(true);

  const signalled = Date.now();
  process.kill(-child.pid!, 'SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 15_000)))]);
  clearTimeout(timer);
  console.log(`ctrl-c: ${node} exited ${JSON.stringify(outcome)} ${Date.now() - signalled} ms after the signal`);
  const output = `${stdout}\n${stderr}`;

  expect({ outcome, stderr }).toEqual({ outcome: { code: 0, signal: null }, stderr: '' });
  expect(output).not.toContain('Unhandled');
  expect(output).not.toContain('    at ');
  // Herald stopped using the database before it went away: nothing complained while draining.
  const complaints = logs.filter((l) => l.at >= signalled && (l.level ?? 0) >= 40);
  expect(complaints).toEqual([]);
  // The embedded Postgres is stopped, not left running in a group of its own.
  expect(existsSync(pidFile)).toBe(false);
  expect(alive(pgPid)).toBe(false);
  expect(await accepts(pgPort)).toBe(false);
}, 120_000);
