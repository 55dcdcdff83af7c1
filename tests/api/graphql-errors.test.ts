import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Client, type Org, type Reply } from '../helpers/herald.js';

// Whatever reaches POST /graphql is answered as GraphQL: `{ errors: [{ message, extensions: { code,
// statusCode } }] }`, with the HTTP status of the refusal, never a 5xx, never the REST shape.
let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

const auth = () => ({ token: org.token });

/** A raw POST /graphql: the body as given, JSON unless another content type is named. */
const post = (body: string | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  api.raw('POST', '/graphql', body, auth(), headers);

/** One GraphQL error, in JSON, with this HTTP status mirrored in `extensions.statusCode`. */
function expectGraphqlRefusal(res: Reply, status: number, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/(graphql-response\+)?json/);
  expect(Object.keys(res.body)).toEqual(['errors']);
  expect(res.body.errors).toHaveLength(1);
  const [err] = res.body.errors;
  expect(typeof err.message).toBe('string');
  expect(err.extensions).toMatchObject({ statusCode: status, code: expect.stringMatching(/^[A-Z_]+$/) });
  expect(err.extensions).not.toHaveProperty('stacktrace');
  if (message) expect(err.message).toMatch(message);
  return err;
}

describe('operation names', () => {
  const doc = 'query First { health } query Second { health }';

  test('an operationName that names no operation of the document is a 400 GraphQL error, not a 500', async () => {
    const res = await post(JSON.stringify({ query: doc, operationName: 'Third' }));
    expectGraphqlRefusal(res, 400, /Third/);
  });

  test('an operationName on a document with one anonymous operation is a 400 too', async () => {
    expectGraphqlRefusal(await post(JSON.stringify({ query: '{ health }', operationName: 'Named' })), 400);
  });

  test('several operations and no operationName is a 400; a known name runs its operation', async () => {
    expectGraphqlRefusal(await post(JSON.stringify({ query: doc })), 400);
    const ok = await post(JSON.stringify({ query: doc, operationName: 'Second' }));
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ data: { health: 'ok' } });
  });
});

describe('request bodies', () => {
  test.each([
    ['truncated JSON', '{"query":'],
    ['single quotes', "{'query':'{ health }'}"],
    ['a trailing comma', '{"query":"{ health }",}'],
    ['a NUL before the object', '\u0000{}'],
  ])('malformed JSON (%s) is a 400 GraphQL error', async (_label, raw) => {
    const err = expectGraphqlRefusal(await post(raw), 400, /json/i);
    expect(err.message).not.toMatch(/position|unexpected token/i);
  });

  test.each([
    ['a string', '"{\\"id\\":1}"'],
    ['an array', '[1,2]'],
    ['a number', '42'],
    ['true', 'true'],
  ])('variables given as %s are a 400 GraphQL error', async (_label, variables) => {
    expectGraphqlRefusal(await post(`{"query":"{ health }","variables":${variables}}`), 400, /variables/);
  });

  test.each(['"text"', '[]', '42', 'null', '{}'])('a body that is not a GraphQL request object (%s) is a 400 GraphQL error', async (raw) => {
    expectGraphqlRefusal(await post(raw), 400);
  });

  test('an operationName or query of the wrong type is a 400 GraphQL error', async () => {
    expectGraphqlRefusal(await post(JSON.stringify({ query: '{ health }', operationName: 7 })), 400);
    expectGraphqlRefusal(await post(JSON.stringify({ query: 7 })), 400);
  });

  test('a POST with no body at all is a 400 GraphQL error', async () => {
    expectGraphqlRefusal(await post(undefined, {}), 400);
  });

  test('a body over 15 MiB is 413 in the GraphQL shape', async () => {
    const res = await post(JSON.stringify({ query: '{ health }', variables: { x: 'y'.repeat(15 * 1024 * 1024 + 10) } }));
    expectGraphqlRefusal(res, 413);
  });

  test.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'a body sent as %s is 415 naming the type expected, in the GraphQL shape, and runs nothing',
    async (type) => {
      const name = `form ${randomUUID()}`;
      const query = `mutation { createGroup(input: { name: "${name}", color: "bg-red-500" }) { _id } }`;
      const res = await post(JSON.stringify({ query }), { 'content-type': type });
      expectGraphqlRefusal(res, 415, /application\/json/);
      const groups = await api.get('/groups', auth());
      expect(groups.body.map((g: any) => g.name)).not.toContain(name);
    },
  );

  test('application/json with a charset and +json types are read as JSON', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/graphql-request+json']) {
      const res = await post(JSON.stringify({ query: '{ health }' }), { 'content-type': type });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { health: 'ok' } });
    }
  });
});

describe('strings Postgres can not store', () => {
  test('a NUL or an unpaired surrogate in a variable is a 400 naming the field, with the other failures', async () => {
    for (const bad of ['Ada\u0000', 'Ada\ud800', '\udc00Ada']) {
      const res = await api.gql(
        'mutation ($i: CreateContactInput!) { createContact(input: $i) { _id } }',
        { i: { name: bad, email: 'not-an-email', tags: ['ok', `t${bad}`] } },
        auth(),
      );
      expect(res.body.errors).toHaveLength(1);
      const [err] = res.body.errors!;
      expect(err.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
      expect(err.extensions.details.map((d: any) => d.field).sort()).toEqual(['email', 'name', 'tags.1']);
      expect(err.message).toMatch(/name must not contain NUL characters or unpaired surrogates/);
    }
  });

  test('a NUL in a list filter or a sign-in is a 400, not a 500', async () => {
    const search = await api.gql('query ($f: ContactFilter) { contacts(filter: $f) { totalCount } }', { f: { search: 'a\u0000' } }, auth());
    expect(search.body.errors![0].extensions).toMatchObject({ statusCode: 400, details: [{ field: 'search' }] });
    const login = await api.gql('mutation ($i: LoginInput!) { login(input: $i) { token } }', { i: { email: `a\u0000${org.email}`, password: 'x' } });
    expect(login.body.errors![0].extensions).toMatchObject({ statusCode: 400, details: [{ field: 'email' }] });
  });
});

describe('credentials', () => {
  test('no credential is 401 Authentication required in extensions (HTTP 200, as every resolver error)', async () => {
    const res = await api.gql('{ me { _id } }');
    expect(res.status).toBe(200);
    expect(res.body.errors![0]).toMatchObject({
      message: 'Authentication required: send Authorization: Bearer <token>, the UNIFIED-API-Key header or the apikey query parameter',
      extensions: { code: 'UNAUTHORIZED', statusCode: 401 },
    });
  });
});
