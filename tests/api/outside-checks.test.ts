import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { trackingToken } from '../../src/delivery/tracking-tokens.js';
import { createApp } from '../../src/http/app.js';
import type { Herald } from '../../src/server.js';
import { makeContact } from '../helpers/contacts-groups.js';
import { addUser, heraldWithOrg, signupOrg, TEST_JWT_SECRET, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

// Defects reported from outside: a forged open pixel, the SMS report URL shown to users, import line
// numbers after a CRLF, re-imported exports duplicating phone-only contacts, and public paths missing
// from /openapi.json.
let herald: Herald, api: Client, org: Org, admin: Credential;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true }));
  admin = { token: org.token };
});
afterAll(() => herald?.stop());

/** Imports CSV text as a `text/csv` body and waits for the import to end. */
async function imported(cred: Credential, csv: string) {
  const res = await api.raw('POST', '/contacts/import', csv, cred, { 'content-type': 'text/csv' });
  expect(res.status).toBe(202);
  const done = await waitFor(
    () => api.get(`/contact-imports/${res.body._id}`, cred),
    (r) => ['completed', 'failed', 'canceled'].includes(r.body.status),
  );
  return done.body;
}

describe('the open pixel (GET /t/o/:token)', () => {
  const ref = { orgId: '00000000-0000-4000-8000-000000000001', logId: '00000000-0000-4000-8000-000000000002', position: 1 };

  test('a forged or altered token is 404, as for a tracked link; a signed one gets the pixel', async () => {
    const open = trackingToken(TEST_JWT_SECRET, ref)!;
    const ok = await fetch(`${herald.url}/t/o/${open}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/gif');
    expect((await ok.arrayBuffer()).byteLength).toBe(43);

    const last = open.at(-3)!;
    const altered = `${open.slice(0, -3)}${last === 'A' ? 'B' : 'A'}${open.slice(-2)}`;
    const click = trackingToken(TEST_JWT_SECRET, ref, 'https://shop.example/')!;
    const foreign = trackingToken('another secret of enough length for a test', ref)!;
    for (const token of [altered, `${open}x`, open.slice(0, -4), 'x'.repeat(40), 'not-a-token', click, foreign]) {
      const res = await fetch(`${herald.url}/t/o/${token}`);
      expect({ token, status: res.status, type: res.headers.get('content-type') }).toEqual({ token, status: 404, type: expect.stringMatching(/^application\/json/) });
      expect(await res.json()).toEqual({ statusCode: 404, message: 'This link is not valid', error: 'Not Found' });
    }
  });
});

describe('the SMS delivery-report URL is for admins only', () => {
  const Q = `{ organization { credentials { sms_reportUrl whatsapp_webhookUrl } } }`;

  test('REST and GraphQL: an admin gets it, a user-role member gets null', async () => {
    const member = await addUser(api, org, 'user');
    const adminView = (await api.get('/organizations/current', admin)).body.credentials;
    expect(adminView.sms_reportUrl).toMatch(new RegExp(`/webhooks/sms/${org.orgId}/[A-Za-z0-9_-]{32}$`));
    const userView = await api.get('/organizations/current', { token: member.token });
    expect(userView.status).toBe(200);
    expect(userView.body.credentials.sms_reportUrl).toBeNull();
    expect(JSON.stringify(userView.body)).not.toContain('/webhooks/sms/');
    // What is not a secret stays visible to every member.
    expect(userView.body.credentials.whatsapp_webhookUrl).toBe(adminView.whatsapp_webhookUrl);

    const gqlAdmin = await api.gql(Q, undefined, admin);
    expect(gqlAdmin.body.errors).toBeUndefined();
    expect(gqlAdmin.body.data.organization.credentials.sms_reportUrl).toBe(adminView.sms_reportUrl);
    const gqlUser = await api.gql(Q, undefined, { token: member.token });
    expect(gqlUser.body.errors).toBeUndefined();
    expect(gqlUser.body.data.organization.credentials).toEqual({ sms_reportUrl: null, whatsapp_webhookUrl: adminView.whatsapp_webhookUrl });
  });
});

describe('import row errors name the line the row starts on', () => {
  const file = (eol: string) =>
    [`name,email,notes`, `Quoted,crlf.a@example.com,"first${eol}second"`, `Broken,not-an-email,x`, `Later,"crlf.b@example.com","one${eol}two${eol}three"`, `Also broken,nope,y`, ''].join(eol);

  test.each([
    ['CRLF', '\r\n'],
    ['LF', '\n'],
  ])('%s: after quoted fields holding line breaks', async (_label, eol) => {
    const done = await imported(admin, file(eol).replace(/crlf\./g, `${eol === '\n' ? 'lf' : 'crlf'}.`));
    expect(done.status).toBe('completed');
    // Header 1; the quoted row 2-3; the broken one 4; the next quoted 5-7; the last 8.
    expect(done.errors).toEqual([
      { line: 4, column: 'email', message: 'email must be a valid email' },
      { line: 8, column: 'email', message: 'email must be a valid email' },
    ]);
  });
});

describe('an exported file imports again unchanged, whatever a contact has', () => {
  /** Every contact of a fresh organization, without what a write moves (its time). */
  const everything = async (cred: Credential) =>
    ((await api.get('/contacts?limit=1000', cred)).body as any[]).map(({ updatedAt: _u, ...rest }) => rest).sort((a, b) => a._id.localeCompare(b._id));

  test('email only, phone only, and both: re-imported into the same organization, nothing is created or changed', async () => {
    const other = await signupOrg(api);
    const cred = { token: other.token };
    await makeContact(api, cred, { name: 'Email Only', email: 'only.email@example.com' });
    await makeContact(api, cred, { name: 'Phone Only', email: undefined, phone: '+254712000101' });
    await makeContact(api, cred, { name: 'Both', email: 'both@example.com', phone: '+254712000102', tags: ['t'] });
    // The same phone in another organization must not be matched: tenancy holds on the phone too.
    await makeContact(api, admin, { name: 'Elsewhere', email: undefined, phone: '+254712000101' });
    const before = await everything(cred);
    expect(before.map((c) => [c.email, c.phone])).toEqual(
      expect.arrayContaining([
        ['only.email@example.com', null],
        [null, '+254712000101'],
        ['both@example.com', '+254712000102'],
      ]),
    );

    const exported = await api.get('/contacts/export', cred);
    expect(exported.status).toBe(200);
    const file = exported.body as string;
    expect((parse(file, { columns: true }) as Record<string, string>[]).length).toBe(3);
    const done = await imported(cred, file);
    expect(done).toMatchObject({ status: 'completed', created: 0, failed: 0 });
    expect(await everything(cred)).toEqual(before);
    // The other organization's contact with that phone is untouched, and still alone there.
    expect(((await api.get('/contacts?limit=1000&search=Elsewhere', admin)).body as any[]).length).toBe(1);
  });
});

describe('/openapi.json describes every REST path Herald serves', () => {
  /** Every route of an express app: its path and methods, routers walked into (all mounted at `/`). */
  function routesOf(stack: any[]): { path: string; method: string }[] {
    return stack.flatMap((layer: any) => {
      if (layer.route) {
        const paths: string[] = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        // `all` (every method: the 405s naming the others) serves nothing of its own.
        const methods = Object.keys(layer.route.methods).filter((m) => SERVING.includes(m));
        if (methods.length === SERVING.length) return [];
        return paths.flatMap((path) => methods.map((method) => ({ path, method })));
      }
      return Array.isArray(layer.handle?.stack) ? routesOf(layer.handle.stack) : [];
    });
  }
  const SERVING = ['get', 'post', 'put', 'patch', 'delete'];
  /** Not REST: GraphQL (its own schema and IDE), the reference page and its assets, the metrics scrape. */
  const NOT_REST = /^\/(graphql|docs|metrics)(\/|$)/;

  test('each path and method of the express app, public ones included, is in the document', async () => {
    const { app, close } = await createApp({ ...herald.deps, config: { ...herald.deps.config, metricsToken: 'a-token-so-that-metrics-is-mounted' } });
    try {
      const served = routesOf((app as any).router.stack).filter((r) => !NOT_REST.test(r.path));
      const document = (await api.get('/openapi.json')).body;
      const described = new Set(
        Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${path}`)),
      );
      const missing = served.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`).filter((key) => !described.has(key));
      expect(missing).toEqual([]);
      // The ones found missing from outside, named.
      for (const key of [
        'get /',
        'get /health',
        'get /ready',
        'get /u/{token}',
        'post /u/{token}',
        'get /t/o/{token}',
        'get /t/c/{token}',
        'get /webhooks/whatsapp/{orgId}',
        'post /webhooks/whatsapp/{orgId}',
        'post /webhooks/sms/{orgId}/{token}',
      ]) {
        expect({ key, described: described.has(key) }).toEqual({ key, described: true });
      }
      expect(served.length).toBeGreaterThan(50);
    } finally {
      await close();
    }
  });

  test('the document is valid OpenAPI 3.1', async () => {
    const document = (await api.get('/openapi.json')).body;
    // In a process of its own: swagger-parser's ESM dependencies do not load under jest's VM modules.
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'herald-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const script = `require('@apidevtools/swagger-parser').validate(process.argv[1]).then((api) => console.log('valid', api.openapi), (e) => { console.error(e.message); process.exit(1); })`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, file], { env: { ...process.env, NODE_OPTIONS: '' } });
    expect(stdout.trim()).toBe('valid 3.1.0');
  });

  test('the public answers conform to it (the client checks each against the document)', async () => {
    expect((await api.get('/health')).status).toBe(200);
    expect((await api.get('/ready')).status).toBe(200);
    expect((await api.get('/openapi.json')).status).toBe(200);
    expect((await api.post('/health')).status).toBe(405);
    expect((await api.get('/t/o/not-a-token')).status).toBe(404);
    expect((await api.get('/t/c/not-a-token')).status).toBe(404);
    expect((await api.get('/u/not-a-token')).status).toBe(404);
    expect((await api.raw('POST', `/webhooks/sms/${org.orgId}/not-the-token`, '{}')).status).toBe(404);
    expect((await api.raw('POST', `/webhooks/whatsapp/${org.orgId}`, '{}')).status).toBe(401);
    expect((await api.get(`/webhooks/whatsapp/${org.orgId}?hub.mode=subscribe`)).status).toBe(403);
  });
});
