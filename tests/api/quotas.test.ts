import { createConnection } from 'node:net';
import type { Herald } from '../../src/server.js';
import { client, signupOrg, startTestHerald } from '../helpers/herald.js';

// Two API processes' worth of Heralds on one database: the counters are shared, not per process.
async function pair(env: Record<string, string>): Promise<[Herald, Herald]> {
  return Promise.all([startTestHerald(env), startTestHerald(env)]) as Promise<[Herald, Herald]>;
}

async function redisReachable(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port: 6379 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.setTimeout(300, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe.each([
  ['Postgres', {}],
  ['Redis', { REDIS_URL: 'redis://127.0.0.1:6379' }],
])('quotas kept in %s', (store, extra) => {
  let heralds: [Herald, Herald] | null = null;
  let skip = false;

  beforeAll(async () => {
    skip = store === 'Redis' && !(await redisReachable());
    if (skip) return;
    heralds = await pair({ QUOTA_REQUESTS_PER_HOUR: '6', QUOTA_MESSAGES_PER_DAY: '3', ...extra });
  });
  afterAll(async () => {
    await Promise.all((heralds ?? []).map((h) => h.stop()));
  });

  test('requests per hour per organization, across processes, 429 with Retry-After', async () => {
    if (skip) return console.warn('Redis is not running on 127.0.0.1:6379; the Redis store is not tested here');
    const [a, b] = heralds!.map((h) => client(h.url));
    const org = await signupOrg(a!);
    const other = await signupOrg(a!);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await (i % 2 ? a! : b!).get('/contacts', { token: org.token })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    const refused = await a!.get('/contacts', { token: org.token });
    expect(refused.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another organization has its own allowance; unauthenticated health checks are not counted.
    expect((await b!.get('/contacts', { token: other.token })).status).toBe(200);
    expect((await b!.get('/health')).status).toBe(200);
  });

  test('messages per day per organization: a send that would pass the limit is refused whole', async () => {
    if (skip) return;
    const [a, b] = heralds!.map((h) => client(h.url));
    const org = await signupOrg(a!);
    expect((await a!.post('/notifications/send', { type: 'sms', to: ['0712345001', '0712345002'], message: 'x' }, { token: org.token })).status).toBe(200);
    const over = await b!.post('/notifications/send', { type: 'sms', to: ['0712345003', '0712345004'], message: 'x' }, { token: org.token });
    expect(over.status).toBe(429);
    expect(over.body.message).toMatch(/Daily message quota/);
    expect((await b!.post('/notifications/send', { type: 'sms', to: '0712345005', message: 'x' }, { token: org.token })).status).toBe(200);
  });
});

test('quotas are off by default', async () => {
  const herald = await startTestHerald();
  try {
    const api = client(herald.url);
    const org = await signupOrg(api);
    for (let i = 0; i < 20; i++) expect((await api.get('/contacts', { token: org.token })).status).toBe(200);
  } finally {
    await herald.stop();
  }
});
