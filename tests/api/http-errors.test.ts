import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, client, isolatedDatabase, signupBody, signupOrg, startTestHerald, UUID_RE, type Client, type Org, type Reply } from '../helpers/herald.js';
import { ERROR_KEYS, expectError, sortedKeys as sorted } from '../helpers/expect.js';

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

const auth = () => ({ token: org.token });

/** A 400 whose `details` name exactly these fields, and whose message is their messages joined. */
function expectRejectedFields(res: Reply, fields: string[]) {
  expect(res.status).toBe(400);
  expect(sorted(res.body)).toEqual(['details', ...ERROR_KEYS].sort());
  expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  const details = res.body.details as { field: string; message: string }[];
  for (const d of details) expect(sorted(d)).toEqual(['field', 'message']);
  expect([...new Set(details.map((d) => d.field))].sort()).toEqual([...fields].sort());
  expect(res.body.message).toBe(details.map((d) => d.message).join('; '));
  for (const f of fields) expect(res.body.message).toContain(f);
}

/** Nothing that reads like a stack trace, SQL or a driver's words. */
function expectNoInternals(res: Reply) {
  const text = JSON.stringify(res.body);
  expect(text).not.toMatch(/\bat .+\.(ts|js):\d+|node_modules|\/src\/|\bstack\b/i);
  expect(text).not.toMatch(/\b(select|insert|update|delete)\b.+\b(from|into|set|where)\b|relation "|SQLSTATE|syntax error at|pg_|knex/i);
}

describe('unknown routes', () => {
  test.each(['GET', 'POST', 'PUT', 'DELETE', 'PATCH'])('%s on an unknown path is 404 Resource not found', async (method) => {
    const res = await api.raw(method, `/no-such-thing/${randomUUID()}`, method === 'GET' || method === 'DELETE' ? undefined : {});
    expectError(res, 404, 'Resource not found');
  });

  test('a documented path with an undocumented method is 405 with Allow listing its methods, with or without credentials', async () => {
    const cases: [string, string, string][] = [
      ['PATCH', '/contacts', 'GET, POST'],
      ['DELETE', '/organizations/current', 'GET, PUT'],
      ['GET', '/auth/signup', 'POST'],
      ['POST', `/contacts/${randomUUID()}`, 'GET, PUT, DELETE'],
      ['GET', `/campaigns/${randomUUID()}/launch`, 'POST'],
      ['POST', '/users/me', 'GET, PUT, DELETE'],
      ['POST', '/health', 'GET'],
      ['DELETE', '/ready', 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      for (const cred of [auth(), undefined]) {
        const res = await api.raw(method, path, method === 'GET' || method === 'DELETE' ? undefined : {}, cred);
        expectError(res, 405, `${method} is not allowed on this path; use ${allow}`);
        expect(res.headers.get('allow')).toBe(allow);
      }
    }
  });

  test('/graphql answers other methods with 405 and Allow: GET, POST, in the GraphQL shape', async () => {
    for (const [method, body] of [['PUT', { query: '{ health }' }], ['DELETE', undefined], ['PATCH', {}]] as const) {
      const res = await api.raw(method, '/graphql', body, auth());
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, POST');
      expect(res.body).toEqual({
        errors: [{ message: `${method} is not allowed on this path; use GET, POST`, extensions: { code: 'METHOD_NOT_ALLOWED', statusCode: 405 } }],
      });
    }
  });

  test('OPTIONS answers a known path with its Allow header', async () => {
    for (const [path, allow] of [['/contacts', 'GET, POST'], ['/health', 'GET'], ['/graphql', 'GET, POST']]) {
      const res = await api.raw('OPTIONS', path!);
      expect(res.status).toBe(204);
      expect(res.headers.get('allow')).toBe(allow);
    }
    expect((await api.raw('OPTIONS', '/nope')).status).toBe(404);
  });

  test('versioned or trailing-segment variants of real paths are not served', async () => {
    expectError(await api.get('/v1/users/me', auth()), 404, 'Resource not found');
    expectError(await api.get('/users/me/extra', auth()), 404, 'Resource not found');
  });
});

describe('request bodies', () => {
  test('malformed JSON is 400 in the error shape, never 500', async () => {
    for (const raw of ['{"name":', '{name: "x"}', "{'name':'x'}", '{"name":"x",}', 'nul', '\u0000{}']) {
      const res = await api.raw('POST', '/contacts', raw, auth());
      expectError(res, 400);
      expect(res.body.message).toMatch(/json/i);
      expectNoInternals(res);
      // The parser's own words (positions, tokens) are not echoed back.
      expect(res.body.message).not.toMatch(/position|unexpected token/i);
    }
  });

  test('a body over 15 MiB is 413 Payload Too Large; one just under is parsed and validated', async () => {
    const huge = JSON.stringify({ name: 'x', phone: '0712345678', tags: ['y'.repeat(15 * 1024 * 1024 + 10)] });
    expectError(await api.raw('POST', '/contacts', huge, auth()), 413, 'Request body is too large');
    const big = JSON.stringify({ name: 'x', phone: '0712345678', tags: ['y'.repeat(14 * 1024 * 1024)] });
    const res = await api.raw('POST', '/contacts', big, auth());
    // Parsed (so not 413) and then refused by the tag length rule.
    expectRejectedFields(res, ['tags.0']);
  });

  test('an oversized body is refused before authentication and before the route', async () => {
    const huge = 'x'.repeat(16 * 1024 * 1024);
    const res = await api.raw('POST', '/auth/login', `{"email":"a@b.co","password":"${huge}"}`);
    expectError(res, 413);
  });

  test('JSON sent as another content type is 415 naming the type expected, before authentication, and nothing is stored', async () => {
    const body = signupBody();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
      const res = await api.raw('POST', '/auth/signup', JSON.stringify(body), undefined, { 'content-type': type });
      expectError(res, 415, 'Content-Type must be application/json');
    }
    // A body without any content type is refused the same way, and so is one to a route that needs a credential.
    const bare = await fetch(`${herald.url}/contacts`, { method: 'POST', headers: { authorization: `Bearer ${org.token}` }, body: new Uint8Array(Buffer.from('{"name":"x","phone":"0712345678"}')) });
    expect(bare.status).toBe(415);
    expect(await bare.json()).toEqual({ statusCode: 415, message: 'Content-Type must be application/json', error: 'Unsupported Media Type' });
    expectError(await api.raw('PUT', '/users/me', 'firstName=Eve', undefined, { 'content-type': 'application/x-www-form-urlencoded' }), 415);
    // None of the refused requests created the account: the same email still signs up.
    expect((await api.post('/auth/signup', body)).status).toBe(201);
  });

  test('application/json with a charset, and +json types, are read as JSON', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/vnd.api+json', 'application/merge-patch+json']) {
      const res = await api.raw('POST', '/groups', JSON.stringify({ name: `g ${randomUUID()}`, color: 'bg-red-500' }), auth(), { 'content-type': type });
      expect(res.status).toBe(201);
    }
  });

  test('a request without a body needs no content type: launch with no content, or with content-length 0', async () => {
    for (const headers of [{}, { 'content-type': 'text/plain' }] as Record<string, string>[]) {
      const created = await api.post('/campaigns', { name: 'c', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'hi' } }, recipients: { manual: ['0712345678'] } }, auth());
      expect(created.status).toBe(201);
      const res = await fetch(`${herald.url}/campaigns/${created.body._id}/launch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.token}`, ...headers },
        body: 'content-type' in headers ? '' : undefined,
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { status: string }).status).toBe('completed');
    }
  });

  test('a JSON body in an unsupported charset or encoding is 415 Unsupported Media Type', async () => {
    const body = JSON.stringify({ name: 'x', phone: '0712345678' });
    const charset = await api.raw('POST', '/contacts', body, auth(), { 'content-type': 'application/json; charset=latin1' });
    expectError(charset, 415);
    const encoding = await api.raw('POST', '/contacts', body, auth(), { 'content-encoding': 'x-unknown' });
    expectError(encoding, 415);
  });

  test('a body that is JSON but not an object is 400 naming the body', async () => {
    for (const raw of ['[]', '"text"', '42', 'null', 'true']) {
      const res = await api.raw('POST', '/contacts', raw, auth());
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.body.message).toMatch(/body/);
    }
  });
});

describe('unknown body fields', () => {
  test('signup can not set credits, isActive, _id or organization: 400 naming each, nothing stored', async () => {
    const body = signupBody();
    const res = await api.post('/auth/signup', { ...body, credits: 1_000_000, isActive: false, _id: randomUUID(), organization: randomUUID() });
    expectRejectedFields(res, ['credits', 'isActive', '_id', 'organization']);
    for (const d of res.body.details) expect(d.message).toBe(`${d.field} is not allowed`);
    const ok = await api.post('/auth/signup', body);
    expect(ok.status).toBe(201);
    const current = await api.get('/organizations/current', { token: ok.body.token });
    expect(current.body.credits).not.toBe(1_000_000);
  });

  test('contacts and campaigns refuse fields they do not list', async () => {
    expectRejectedFields(await api.post('/contacts', { name: 'x', phone: '0712345678', ServiceOrganization: randomUUID(), role: 'admin' }, auth()), [
      'ServiceOrganization',
      'role',
    ]);
    const campaign = {
      name: 'c',
      type: 'broadcast',
      channels: ['sms'],
      messages: { sms: { content: 'hi' } },
      status: 'completed',
      analytics: { sent: 1000 },
    };
    expectRejectedFields(await api.post('/campaigns', campaign, auth()), ['status', 'analytics']);
  });

  test('a user update can not set isActive, organization or email', async () => {
    const res = await api.put(`/users/${org.user._id}`, { firstName: 'Ada', isActive: false, organization: randomUUID(), email: 'x@example.com' }, auth());
    expectRejectedFields(res, ['isActive', 'organization', 'email']);
    const me = await api.get('/users/me', auth());
    expect(me.body).toMatchObject({ isActive: true, email: org.email });
    expect(me.body.organization._id).toBe(org.orgId);
  });

  test('unknown fields inside nested objects are named by their path', async () => {
    const res = await api.post(
      '/campaigns',
      { name: 'c', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'hi', priority: 'high' } } },
      auth(),
    );
    expectRejectedFields(res, ['messages.sms.priority']);
  });
});

describe('hostile JSON', () => {
  const memberBody = () => ({
    firstName: 'Eve',
    lastName: 'Mallory',
    email: `eve.${randomUUID().slice(0, 8)}@example.com`,
    password: 'a decent password',
    countryCode: '+254',
    phoneNumber: '700000002',
  });

  test.each([
    ['__proto__', '"__proto__":{"role":"admin","isAdmin":true}'],
    ['constructor.prototype', '"constructor":{"prototype":{"role":"admin","isAdmin":true}}'],
  ])('%s in a body is refused or neutralised: no admin is made, no prototype is polluted', async (_label, hostile) => {
    const body = memberBody();
    const raw = `{${JSON.stringify(body).slice(1, -1)},${hostile}}`;
    const res = await api.raw('POST', '/users', raw, auth());
    expect(res.status).toBeLessThan(500);
    if (res.status === 201) {
      // Accepted: the extra key was dropped, and the user got the default role.
      expect(res.body.role).toBe('user');
    } else {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(Array.isArray(res.body.details)).toBe(true);
      // Refused: the user was not created.
      const login = await api.post('/auth/login', { email: body.email, password: body.password });
      expect(login.status).toBe(401);
    }
    const plain: Record<string, unknown> = {};
    expect(plain.role).toBeUndefined();
    expect(plain.isAdmin).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('isAdmin');
    // The service still answers normally and a plain create still gets the default role.
    const normal = await api.post('/users', memberBody(), auth());
    expect(normal.status).toBe(201);
    expect(normal.body.role).toBe('user');
  });

  test('__proto__ inside a nested object (credentials, campaign messages) is refused or neutralised', async () => {
    const creds = await api.raw('PUT', '/organizations/current/credentials', '{"sms_partnerID":"p1","__proto__":{"sms_apiUrl":"http://evil.example"}}', auth());
    expect(creds.status).toBeLessThan(500);
    expect([200, 400]).toContain(creds.status);
    const current = await api.get('/organizations/current', auth());
    expect(current.body.credentials.sms_apiUrl).not.toBe('http://evil.example');

    const campaign = `{"name":"c","type":"broadcast","channels":["sms"],"messages":{"sms":{"content":"hi"},"__proto__":{"email":{"subject":"s","content":"x"}}}}`;
    const res = await api.raw('POST', '/campaigns', campaign, auth());
    expect([201, 400]).toContain(res.status);
    if (res.status === 201) expect(Object.keys(res.body.messages)).toEqual(['sms']);
  });

  test('deeply nested JSON is a 400 in the error shape, never a 500 or a hang', async () => {
    const arrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const objects = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const bodies = [
      arrays(10_000),
      `{"name":${arrays(10_000)},"phone":"0712345678"}`,
      `{"name":"x","phone":"0712345678","tags":${arrays(100_000)}}`,
      `{"name":"x","phone":"0712345678","extra":${objects(100_000)}}`,
      objects(100_000),
    ];
    for (const raw of bodies) {
      const res = await api.raw('POST', '/contacts', raw, auth());
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expectNoInternals(res);
    }
    // The same depth in a send with an Idempotency-Key (whose request is hashed) is still a 400.
    const send = await api.raw('POST', '/notifications/send', `{"type":"sms","to":${arrays(100_000)},"message":"hi"}`, auth(), {
      'idempotency-key': randomUUID(),
    });
    expect(send.status).toBe(400);
    expect((await api.get('/health')).status).toBe(200);
  });
});

describe('headers on every answer', () => {
  test('every response, errors included, carries a fresh X-Request-Id', async () => {
    const replies = [
      await api.get('/health'),
      await api.get('/nope'),
      await api.raw('POST', '/contacts', '{', auth()),
      await api.get('/users/me'),
      await api.post('/contacts', {}, auth()),
    ];
    const ids = replies.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[\w.:-]{1,100}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('a well-formed X-Request-Id from the caller is kept; a hostile one is replaced, not reflected', async () => {
    const given = `trace-${randomUUID()}`;
    expect((await api.get('/nope', undefined, { 'x-request-id': given })).headers.get('x-request-id')).toBe(given);
    const hostile = `<script>${'x'.repeat(200)}`;
    const res = await api.get('/nope', undefined, { 'x-request-id': hostile });
    expect(res.headers.get('x-request-id')).not.toBe(hostile);
    expect(res.headers.get('x-request-id')).toMatch(UUID_RE);
  });

  test.each([
    ['a success', () => api.get('/health')],
    ['a 404', () => api.get('/nope')],
    ['a 400', () => api.raw('POST', '/contacts', '{', auth())],
    ['a 401', () => api.get('/users/me')],
    ['a 413', () => api.raw('POST', '/contacts', `"${'x'.repeat(16 * 1024 * 1024)}"`, auth())],
  ])('helmet headers are on %s, and X-Powered-By is not', async (_label, call) => {
    const res = await call();
    const h = res.headers;
    expect(h.get('x-content-type-options')).toBe('nosniff');
    expect(h.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(h.get('strict-transport-security')).toMatch(/max-age=\d+/);
    expect(h.get('referrer-policy')).toBe('no-referrer');
    expect(h.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(h.get('content-security-policy')).toMatch(/frame-ancestors 'self'/);
    expect(h.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(h.get('x-dns-prefetch-control')).toBe('off');
    expect(h.get('x-powered-by')).toBeNull();
  });
});

describe('server faults', () => {
  // No client input causes a 500 (the fuzz tests hunt for one); this breaks the server instead:
  // a Herald on a database of its own whose groups table has gone (schema drift), so the
  // driver's error carries SQL and a relation name that must not reach the client.
  let broken: Herald;
  let brokenApi: Client;
  let database: Awaited<ReturnType<typeof isolatedDatabase>>;
  let token: string;

  beforeAll(async () => {
    database = await isolatedDatabase(`errors_${process.pid}`);
    broken = await startTestHerald({ DATABASE_URL: database.url, WORKERS: 'false' });
    brokenApi = client(broken.url);
    token = (await signupOrg(brokenApi)).token;
    await broken.db.raw('ALTER TABLE groups RENAME TO groups_gone');
  }, 120_000);
  afterAll(async () => {
    await broken?.stop();
    await database?.drop();
  });

  test('REST: 500 Internal server error, with nothing of the SQL or the stack', async () => {
    const res = await brokenApi.get('/groups', { token });
    expectError(res, 500, 'Internal server error');
    expectNoInternals(res);
    expect(JSON.stringify(res.body)).not.toMatch(/groups_gone|"groups"|does not exist/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  test('GraphQL: the same 500 in extensions, with no stacktrace', async () => {
    const res = await brokenApi.gql('{ groups { totalCount } }', undefined, { token });
    expect(res.body.errors).toHaveLength(1);
    const [err] = res.body.errors!;
    expect(err.message).toBe('Internal server error');
    expect(err.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR', statusCode: 500 });
    expectNoInternals(res);
    expect(JSON.stringify(res.body)).not.toMatch(/groups_gone|does not exist/);
  });
});

describe('strings Postgres can not store', () => {
  const BAD = ['a\u0000b', '\u0000', 'a\ud800', '\udfffz', 'x\udbff\u0041'];
  const nul = (field: string) => `${field} must not contain NUL characters or unpaired surrogates`;

  /** Every write, with one string field replaced by `bad`, and the field's name in the answer. */
  const writes = (bad: string): [string, string, () => unknown, string][] => [
    ['POST', '/auth/signup', () => signupBody({ companyName: `Acme ${bad}` }), 'companyName'],
    ['POST', '/auth/login', () => ({ email: `a${bad}@example.com`, password: 'whatever password' }), 'email'],
    ['POST', '/auth/login', () => ({ email: org.email, password: `pass${bad}word` }), 'password'],
    ['POST', '/users', () => ({ firstName: bad, lastName: 'L', email: `u.${randomUUID().slice(0, 8)}@example.com`, password: 'a decent password', countryCode: '+254', phoneNumber: '700000002' }), 'firstName'],
    ['PUT', `/users/${org.user._id}`, () => ({ lastName: bad }), 'lastName'],
    ['PUT', '/organizations/current/credentials', () => ({ sms_partnerID: bad }), 'sms_partnerID'],
    ['POST', '/api-keys', () => ({ name: bad }), 'name'],
    ['POST', '/contacts', () => ({ name: 'x', phone: '0712345678', organization: bad }), 'organization'],
    ['POST', '/contacts', () => ({ name: 'x', phone: '0712345678', tags: ['ok', bad] }), 'tags.1'],
    ['POST', '/groups', () => ({ name: `g ${bad}`, color: 'bg-red-500' }), 'name'],
    ['POST', '/groups', () => ({ name: `g ${randomUUID()}`, color: 'bg-red-500', description: bad }), 'description'],
    ['POST', '/campaigns', () => ({ name: 'c', type: 'broadcast', channels: ['sms'], messages: { sms: { content: `hi ${bad}` } } }), 'messages.sms.content'],
    ['POST', '/campaigns', () => ({ name: 'c', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'hi' } }, recipients: { manual: [`07123${bad}`] } }), 'recipients.manual.0'],
    ['POST', '/notifications/send', () => ({ type: 'sms', to: '0712345678', message: `hi ${bad}` }), 'message'],
    ['POST', '/notifications/send', () => ({ type: 'email', to: ['a@example.com'], subject: bad, message: 'hi' }), 'subject'],
    ['POST', '/notifications/send-to-all', () => ({ type: 'sms', to: 'all', message: bad }), 'message'],
  ];

  test.each(BAD.map((b) => [JSON.stringify(b), b]))('%s in any string field of any write is a 400 naming the field', async (_label, bad) => {
    for (const [method, path, body, field] of writes(bad)) {
      const res = await api.raw(method, path, body(), path.startsWith('/auth/') ? undefined : auth());
      expectRejectedFields(res, [field]);
      expect(res.body.details).toEqual([{ field, message: nul(field) }]);
    }
  });

  test('they are named together with every other failing field, in the same answer', async () => {
    const res = await api.post('/contacts', { name: 'Ada\u0000', email: 'not-an-email', tags: ['ok', 'a\ud800', 'b\u0000'], organization: 'fine' }, auth());
    expectRejectedFields(res, ['name', 'email', 'tags.1', 'tags.2']);
    const signup = await api.post('/auth/signup', signupBody({ firstName: '\udc00', password: 'short' }));
    expectRejectedFields(signup, ['firstName', 'password']);
  });

  test('a paired surrogate (an emoji) is an ordinary character and is stored', async () => {
    const res = await api.post('/contacts', { name: 'Ada 💥', phone: '0712345678', tags: ['🎉'] }, auth());
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Ada 💥', tags: ['🎉'] });
  });

  test('query-string filters go through the same rule', async () => {
    for (const query of ['search=a%00b', 'tag=%00', 'group=%00']) {
      const res = await api.get(`/contacts?${query}`, auth());
      const field = query.split('=')[0]!;
      expectRejectedFields(res, [field]);
    }
    expectRejectedFields(await api.get('/message-logs?channel=sms%00', auth()), ['channel']);
    expectRejectedFields(await api.get('/sandbox/outbox?recipient=07%00', auth()), ['recipient']);
  });
});

describe('401 answers', () => {
  const NO_CREDENTIAL = 'Authentication required: send Authorization: Bearer <token>, the UNIFIED-API-Key header or the apikey query parameter';

  test('no credential at all: Authentication required, with WWW-Authenticate: Bearer realm="herald"', async () => {
    for (const res of [await api.get('/users/me'), await api.get('/contacts'), await api.post('/contacts', { name: 'x' }), await api.get('/api-keys')]) {
      expectError(res, 401, NO_CREDENTIAL);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="herald"');
    }
  });

  test('a refused token or key: its own message, and error="invalid_token" in the challenge', async () => {
    const refused = [
      await api.get('/users/me', { token: 'not-a-jwt' }),
      await api.get('/users/me', { headers: { authorization: 'Basic abc' } }),
      await api.get('/contacts', { apiKey: 'uak_nope' }),
      await api.get('/contacts', { queryKey: 'uak_nope' }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(401);
      expect(res.body.message).not.toBe(NO_CREDENTIAL);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="herald", error="invalid_token"');
    }
  });

  test('a failed login is 401 Invalid credentials with the plain challenge', async () => {
    const res = await api.post('/auth/login', { email: org.email, password: 'not the password' });
    expectError(res, 401, 'Invalid credentials');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="herald"');
  });

  test('answers other than 401 carry no challenge', async () => {
    expect((await api.get('/users/me', auth())).headers.get('www-authenticate')).toBeNull();
    expect((await api.get('/nope')).headers.get('www-authenticate')).toBeNull();
  });
});

describe('validation names every failing field in one answer', () => {
  test('contact create: a bad email and a bad phone', async () => {
    const res = await api.post('/contacts', { name: 'x', email: 'not-an-email', phone: '12' }, auth());
    expectRejectedFields(res, ['email', 'phone']);
    expect(res.body.message).toBe('email must be a valid email; phone must be a valid phone number');
  });

  test('contact create: a bad email, a bad phone and unknown group ids', async () => {
    const unknown = randomUUID();
    const res = await api.post('/contacts', { name: '', email: 'not-an-email', phone: 'abc', groups: [unknown] }, auth());
    expectRejectedFields(res, ['name', 'email', 'phone', 'groups']);
    expect(res.body.message).toContain(unknown);
  });

  test('contact create: no address at all is named with the other failures', async () => {
    expectRejectedFields(await api.post('/contacts', { name: '', tags: 'x' }, auth()), ['name', 'tags', 'email']);
  });

  test('a bad countryCode does not make a phone look bad that may be good for the code meant', async () => {
    // 2025550123 is a US number, not a Kenyan one (the organization's country).
    expectRejectedFields(await api.post('/contacts', { name: 'x', phone: '2025550123', countryCode: 'USA' }, auth()), ['countryCode']);
    expect((await api.post('/contacts', { name: 'x', phone: '2025550123', countryCode: 'US' }, auth())).status).toBe(201);
  });

  test('contact update: a bad email and a phone bad for the stored country code', async () => {
    const created = await api.post('/contacts', { name: 'x', phone: '0712345678' }, auth());
    expect(created.status).toBe(201);
    const res = await api.put(`/contacts/${created.body._id}`, { email: 'nope', phone: '123', groups: [randomUUID()] }, auth());
    expectRejectedFields(res, ['email', 'phone', 'groups']);
  });

  test('signup and user create: a bad email and a phone number that is not one for its country code', async () => {
    const signup = await api.post('/auth/signup', signupBody({ email: 'nope', phoneNumber: '1234' }));
    expectRejectedFields(signup, ['email', 'phoneNumber']);
    expect(signup.body.details[1].message).toBe('phoneNumber must be a valid phone number for country code +254');
    const user = await api.post(
      '/users',
      { firstName: 'A', lastName: '', email: `u.${randomUUID().slice(0, 8)}@example.com`, password: 'a decent password', countryCode: '+1', phoneNumber: '0712345678' },
      auth(),
    );
    expectRejectedFields(user, ['lastName', 'phoneNumber']);
  });

  test('user update: a bad name and a phone number that is not one for the stored country code', async () => {
    expectRejectedFields(await api.put(`/users/${org.user._id}`, { firstName: '', phoneNumber: '1234' }, auth()), ['firstName', 'phoneNumber']);
  });

  test('a password change of one’s own without the old password and with a short new one', async () => {
    expectRejectedFields(await api.put(`/users/${org.user._id}/password`, { newPassword: 'short' }, auth()), ['newPassword', 'oldPassword']);
  });

  test('campaign create: a bad name, unknown ids, bad manual addresses and a channel without its message', async () => {
    const res = await api.post(
      '/campaigns',
      {
        name: '',
        type: 'broadcast',
        channels: ['sms', 'email'],
        messages: { sms: { content: 'hi' } },
        recipients: { contacts: [randomUUID()], groups: [randomUUID()], manual: ['not an address', '0712345678'] },
      },
      auth(),
    );
    expectRejectedFields(res, ['name', 'messages.email', 'recipients.contacts', 'recipients.groups', 'recipients.manual']);
    expect(res.body.message).toContain('recipients.manual contains invalid addresses: not an address');
  });

  test('campaign create: one bad id list does not hide the others', async () => {
    const res = await api.post(
      '/campaigns',
      { name: 'c', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'hi' } }, recipients: { contacts: ['not-a-uuid'], groups: [randomUUID()], manual: ['nope'] } },
      auth(),
    );
    expectRejectedFields(res, ['recipients.contacts.0', 'recipients.groups', 'recipients.manual']);
  });

  test('a single send: an empty message and an address that is not one', async () => {
    expectRejectedFields(await api.post('/notifications/send', { type: 'sms', to: 'abc', message: '' }, auth()), ['message', 'to']);
  });

  test('the user role is still 403 for a write whose input would fail the rules that read the database', async () => {
    const member = await api.post('/users', { firstName: 'M', lastName: 'M', email: `m.${randomUUID().slice(0, 8)}@example.com`, password: 'a decent password', countryCode: '+254', phoneNumber: '700000003' }, auth());
    expect(member.status).toBe(201);
    const login = await api.post('/auth/login', { email: member.body.email, password: 'a decent password' });
    expectError(await api.post('/contacts', { name: 'x', phone: '0712345678', groups: [randomUUID()] }, { token: login.body.token }), 403, 'Insufficient permissions');
  });
});
