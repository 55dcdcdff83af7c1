import { randomUUID } from 'node:crypto';
import { getIntrospectionQuery, parse, validate } from 'graphql';
import { buildSchema } from '../../src/graphql/schema.js';
import type { Herald } from '../../src/server.js';
import { addUser, heraldWithClient, heraldWithOrg, signupOrg, type Client, type Org, type Reply } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

const auth = () => ({ token: org.token });
const post = (body: unknown, headers: Record<string, string> = {}, cred = auth()) => api.raw('POST', '/graphql', body, cred, headers);

/** A GraphQL answer that was refused before execution: one 400-class error and no data. */
function expectRefused(res: Reply, message: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.data ?? undefined).toBeUndefined();
  expect(res.body.errors!.length).toBeGreaterThanOrEqual(1);
  const err = res.body.errors.find((e: any) => message.test(e.message));
  expect(err).toBeDefined();
  expect(err.extensions.statusCode).toBe(400);
  expect(typeof err.extensions.code).toBe('string');
}

/** Nests `inner` under `levels` repetitions of group -> contacts -> groups. */
function nestedGroups(levels: number, inner = '_id'): string {
  let selection = inner;
  for (let i = 0; i < levels; i++) selection = `groups { _id contacts { edges { node { _id ${selection} } } } }`;
  return selection;
}

describe('limits', () => {
  test('a query deeper than 10 levels is refused before it runs; one within the limit runs', async () => {
    // group(1) contacts(2) edges(3) node(4) groups(5) ... : 5 levels of nesting is depth 20+.
    const deep = await api.gql(`{ groups { edges { node { ${nestedGroups(5)} } } } }`, undefined, auth());
    expectRefused(deep, /depth/i);

    const shallow = await api.gql('{ groups { edges { node { _id contacts { edges { node { _id groups { _id } } } } } } } }', undefined, auth());
    expect(shallow.body.errors).toBeUndefined();
    expect(shallow.body.data.groups.edges).toEqual([]);
  });

  test('fragments do not hide depth: a deep query written with nested fragments is refused', async () => {
    const fragments = [
      'fragment C on Contact { _id groups { ...G1 } }',
      'fragment G1 on Group { contacts { edges { node { groups { ...G2 } } } } }',
      'fragment G2 on Group { contacts { edges { node { groups { ...G3 } } } } }',
      'fragment G3 on Group { contacts { edges { node { groups { _id } } } } }',
    ].join(' ');
    const res = await api.gql(`{ contacts { edges { node { ...C } } } } ${fragments}`, undefined, auth());
    expectRefused(res, /depth/i);
  });

  test('the depth limit applies to introspection too', async () => {
    // types -> fields -> type -> fields ... fans out at every level (graphql-js also refuses this).
    let nested = 'name';
    for (let i = 0; i < 8; i++) nested = `fields { type { ${nested} } }`;
    expectRefused(await api.gql(`{ __schema { types { ${nested} } } }`), /depth/i);
    expectRefused(await api.gql(`{ __type(name: "Contact") { ${nested} } }`), /depth/i);

    // Eleven levels through args and input types: only a depth limit stands in its way.
    const path = '{ __schema { directives { args { type { fields { args { type { inputFields { type { enumValues { name } } } } } } } } } } }';
    expectRefused(await api.gql(path), /depth/i);
    // The same walk cut at ten levels is answered.
    const within = await api.gql('{ __schema { directives { args { type { fields { args { type { inputFields { type { name } } } } } } } } } }');
    expect(within.body.errors).toBeUndefined();
  });

  test('more than 15 aliases are refused; a few are fine', async () => {
    const many = Array.from({ length: 40 }, (_, i) => `a${i}: health`).join(' ');
    expectRefused(await api.gql(`{ ${many} }`), /alias/i);

    const manyIntrospections = Array.from({ length: 40 }, (_, i) => `s${i}: __schema { queryType { name } }`).join(' ');
    expectRefused(await api.gql(`{ ${manyIntrospections} }`), /alias/i);

    const few = await api.gql('{ a: health b: health c: health }');
    expect(few.body).toEqual({ data: { a: 'ok', b: 'ok', c: 'ok' } });
  });

  test('a document of more than 1,000 tokens is refused', async () => {
    const res = await api.gql(`{ ${'health '.repeat(1500)} }`);
    expectRefused(res, /token/i);
    // The same size split across variables-free whitespace is not the point: tokens, not bytes, count.
    const spaced = await api.gql(`{ ${' '.repeat(20_000)}health }`);
    expect(spaced.body).toEqual({ data: { health: 'ok' } });
  });

  test('a query whose cost is far over the limit is refused, while an ordinary page is not', async () => {
    // Every field is allowed and within depth, aliases and tokens; asking for up to a million
    // contacts across a thousand groups is what a cost limit is for.
    const costly = '{ groups(first: 1000) { edges { node { _id name contacts(first: 1000) { edges { node { _id name email phone tags } } } } } } }';
    expectRefused(await api.gql(costly, undefined, auth()), /cost/i);

    const huge = '{ contacts(first: 1000000000) { edges { node { _id groups { _id contacts(first: 1000000) { totalCount } } } } } }';
    expectRefused(await api.gql(huge, undefined, auth()), /cost/i);

    // `first` passed as a variable counts the same as written inline.
    const viaVariables = 'query($n: Int) { groups(first: $n) { edges { node { _id name contacts(first: $n) { edges { node { _id name email phone tags } } } } } } }';
    expectRefused(await api.gql(viaVariables, { n: 1000 }, auth()), /cost/i);
    expect((await api.gql(viaVariables, { n: 10 }, auth())).body.errors).toBeUndefined();

    // A full page of 1,000 contacts with their groups is an ordinary frontend read.
    const fullPage = await api.gql('query($n: Int) { contacts(first: $n) { totalCount edges { cursor node { _id name email phone countryCode tags createdAt updatedAt groups { _id name } } } } }', { n: 1000 }, auth());
    expect(fullPage.body.errors).toBeUndefined();

    const ordinary = await api.gql(
      '{ groups(first: 20) { totalCount edges { node { _id name color contactCount } } } contacts(first: 20) { totalCount edges { node { _id name email phone tags } } } }',
      undefined,
      auth(),
    );
    expect(ordinary.body.errors).toBeUndefined();
    expect(ordinary.body.data.groups.totalCount).toBe(0);
  });
});

describe('transport', () => {
  const getQuery = (query: string, headers: Record<string, string> = {}) =>
    fetch(`${herald.url}/graphql?query=${encodeURIComponent(query)}`, { headers: { authorization: `Bearer ${org.token}`, ...headers } });

  test('a GET without a preflight header is refused as possible CSRF; with one, a query runs', async () => {
    const bare = await getQuery('{ health }');
    expect(bare.status).toBe(400);
    const text = await bare.text();
    expect(text).toMatch(/CSRF|Cross-Site Request Forgery/i);
    expect(text).not.toContain('"health":"ok"');

    const preflighted = await getQuery('{ health }', { 'apollo-require-preflight': 'true' });
    expect(preflighted.status).toBe(200);
    expect(await preflighted.json()).toEqual({ data: { health: 'ok' } });
  });

  test.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'a POST as %s (a form, no preflight) is refused and runs nothing',
    async (type) => {
      const name = `csrf ${randomUUID()}`;
      const query = `mutation { createGroup(input: { name: "${name}", color: "bg-red-500" }) { _id } }`;
      const res = await fetch(`${herald.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': type, authorization: `Bearer ${org.token}` },
        body: JSON.stringify({ query }),
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const groups = await api.get('/groups', auth());
      expect(groups.body.map((g: any) => g.name)).not.toContain(name);
    },
  );

  test('mutations are refused over GET, even with a preflight header', async () => {
    const name = `get ${randomUUID()}`;
    const res = await getQuery(`mutation { createGroup(input: { name: "${name}", color: "bg-red-500" }) { _id } }`, { 'apollo-require-preflight': 'true' });
    expect(res.status).toBe(405);
    const groups = await api.get('/groups', auth());
    expect(groups.body.map((g: any) => g.name)).not.toContain(name);
  });

  test('batched arrays are refused', async () => {
    const res = await post([{ query: '{ health }' }, { query: '{ health }' }]);
    expect(res.status).toBe(400);
    expect(Array.isArray(res.body)).toBe(false);
    expect(JSON.stringify(res.body)).not.toContain('"health":"ok"');

    const single = await post([{ query: '{ health }' }]);
    expect(single.status).toBe(400);
  });

  test('a plain JSON POST works, the way every client sends it', async () => {
    const res = await post({ query: '{ health }' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { health: 'ok' } });
  });
});

describe('errors match REST', () => {
  /** The GraphQL error's extensions carry the REST status and the REST reason phrase as a code. */
  function expectSameAsRest(gql: Reply, rest: Reply) {
    expect(gql.body.errors).toHaveLength(1);
    const [err] = gql.body.errors;
    expect(err.extensions.statusCode).toBe(rest.status);
    expect(err.extensions.code).toBe(rest.body.error.toUpperCase().replace(/[^A-Z]+/g, '_'));
    expect(err.message).toBe(rest.body.message);
    expect(err.extensions).not.toHaveProperty('stacktrace');
  }

  test('an unauthenticated query is the 401 REST answers, and no data leaks', async () => {
    const gql = await api.gql('{ me { _id email } }');
    const rest = await api.get('/users/me');
    expect(rest.status).toBe(401);
    expectSameAsRest(gql, rest);
    expect(gql.body.errors![0].extensions.code).toBe('UNAUTHORIZED');
    expect(gql.body.data ?? null).toBeNull();

    const badToken = { token: 'not-a-jwt' };
    expectSameAsRest(await api.gql('{ contacts { totalCount } }', undefined, badToken), await api.get('/contacts', badToken));
  });

  test('404 for an unknown id and for a malformed one, as REST', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const gql = await api.gql('query ($id: ID!) { group(id: $id) { _id } }', { id }, auth());
      const rest = await api.get(`/groups/${id}`, auth());
      expect(rest.status).toBe(404);
      expectSameAsRest(gql, rest);
      expect(gql.body.errors![0].extensions.code).toBe('NOT_FOUND');
    }
  });

  test('403 for the user role and for another organization, as REST', async () => {
    const member = await addUser(api, org, 'user');
    const gql = await api.gql('mutation { createGroup(input: { name: "nope", color: "bg-red-500" }) { _id } }', undefined, { token: member.token });
    const rest = await api.post('/groups', { name: 'nope', color: 'bg-red-500' }, { token: member.token });
    expect(rest.status).toBe(403);
    expectSameAsRest(gql, rest);

    const other = await signupOrg(api);
    const theirs = await api.post('/groups', { name: 'theirs', color: 'bg-blue-500' }, { token: other.token });
    const gqlOther = await api.gql('query ($id: ID!) { group(id: $id) { _id name } }', { id: theirs.body._id }, auth());
    const restOther = await api.get(`/groups/${theirs.body._id}`, auth());
    expect(restOther.status).toBe(403);
    expectSameAsRest(gqlOther, restOther);
  });

  test('a validation failure is the same 400 with the same details', async () => {
    const input = { name: 'No Address', email: 'not-an-email' };
    const gql = await api.gql('mutation ($i: CreateContactInput!) { createContact(input: $i) { _id } }', { i: input }, auth());
    const rest = await api.post('/contacts', input, auth());
    expect(rest.status).toBe(400);
    expectSameAsRest(gql, rest);
    expect(gql.body.errors![0].extensions.details).toEqual(rest.body.details);
  });

  test('GraphQL syntax and schema errors are HTTP 400s with a code', async () => {
    const syntax = await api.gql('{ health ');
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors![0].extensions).toMatchObject({ statusCode: 400, code: 'GRAPHQL_PARSE_FAILED' });
    const unknown = await api.gql('{ nothingHere }');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors![0].extensions).toMatchObject({ statusCode: 400, code: 'GRAPHQL_VALIDATION_FAILED' });
  });
});

describe('introspection outside production', () => {
  test('__schema and __type answer, so the IDE can show the schema', async () => {
    const res = await api.gql('{ __schema { queryType { name } types { name } } __type(name: "Contact") { fields { name } } }');
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__schema.queryType.name).toBe('Query');
    expect(res.body.data.__schema.types.map((t: any) => t.name)).toEqual(expect.arrayContaining(['Contact', 'Group', 'Campaign']));
    expect(res.body.data.__type.fields.map((f: any) => f.name)).toEqual(expect.arrayContaining(['_id', 'name', 'email']));
  });

  test("the IDE's full introspection query fits within every limit", async () => {
    for (const query of [getIntrospectionQuery(), getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, specifiedByUrl: true })]) {
      const res = await api.gql(query);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.__schema.types.length).toBeGreaterThan(10);
    }
  });
});

describe('in production', () => {
  let prod: Herald, prodApi: Client;
  beforeAll(async () => ({ herald: prod, api: prodApi } = await heraldWithClient({ NODE_ENV: 'production', WORKERS: 'false', DELIVERY_MODE: 'sandbox' })));
  afterAll(() => prod?.stop());

  test('ordinary queries still run', async () => {
    expect((await prodApi.gql('{ health }')).body).toEqual({ data: { health: 'ok' } });
  });

  test('introspection is off: __schema and __type are refused', async () => {
    for (const query of ['{ __schema { types { name } } }', '{ __type(name: "Contact") { fields { name } } }', getIntrospectionQuery()]) {
      const res = await prodApi.gql(query);
      expect(res.body.data ?? undefined).toBeUndefined();
      expect(res.body.errors!.length).toBeGreaterThanOrEqual(1);
      expect(res.body.errors![0].extensions.statusCode).toBe(400);
      expect(JSON.stringify(res.body)).not.toMatch(/"Contact"|"fields":\[|"Campaign"/);
    }
  });

  test('near-miss names get no "Did you mean" suggestions, and errors carry no stack', async () => {
    const nearMisses = [
      '{ healt }',
      '{ groups(frist: 1) { totalCount } }',
      'mutation { createGroup(input: { nam: "x", color: "y" }) { _id } }',
      '{ contacts { edgs { node { _id } } } }',
    ];
    const schema = buildSchema();
    for (const query of nearMisses) {
      // Control: the schema itself would suggest a name for each of these.
      expect(validate(schema, parse(query)).map((e) => e.message).join(' ')).toMatch(/Did you mean/);
      const res = await prodApi.gql(query);
      expect(res.body.errors!.length).toBeGreaterThanOrEqual(1);
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/Did you mean/i);
      expect(text).not.toMatch(/"health"|"first"|"name"|"edges"/);
      for (const e of res.body.errors!) {
        expect(e.extensions.statusCode).toBe(400);
        expect(e.extensions).not.toHaveProperty('stacktrace');
      }
    }
  });

  test('resolver errors carry the REST status and code and no stack', async () => {
    const res = await prodApi.gql('{ me { _id } }');
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0].message).toMatch(/^Authentication required: send Authorization: Bearer <token>/);
    expect(res.body.errors![0].extensions).toEqual({ code: 'UNAUTHORIZED', statusCode: 401 });
  });
});
