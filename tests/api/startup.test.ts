import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_CREDENTIALS_KEY, TEST_JWT_SECRET } from '../helpers/herald.js';

// `npm start` on the embedded Postgres when Postgres cannot start: Herald exits non-zero at once
// and says why, in Postgres's own words or in its own.

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  ms: number;
}

const temps: string[] = [];
const children = new Set<ReturnType<typeof spawn>>();

/**
 * How long Herald may take to stop by itself: a failure that hangs never ends, while a start on a
 * loaded machine takes its time (10 s, with the suite's browsers beside it in CI, was not enough to
 * load the entry point once).
 */
const LIMIT_MS = 40_000;

/** `src/main.ts` as an operator runs it, with no DATABASE_URL; killed if it is still running after `limitMs`. */
function runHerald(dataDir: string, limitMs = LIMIT_MS): Promise<Exit> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '',
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
    LOG_LEVEL: 'silent',
  };
  delete env.DATABASE_URL;
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, output, ms: Date.now() - started });
    }),
  );
}

/** Ids of processes whose command line names `dir`: a Postgres left behind on it. */
function processesOn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

function tempDir(mode: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herald-startup-'));
  chmodSync(dir, mode);
  temps.push(dir);
  return dir;
}

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of temps) {
    for (const pid of processesOn(dir)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

const asRoot = process.getuid?.() === 0;
// Only as root does the embedded Postgres run as another OS user (`postgres`); anyone else owns the directory.
const whenRoot = asRoot ? test : test.skip;

whenRoot(
  `a DATA_DIR the postgres user cannot reach: exits non-zero at once, naming the directory and what to do${asRoot ? '' : ' (skipped: not running as root)'}`,
  async () => {
    const locked = tempDir(0o700);
    const exit = await runHerald(path.join(locked, 'data'));

    expect(exit.signal).toBeNull();
    expect(exit.code).not.toBe(0);
    expect(exit.ms).toBeLessThan(LIMIT_MS);
    expect(exit.output).toContain(`Herald failed to start: The embedded Postgres runs as the OS user "postgres"`);
    expect(exit.output).toContain(`cannot enter ${locked},`);
    expect(exit.output).toContain('set DATA_DIR');
    expect(exit.output).toContain('DATABASE_URL');
    expect(processesOn(locked)).toEqual([]);
  },
);

test('a data directory whose Postgres refuses to start: exits non-zero with what Postgres said', async () => {
  // Looks initialised (PG_VERSION), so only the start runs; Postgres reads the configuration first,
  // before it looks at anything else in the directory, and stops on the unknown setting.
  const base = tempDir(0o755);
  const pgDir = path.join(base, 'data', 'postgres');
  mkdirSync(pgDir, { recursive: true });
  writeFileSync(path.join(pgDir, 'PG_VERSION'), '18\n');
  writeFileSync(path.join(pgDir, 'postgresql.conf'), 'herald_no_such_setting = on\n');

  const exit = await runHerald(path.join(base, 'data'));

  expect(exit.signal).toBeNull();
  expect(exit.code).not.toBe(0);
  expect(exit.output).toContain(`Herald failed to start: Embedded Postgres: Postgres failed to start on the data directory ${pgDir}`);
  expect(exit.output).toContain('unrecognized configuration parameter "herald_no_such_setting"');
  expect(exit.output).toMatch(/FATAL: +configuration file ".*postgresql\.conf" contains errors/);
  expect(exit.output).not.toContain('undefined');
  expect(processesOn(base)).toEqual([]);
});
