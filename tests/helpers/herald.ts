import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { createLogger, startHerald, type Herald } from '../../src/server.js';
import { cloneDatabase, createDatabase, dropDatabase, migrateDatabase } from '../setup/databases.js';
import { assertConforms } from './conformance.js';

export { sleep, waitFor, expectQuiet } from './time.js';

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';
export const TEST_CREDENTIALS_KEY = '0'.repeat(64);

/**
 * A real Herald on an ephemeral port, on the test file's database, without queue workers: a file
 * that needs jobs run (campaigns past the inline limit, imports, webhook deliveries, sandbox
 * receipts, recurring and automated runs) asks for them with `{ WORKERS: 'true' }` (or
 * `heraldWithOrgs(n, { workers: true })`) and lives in tests/workers/ (the console's in
 * tests/browser/). Without workers a Herald starts and stops sooner, and no job of a test runs
 * behind the next one's back.
 */
export async function startTestHerald(env: Record<string, string> = {}): Promise<Herald> {
  const config = loadConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: process.env.HERALD_TEST_DATABASE_URL,
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'herald-test-data-')),
    JWT_SECRET: TEST_JWT_SECRET,
    CREDENTIALS_KEY: TEST_CREDENTIALS_KEY,
    BCRYPT_ROUNDS: '4',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WORKERS: 'false',
    ...env,
  });
  return watchedStop(await startHerald(config, createLogger(config)));
}

/**
 * `herald`, whose `stop` says on stderr what it is still waiting on when it takes over 30 s (a test
 * file's hook gives it 60): the pool's connections in use and waited for, the requests' background
 * work, and the process's active resources. A stop that hangs in CI then leaves a clue in the log.
 */
function watchedStop(herald: Herald): Herald {
  const stop = herald.stop;
  herald.stop = async () => {
    const pool = (herald.db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
    const watch = setTimeout(() => {
      const state = {
        url: herald.url,
        pool: pool && { used: pool.numUsed(), free: pool.numFree(), waiting: pool.numPendingAcquires() },
        background: herald.deps.background.size,
        resources: process.getActiveResourcesInfo(),
      };
      process.stderr.write(`Herald's stop is still waiting after 30 s: ${JSON.stringify(state)}\n`);
    }, 30_000);
    watch.unref();
    try {
      await stop();
    } finally {
      clearTimeout(watch);
    }
  };
  return herald;
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export type Credential = { token: string } | { apiKey: string } | { queryKey: string } | { headers: Record<string, string> } | undefined;

function credentialHeaders(cred: Credential): Record<string, string> {
  if (!cred) return {};
  if ('token' in cred) return { authorization: `Bearer ${cred.token}` };
  if ('apiKey' in cred) return { 'unified-api-key': cred.apiKey };
  if ('headers' in cred) return cred.headers;
  return {};
}

/** A small HTTP client for the REST door. */
export function client(baseUrl: string) {
  async function call<T = any>(method: string, p: string, body?: unknown, cred?: Credential, extra: Record<string, string> = {}): Promise<Reply<T>> {
    let url = baseUrl + p;
    if (cred && 'queryKey' in cred) url += `${p.includes('?') ? '&' : '?'}apikey=${encodeURIComponent(cred.queryKey)}`;
    const res = await fetch(url, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...credentialHeaders(cred),
        ...extra,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    // Checked against the path the request reached: fetch resolves dot segments (`/a/%2e%2e` is `/`).
    const reached = new URL(url);
    assertConforms(method, reached.pathname + reached.search, res.status, res.headers, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T };
  }
  return {
    get: <T = any>(p: string, cred?: Credential, extra?: Record<string, string>) => call<T>('GET', p, undefined, cred, extra),
    post: <T = any>(p: string, body?: unknown, cred?: Credential, extra?: Record<string, string>) => call<T>('POST', p, body ?? {}, cred, extra),
    put: <T = any>(p: string, body?: unknown, cred?: Credential, extra?: Record<string, string>) => call<T>('PUT', p, body, cred, extra),
    delete: <T = any>(p: string, cred?: Credential, extra?: Record<string, string>) => call<T>('DELETE', p, undefined, cred, extra),
    /** POST /graphql; returns the whole GraphQL response as `body`. */
    gql: <T = any>(query: string, variables?: Record<string, unknown>, cred?: Credential) =>
      call<{ data?: T; errors?: any[] }>('POST', '/graphql', { query, variables }, cred),
    raw: call,
  };
}

export type Client = ReturnType<typeof client>;

export const uniqueEmail = (label = 'user') => `${label}.${randomBytes(5).toString('hex')}@example.com`;

export function signupBody(overrides: Record<string, unknown> = {}) {
  return {
    firstName: 'Ada',
    lastName: 'Lovelace',
    email: uniqueEmail('admin'),
    password: 'correct horse battery',
    countryCode: '+254',
    phoneNumber: '712345678',
    companyName: `Acme ${randomUUID().slice(0, 8)}`,
    sector: 'Technology',
    country: 'KE',
    ...overrides,
  };
}

export interface Org {
  token: string;
  user: any;
  orgId: string;
  email: string;
  password: string;
}

/** Signs up a fresh organization and returns its admin's token. */
export async function signupOrg(api: Client, overrides: Record<string, unknown> = {}): Promise<Org> {
  const body = signupBody(overrides);
  const res = await api.post('/auth/signup', body);
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.token, user: res.body.user, orgId: res.body.user.organization, email: body.email, password: body.password };
}

/** Creates a user in the admin's organization and logs them in. */
export async function addUser(api: Client, admin: Org, role: 'admin' | 'user' = 'user') {
  const email = uniqueEmail(role);
  const password = 'another good password';
  const created = await api.post(
    '/users',
    { firstName: 'Grace', lastName: 'Hopper', email, password, countryCode: '+254', phoneNumber: '700000001', role },
    { token: admin.token },
  );
  if (created.status !== 201) throw new Error(`create user failed: ${created.status} ${JSON.stringify(created.body)}`);
  const login = await api.post('/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
  return { token: login.body.token as string, user: created.body, email, password };
}

export async function createApiKey(api: Client, admin: Org, role: 'admin' | 'user' = 'user') {
  const res = await api.post('/api-keys', { name: `key ${role}`, role }, { token: admin.token });
  if (res.status !== 201) throw new Error(`create key failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { key: res.body.key as string, apiKey: res.body.apiKey };
}

export interface TestHerald {
  herald: Herald;
  api: Client;
}

/** A test Herald (`startTestHerald`) and a client on it. */
export async function heraldWithClient(env: Record<string, string> = {}): Promise<TestHerald> {
  const herald = await startTestHerald(env);
  return { herald, api: client(herald.url) };
}

export interface HeraldOptions {
  /** Environment for `startTestHerald`. */
  env?: Record<string, string>;
  /** Run the queue's workers in the Herald (`WORKERS=true`); test Heralds have none by default. */
  workers?: boolean;
  /** Overrides for every organization's signup body. */
  signup?: Record<string, unknown>;
}

/**
 * A test Herald, a client on it and `count` organizations signed up on it, for a file's (or a
 * describe's) `beforeAll`; the Herald is stopped again when a signup fails.
 *
 *   let herald: Herald, api: Client, org: Org, other: Org;
 *   beforeAll(async () => ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2)));
 *   afterAll(() => herald?.stop());
 */
export async function heraldWithOrgs(count: number, { env = {}, signup = {}, workers }: HeraldOptions = {}): Promise<TestHerald & { orgs: Org[] }> {
  const t = await heraldWithClient(workers ? { WORKERS: 'true', ...env } : env);
  try {
    return { ...t, orgs: await Promise.all(Array.from({ length: count }, () => signupOrg(t.api, signup))) };
  } catch (err) {
    await t.herald.stop();
    throw err;
  }
}

/** `heraldWithOrgs` with one organization, `org`. */
export async function heraldWithOrg(options: HeraldOptions = {}): Promise<TestHerald & { org: Org }> {
  const { orgs, ...t } = await heraldWithOrgs(1, options);
  return { ...t, org: orgs[0] };
}

/**
 * A random client address (10.x.y.z), to send as `x-forwarded-for` to a Herald with TRUST_PROXY: a
 * test file that logs in from one of its own can not trip the per-address login throttle of the
 * files running beside it, nor they its.
 */
export const randomClientAddress = () => `10.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(1, 255)}`;

/** The fields of a user that both POST /users and signup require. */
export const USER_FIELDS = ['firstName', 'lastName', 'email', 'password', 'countryCode', 'phoneNumber'];

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A database of its own, beside the test file's, for a test that needs a queue or tables no other
 * test of its file touches (worker processes it kills and replaces): a copy of the run's template
 * (on a Citus coordinator, created and migrated, see tests/setup/environment.mjs). `drop` drops it;
 * the run's global teardown drops it too if the file never does.
 */
export async function isolatedDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env.HERALD_TEST_ADMIN_URL!;
  const template = process.env.HERALD_TEST_TEMPLATE;
  const name = `${new URL(process.env.HERALD_TEST_DATABASE_URL!).pathname.slice(1)}_${label}`.slice(0, 63);
  const url = template ? await cloneDatabase(admin, template, name) : await migrated(await createDatabase(admin, name));
  return { url, drop: () => dropDatabase(admin, name) };
}

const migrated = async (url: string) => (await migrateDatabase(url), url);

/** A Herald on a database of its own (`isolatedDatabase`); `stop` stops it and drops the database. */
export async function startIsolatedHerald(label: string, env: Record<string, string> = {}) {
  const db = await isolatedDatabase(label);
  const herald = await startTestHerald({ DATABASE_URL: db.url, ...env });
  return {
    herald,
    db,
    api: client(herald.url),
    async stop() {
      await herald.stop();
      await db.drop();
    },
  };
}
