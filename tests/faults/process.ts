import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_CREDENTIALS_KEY, TEST_JWT_SECRET } from '../helpers/herald.js';

/** A Herald started the way an operator starts it (`src/main.ts` in its own process). */
export interface HeraldProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process has gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Log lines the process wrote (pino JSON, parsed). */
  logs: Record<string, unknown>[];
}

/** `env` values of '' remove the variable (e.g. `DATABASE_URL: ''` for the embedded Postgres). */
export async function startHeraldProcess(env: Record<string, string>): Promise<HeraldProcess> {
  const fullEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '',
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-proc-')),
    JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
    BCRYPT_ROUNDS: '4',
    LOG_LEVEL: 'info',
    ...env,
  };
  for (const [k, v] of Object.entries(fullEnv)) if (v === '') delete fullEnv[k];
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return watchProcess(child);
}

async function watchProcess(child: ChildProcess): Promise<HeraldProcess> {
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Herald did not start in 30 s: ${stderr}`)), 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if (entry.msg === 'herald listening') {
          clearTimeout(timer);
          resolve(entry.url as string);
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
  return { url, child, exited, logs };
}

export interface Outcome {
  status?: number;
  body?: any;
  error?: string;
}

/**
 * One request on a connection of its own (no keep-alive), so that each outcome says exactly what
 * happened to that request: an answer, a refused connection (never accepted), or a reset.
 */
export function request(url: string, method: string, p: string, body: unknown, headers: Record<string, string> = {}): Promise<Outcome> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request(
      url + p,
      {
        method,
        agent: false,
        headers: { ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            /* keep text */
          }
          resolve({ status: res.statusCode, body: parsed });
        });
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(payload);
  });
}
