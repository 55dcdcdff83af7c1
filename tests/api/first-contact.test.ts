import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Herald } from '../../src/server.js';
import { heraldWithClient, isolatedDatabase, TEST_CREDENTIALS_KEY, TEST_JWT_SECRET, type Client } from '../helpers/herald.js';

// Someone's first contact with a running Herald: `curl localhost:4000/` gets an index of where
// things are (a browser still gets the console), and `npm start` in a terminal says where to go.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const INDEX = { name: 'Herald', version, links: { console: '/', docs: '/docs', openapi: '/openapi.json', graphql: '/graphql', health: '/health' } };
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient()));
afterAll(() => herald?.stop());

describe('GET /', () => {
  test('an API client (curl: Accept */*, or none, or JSON) gets the JSON index', async () => {
    for (const accept of ['*/*', 'application/json', undefined]) {
      const res = await fetch(`${herald.url}/`, { headers: accept ? { accept } : {} });
      expect({ accept, status: res.status, type: res.headers.get('content-type') }).toEqual({ accept, status: 200, type: expect.stringMatching(/^application\/json/) });
      expect(await res.json()).toEqual(INDEX);
    }
    // Through the client, which checks the answer against /openapi.json.
    expect((await api.get('/')).body).toEqual(INDEX);
  });

  test('a browser still gets the console', async () => {
    const res = await fetch(`${herald.url}/`, { headers: { accept: BROWSER } });
    expect(res.headers.get('content-type')).toMatch(/^text\/(html|plain)/);
    expect(res.status).not.toBe(404);
  });

  test('other methods are 405 naming GET; the index is in /openapi.json', async () => {
    const res = await fetch(`${herald.url}/`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    const document = (await api.get('/openapi.json')).body;
    expect(Object.keys(document.paths['/'])).toEqual(['get']);
    expect(document.paths['/'].get.responses['200'].content['application/json']).toBeDefined();
  });
});

describe('the start line', () => {
  let database: { url: string; drop(): Promise<void> };
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    database = await isolatedDatabase('first_contact');
  }, 60_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await database?.drop();
  });

  const env = () => ({
    ...process.env,
    NODE_OPTIONS: '',
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: database.url,
    JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
    LOG_LEVEL: 'info',
    WORKERS: 'false',
  });

  /**
   * Starts `src/main.ts` (under a pseudo-terminal when `tty`), and once it listens, stops it: its
   * whole output, and the URL its JSON line names.
   */
  async function startOutput(tty: boolean): Promise<{ output: string; url: string }> {
    const node = `${process.execPath} --import tsx src/main.ts`;
    // Under `script`, the shell's pid is Herald's (exec), told first so that it can be stopped.
    const child = tty
      ? spawn('script', ['-qfec', `echo "pid=$$"; exec ${node}`, '/dev/null'], { env: env(), stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const started = Date.now();
    let url: string | undefined;
    while (!url) {
      url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"herald listening"/.exec(output)?.[1];
      if (Date.now() - started > 60_000 || child.exitCode !== null) throw new Error(`Herald did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // What follows the JSON line has had time to be written.
    await new Promise((r) => setTimeout(r, 300));
    const pid = tty ? Number(/pid=(\d+)/.exec(output)![1]) : child.pid!;
    process.kill(pid, 'SIGTERM');
    await exited;
    return { output, url };
  }

  test('in a terminal, one human line names the console, the GraphQL IDE and the docs at the real address', async () => {
    const { output, url } = await startOutput(true);
    const lines = output.split(/\r?\n/).filter((l) => l.startsWith('Herald is ready'));
    expect(lines).toEqual([`Herald is ready: console ${url}/  GraphQL IDE ${url}/graphql  API docs ${url}/docs`]);
  }, 90_000);

  test('without a terminal, only the JSON log line', async () => {
    const { output } = await startOutput(false);
    expect(output).not.toContain('Herald is ready');
    for (const line of output.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  }, 90_000);
});
