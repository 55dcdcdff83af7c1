// The provider HTTP client on its own, against raw servers that misbehave the ways providers do:
// what comes back for each, and that nothing outlives the hard timeout.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProviderPool, HttpTransportError, postJson as post, type PostJsonOptions } from '../../src/delivery/http-client.js';

const pool = createProviderPool();
const postJson = (url: string, body: unknown, options: Omit<PostJsonOptions, 'pool'>) => post(url, body, { ...options, pool });

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let handler: Handler;
let server: http.Server;
let url: string;
const received: { method?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/path?x=1`;
});
beforeEach(() => void (received.length = 0));
afterAll(async () => {
  await pool.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const failure = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (err) {
    return err as HttpTransportError;
  }
  throw new Error('expected the call to fail');
};

test('posts JSON with the given headers and reads a JSON answer, whatever its status', async () => {
  handler = (_req, res) => res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":{"code":131026}}');
  const res = await postJson(url, { to: '254712345678', text: 'hé "quoted"' }, { timeoutMs: 1000, headers: { authorization: 'Bearer t' } });
  expect(res).toEqual({ status: 422, json: { error: { code: 131026 } }, text: '{"error":{"code":131026}}' });
  expect(received).toHaveLength(1);
  expect(received[0]).toMatchObject({ method: 'POST', body: '{"to":"254712345678","text":"hé \\"quoted\\""}' });
  expect(received[0]!.headers).toMatchObject({ 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer t' });
});

test('a body that is not JSON comes back as text with json undefined', async () => {
  handler = (_req, res) => res.writeHead(502).end('<html>Bad gateway</html>');
  expect(await postJson(url, {}, { timeoutMs: 1000 })).toEqual({ status: 502, json: undefined, text: '<html>Bad gateway</html>' });
});

test('a server that trickles its answer is cut off at the hard timeout', async () => {
  const timers = new Set<NodeJS.Timeout>();
  handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    // A byte every 50 ms: each phase's own timeout would be satisfied forever.
    const drip = setInterval(() => res.write(' '), 50);
    timers.add(drip);
    res.on('close', () => clearInterval(drip));
  };
  const start = Date.now();
  const err = await failure(postJson(url, {}, { timeoutMs: 300 }));
  expect(Date.now() - start).toBeLessThan(1000);
  expect(err).toBeInstanceOf(HttpTransportError);
  expect(err).toMatchObject({ kind: 'timeout', code: 'ETIMEDOUT', message: 'no answer within 300 ms', retryable: true });
  for (const t of timers) clearInterval(t);
});

test('an answer larger than 1 MiB is refused, not buffered', async () => {
  handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(Buffer.alloc(2 * 1024 * 1024, 'a'));
  };
  expect(await failure(postJson(url, {}, { timeoutMs: 2000 }))).toMatchObject({ kind: 'network', message: 'response larger than 1048576 bytes' });
});

test('a connection dropped mid-answer and a refused connection are network failures', async () => {
  handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"responses":[');
    setTimeout(() => res.socket?.destroy(), 20);
  };
  expect(await failure(postJson(url, {}, { timeoutMs: 2000 }))).toMatchObject({ kind: 'network', retryable: true });

  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  expect(await failure(postJson(`http://127.0.0.1:${port}/`, {}, { timeoutMs: 2000 }))).toMatchObject({ kind: 'network', code: 'ECONNREFUSED' });
});
