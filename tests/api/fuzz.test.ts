import fc from 'fast-check';
import type { Herald } from '../../src/server.js';
import { client, createApiKey, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';

// Property: whatever a client sends to any write endpoint, path or query, over REST or GraphQL,
// Herald answers without a 5xx, and every REST error has the documented shape.
let herald: Herald;
let api: Client;
let org: Org;
let key: string;
const ids: Record<string, string> = {};
let requests = 0;
const fiveHundreds: string[] = [];

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

beforeAll(async () => {
  herald = await startTestHerald();
  api = client(herald.url);
  org = await signupOrg(api);
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 1_000_000 });
  key = (await createApiKey(api, org, 'admin')).key;
  ids.group = (await api.post('/groups', { name: 'Fuzz', color: 'bg-red-500' }, { token: org.token })).body._id;
  ids.contact = (await api.post('/contacts', { name: 'Fuzz', phone: '0712345678' }, { token: org.token })).body._id;
  ids.campaign = (await api.post('/campaigns', { name: 'Fuzz', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'x' } } }, { token: org.token })).body._id;
  ids.user = org.user._id;
});
afterAll(async () => {
  console.log(`fuzz: ${requests} generated requests, ${fiveHundreds.length} answers of 5xx`);
  await herald.stop();
});

const FIELDS = [
  'name', 'email', 'phone', 'countryCode', 'organization', 'tags', 'groups', 'description', 'color', 'type', 'to', 'message',
  'subject', 'attachments', 'channels', 'recipients', 'messages', 'scheduleDate', 'firstName', 'lastName', 'password',
  'oldPassword', 'newPassword', 'phoneNumber', 'role', 'companyName', 'sector', 'country', 'isActive', 'credits', '_id',
  '__proto__', 'constructor', 'prototype', 'sms_apiKey', 'email_host', 'email_port', 'email_from', 'contacts', 'manual', 'content',
  'channel', 'attributes',
  'subscriptions', 'sms', 'whatsapp',
];

// Strings Postgres can not store: NUL characters and surrogates outside a pair, next to ASCII (which
// can never complete a pair) or at either end of a plausible value.
const unstorableUnit = fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff');
const unstorableString = fc
  .tuple(fc.string({ maxLength: 10 }), unstorableUnit, fc.constantFrom('', '0712345678', 'a@b.co', 'Ada', 'sms', '2026-01-05T09:30:00.000Z'), fc.string({ maxLength: 10 }))
  .map(([a, u, plausible, b]) => `${a}${plausible}${u}${b}`);
// Any UTF-16 code units at all, unstorable ones often among them (some pair up, most do not).
const anyUnits = fc.string({ unit: fc.oneof({ weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: unstorableUnit }), maxLength: 30 });
const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  unstorableString,
  anyUnits,
  fc.constantFrom('', ' ', 'null', '0712345678', '+254712345678', 'a@b.co', 'all', 'sms', 'email', 'whatsapp', 'admin', '2026-01-05T09:30:00.000Z', "'; DROP TABLE contacts; --", '\u0000', '💥'.repeat(100), 'x'.repeat(5000), '../../etc/passwd', '%00', '{{7*7}}'),
  fc.uuid(),
);
const leaf = fc.oneof(weirdString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('v'), { maxLength: 5 }), fc.dictionary(fc.constantFrom(...FIELDS, 'subject', 'content', 'x'), tie('v'), { maxKeys: 4 })),
})).v;
const body = fc.oneof(
  fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 8 }),
  value,
  fc.constantFrom('{"a":', '[1,2', 'null', '"str"', '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '[]'),
);
/** A lone surrogate's three WTF-8 bytes, percent-encoded: what a sloppy client would put in a URL. */
const wtf8 = (c: string) => {
  const u = c.charCodeAt(0);
  return [0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
};
/** encodeURIComponent for any string (it throws on a lone surrogate). */
const encodeAny = (s: string) => s.split(/(\p{Cs})/u).map((part) => (/^\p{Cs}$/u.test(part) ? wtf8(part) : encodeURIComponent(part))).join('');
const pathId = fc.oneof(fc.uuid(), weirdString.map(encodeAny), fc.constantFrom('me', 'current', '0', '-1', '%2e%2e', ids.contact ?? 'x'));

const WRITES: [string, (id: string) => string][] = [
  ['POST', () => '/auth/signup'],
  ['POST', () => '/auth/login'],
  ['POST', () => '/users'],
  ['PUT', (id) => `/users/${id}`],
  ['PUT', (id) => `/users/${id}/password`],
  ['PUT', () => '/organizations/current/credentials'],
  ['POST', () => '/api-keys'],
  ['POST', () => '/contacts'],
  ['PUT', (id) => `/contacts/${id}`],
  ['POST', () => '/groups'],
  ['PUT', (id) => `/groups/${id}`],
  ['POST', () => '/templates'],
  ['PUT', (id) => `/templates/${id}`],
  ['POST', () => '/campaigns'],
  ['PUT', (id) => `/campaigns/${id}`],
  ['POST', (id) => `/campaigns/${id}/launch`],
  ['POST', (id) => `/campaigns/${id}/cancel`],
  ['POST', () => '/notifications/send'],
  ['POST', () => '/notifications/send-to-all'],
];

function checkShape(status: number, payload: any, label: string) {
  requests++;
  if (status >= 500) fiveHundreds.push(`${label} -> ${status} ${JSON.stringify(payload).slice(0, 200)}`);
  if (status >= 400) {
    expect(payload).toMatchObject({ statusCode: status, message: expect.any(String), error: expect.any(String) });
    expect(Object.keys(payload).every((k) => ['statusCode', 'message', 'error', 'details'].includes(k))).toBe(true);
    expect(JSON.stringify(payload)).not.toMatch(/at .+\.(ts|js):\d+|SELECT |INSERT |violates/);
  }
}

test('write endpoints: random bodies and path ids never give a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...WRITES), body, pathId, fc.boolean(), async ([method, path], payload, id, useKey) => {
      const p = path(id === 'x' ? ids.contact! : id);
      const raw = typeof payload === 'string' && (payload.startsWith('{') || payload.startsWith('[') || payload === 'null' || payload.startsWith('"'));
      const res = await api.raw(method, p, raw ? payload : JSON.stringify(payload ?? null), useKey ? { apiKey: key } : { token: org.token });
      checkShape(res.status, res.body, `${method} ${p}`);
      return res.status < 500;
    }),
    { numRuns: RUNS * WRITES.length, seed: Number(process.env.FUZZ_SEED ?? 20261123) },
  );
  expect(fiveHundreds).toEqual([]);
}, 240_000);

test('path and query parameters of every read endpoint never give a 5xx', async () => {
  const reads = ['/users', '/users/', '/contacts', '/contacts/', '/groups', '/groups/', '/campaigns', '/campaigns/', '/message-logs', '/message-logs/', '/api-keys', '/sandbox/outbox', '/templates', '/templates/'];
  const query = fc.dictionary(fc.constantFrom('limit', 'cursor', 'group', 'tag', 'search', 'channel', 'status', 'dateFrom', 'dateTo', 'campaignId', 'recipient', 'apikey', 'x'), weirdString, { maxKeys: 4 });
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...reads), pathId, query, async (base, id, q) => {
      const params = new URLSearchParams(q as Record<string, string>).toString();
      const p = `${base.endsWith('/') ? base + id : base}${params ? `?${params}` : ''}`;
      const res = await api.get(p, { token: org.token });
      checkShape(res.status, res.body, `GET ${p}`);
      return res.status < 500;
    }),
    { numRuns: RUNS * 6, seed: Number(process.env.FUZZ_SEED ?? 20261123) },
  );
  expect(fiveHundreds).toEqual([]);
}, 240_000);

test('GraphQL mutations with random variables never give a 5xx', async () => {
  const mutations = [
    'mutation($i: CreateContactInput!) { createContact(input: $i) { _id } }',
    'mutation($id: ID!, $i: UpdateContactInput!) { updateContact(id: $id, input: $i) { _id } }',
    'mutation($i: CreateGroupInput!) { createGroup(input: $i) { _id } }',
    'mutation($i: CreateCampaignInput!) { createCampaign(input: $i) { _id } }',
    'mutation($i: SendNotificationInput!) { sendNotification(input: $i) { status } }',
    'mutation($i: SignupInput!) { signup(input: $i) { token } }',
    'mutation($i: CredentialsInput!) { updateCredentials(input: $i) { _id } }',
    'mutation($id: ID!) { launchCampaign(id: $id) { status } }',
    'query($f: Int, $a: String) { contacts(first: $f, after: $a) { totalCount } }',
    'query($i: ContactFilter) { contacts(filter: $i) { totalCount } }',
    'mutation($i: LoginInput!) { login(input: $i) { token } }',
    'mutation($i: CreateUserInput!) { createUser(input: $i) { _id } }',
    'mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key } }',
  ];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...mutations), fc.dictionary(fc.constantFrom('i', 'id', 'f', 'a'), value, { maxKeys: 3 }), async (query, variables) => {
      const res = await api.gql(query, variables as Record<string, unknown>, { token: org.token });
      requests++;
      const serverErrors = (res.body.errors ?? []).filter((e: any) => (e.extensions?.statusCode ?? 500) >= 500);
      if (res.status >= 500 || serverErrors.length) fiveHundreds.push(`${query.slice(0, 40)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      return res.status < 500 && serverErrors.length === 0;
    }),
    { numRuns: RUNS * 3, seed: Number(process.env.FUZZ_SEED ?? 20261123) },
  );
  expect(fiveHundreds).toEqual([]);
}, 240_000);

test('hostile JSON: deep nesting, huge bodies and prototype pollution are refused cleanly', async () => {
  const deep = '['.repeat(5000) + ']'.repeat(5000);
  for (const raw of [deep, `{"name":${deep}}`, '{"__proto__":{"isAdmin":true},"name":"x","phone":"0712345678"}']) {
    const res = await api.raw('POST', '/contacts', raw, { token: org.token });
    checkShape(res.status, res.body, 'hostile');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  }
  expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  const huge = await api.raw('POST', '/contacts', JSON.stringify({ name: 'x', tags: ['y'.repeat(16 * 1024 * 1024)] }), { token: org.token });
  expect(huge.status).toBe(413);
  expect(huge.body).toEqual({ statusCode: 413, message: 'Request body is too large', error: 'Payload Too Large' });
});

// Valid inputs of every write, each with one string leaf replaced by a string Postgres can not
// store: a 400 naming that field through REST, a 400 through GraphQL, never a 5xx.
const TEMPLATES: { rest: [string, string]; gql: string; body: () => Record<string, unknown> }[] = [
  {
    rest: ['POST', '/contacts'],
    gql: 'mutation($i: CreateContactInput!) { createContact(input: $i) { _id } }',
    body: () => ({ name: 'Ada', email: 'ada@example.com', phone: '0712345678', countryCode: 'KE', organization: 'Acme', tags: ['a', 'b'] }),
  },
  { rest: ['POST', '/groups'], gql: 'mutation($i: CreateGroupInput!) { createGroup(input: $i) { _id } }', body: () => ({ name: 'G', color: 'bg-red-500', description: 'd' }) },
  {
    rest: ['POST', '/templates'],
    gql: 'mutation($i: CreateTemplateInput!) { createTemplate(input: $i) { _id } }',
    body: () => ({ name: 'T', channel: 'email', subject: 'Hi {{ contact.firstName }}', content: 'Hello {{ contact.name }}' }),
  },
  {
    rest: ['POST', '/campaigns'],
    gql: 'mutation($i: CreateCampaignInput!) { createCampaign(input: $i) { _id } }',
    body: () => ({ name: 'C', description: 'd', type: 'broadcast', channels: ['sms', 'email'], messages: { sms: { content: 'hi' }, email: { subject: 's', content: 'c' } }, recipients: { manual: ['0712345678', 'a@example.com'] } }),
  },
  {
    rest: ['POST', '/notifications/send'],
    gql: 'mutation($i: SendNotificationInput!) { sendNotification(input: $i) { status } }',
    body: () => ({ type: 'email', to: ['a@example.com'], subject: 's', message: 'm', attachments: [{ filename: 'a.txt', content: 'aGk=', contentType: 'text/plain' }] }),
  },
  { rest: ['POST', '/notifications/send-to-all'], gql: 'mutation($i: SendToAllInput!) { sendToAll(input: $i) { status } }', body: () => ({ type: 'sms', message: 'm' }) },
  {
    rest: ['POST', '/auth/signup'],
    gql: 'mutation($i: SignupInput!) { signup(input: $i) { token } }',
    body: () => ({ firstName: 'A', lastName: 'B', email: 'fuzz.signup@example.com', password: 'a decent password', countryCode: '+254', phoneNumber: '712345678', companyName: 'Acme', sector: 'Tech', country: 'KE' }),
  },
  { rest: ['POST', '/auth/login'], gql: 'mutation($i: LoginInput!) { login(input: $i) { token } }', body: () => ({ email: 'nobody@example.com', password: 'whatever password' }) },
  {
    rest: ['POST', '/users'],
    gql: 'mutation($i: CreateUserInput!) { createUser(input: $i) { _id } }',
    body: () => ({ firstName: 'A', lastName: 'B', email: 'fuzz.user@example.com', password: 'a decent password', countryCode: '+254', phoneNumber: '712345678' }),
  },
  { rest: ['PUT', '/organizations/current/credentials'], gql: 'mutation($i: CredentialsInput!) { updateCredentials(input: $i) { _id } }', body: () => ({ sms_partnerID: 'p', email_user: 'u', email_pass: 'secret' }) },
  { rest: ['POST', '/api-keys'], gql: 'mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key } }', body: () => ({ name: 'k' }) },
];

/** The paths of a body's string leaves. */
function stringLeaves(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringLeaves(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringLeaves(v, [...path, k]));
  return [];
}

function replaced(body: Record<string, unknown>, path: (string | number)[], bad: string) {
  const copy = structuredClone(body);
  let node: any = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  node[path[path.length - 1]!] = bad;
  return copy;
}

test('strings Postgres can not store, in any string field of any write, are a 400 naming the field in both doors', async () => {
  const cases = fc.constantFrom(...TEMPLATES).chain((t) => fc.tuple(fc.constant(t), fc.constantFrom(...stringLeaves(t.body())), unstorableString, fc.boolean()));
  await fc.assert(
    fc.asyncProperty(cases, async ([template, path, bad, rest]) => {
      const body = replaced(template.body(), path, bad);
      const field = path.join('.');
      requests++;
      if (rest) {
        const [method, p] = template.rest;
        const res = await api.raw(method, p, body, { token: org.token });
        checkShape(res.status, res.body, `${method} ${p} ${field}`);
        expect(res.status).toBe(400);
        expect(res.body.details).toContainEqual({ field, message: `${field} must not contain NUL characters or unpaired surrogates` });
        return true;
      }
      const res = await api.gql(template.gql, { i: body }, { token: org.token });
      const statuses = (res.body.errors ?? []).map((e: any) => e.extensions?.statusCode ?? 500);
      if (res.status >= 500 || statuses.some((s: number) => s >= 500)) fiveHundreds.push(`${template.gql.slice(0, 40)} ${field} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      expect(statuses).toEqual([400]);
      return true;
    }),
    { numRuns: RUNS * 4, seed: Number(process.env.FUZZ_SEED ?? 20261123) },
  );
  expect(fiveHundreds).toEqual([]);
}, 240_000);
