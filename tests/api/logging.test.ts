import { loadConfig } from '../../src/config/config.js';
import { createLogger, startHerald, type Herald } from '../../src/server.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { client, createApiKey, signupBody, signupOrg, TEST_CREDENTIALS_KEY, TEST_JWT_SECRET, type Client } from '../helpers/herald.js';

// Logs are JSON lines with a request id, and never hold a token, an API key or a password,
// wherever the caller put them (headers, the `apikey` query parameter, a body).
const lines: string[] = [];
let herald: Herald;
let api: Client;

beforeAll(async () => {
  const config = loadConfig({
    NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: process.env.HERALD_TEST_DATABASE_URL,
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-test-data-')), JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY, BCRYPT_ROUNDS: '4', LOG_LEVEL: 'info',
  });
  const destination = { write: (line: string) => void lines.push(line) };
  herald = await startHerald(config, createLogger(config, destination));
  api = client(herald.url);
});
afterAll(() => herald.stop());

test('request logs carry a request id and no credential, however it was sent', async () => {
  const body = signupBody();
  const org = await signupOrg(api, body);
  const key = await createApiKey(api, org, 'admin');
  await api.post('/auth/login', { email: body.email, password: 'a wrong password' });
  await api.post('/auth/login', { email: body.email, password: body.password });
  await api.get('/contacts', { token: org.token });
  await api.get('/contacts', { apiKey: key.key });
  await api.get('/contacts', { queryKey: key.key });
  await api.get('/contacts?apikey=uak_not_even_a_key&limit=1');
  await api.gql('{ me { email } }', undefined, { token: org.token });

  const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
  const requests = entries.filter((e) => e.req);
  expect(requests.length).toBeGreaterThanOrEqual(9);
  for (const e of requests) expect(e.req.id).toEqual(expect.any(String));
  expect(requests.some((e) => e.req.url === '/contacts?apikey=[REDACTED]')).toBe(true);
  expect(requests.some((e) => e.req.url === '/contacts?apikey=[REDACTED]&limit=1')).toBe(true);

  const all = lines.join('\n');
  for (const secret of [org.token, key.key, body.password as string, 'a wrong password', 'uak_not_even_a_key']) {
    expect(all).not.toContain(secret);
  }
});
