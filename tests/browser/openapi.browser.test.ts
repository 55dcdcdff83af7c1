import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { PUBLIC_PATHS } from '../../src/http/public-paths.js';
import { routes } from '../../src/http/routes.js';
import type { Herald } from '../../src/server.js';
import { mismatch } from '../helpers/conformance.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * platform.md, "API description and operations": `GET /openapi.json` is a valid OpenAPI 3.1
 * document (checked by an OpenAPI parser nobody on this project wrote) of every path of the REST
 * route table, with the three credentials and the error shape; `/docs` renders it offline in a real
 * browser. (That every answer of the suite conforms to it is checked by the test client itself,
 * `tests/helpers/conformance.ts`.)
 */

const CHROMIUM = '/usr/bin/chromium';
const haveBrowser = existsSync(CHROMIUM);

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

describe('/openapi.json', () => {
  test('is a valid OpenAPI 3.1 document of every route, its credentials and its errors', async () => {
    const res = await fetch(`${herald.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const document = (await res.json()) as any;
    expect(document.openapi).toBe('3.1.0');
    // Validated by swagger-parser, in a process of its own (its ESM dependencies do not load under jest's VM modules).
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'herald-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const script = `require('@apidevtools/swagger-parser').validate(process.argv[1]).then((api) => console.log('valid', api.openapi), (e) => { console.error(e.message); process.exit(1); })`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, file], { env: { ...process.env, NODE_OPTIONS: '' } });
    expect(stdout.trim()).toBe('valid 3.1.0');

    const described = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item as object).map((m) => `${m} ${path}`));
    const served = [...routes, ...PUBLIC_PATHS].map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(described.sort()).toEqual(served.sort());
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['apiKeyHeader', 'apiKeyQuery', 'bearerAuth']);
    expect(document.servers).toEqual([{ url: herald.deps.config.publicUrl }]);

    // Who may call: a public route takes no credential, an admin-only one without keys takes a JWT only.
    expect(document.paths['/auth/login'].post.security).toEqual([]);
    expect(document.paths['/api-keys'].post.security).toEqual([{ bearerAuth: [] }]);
    expect(document.paths['/contacts'].get.security).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }]);
    // A body from the operation's zod schema; a list's filters and paging in the query, its headers.
    const contactBody = document.paths['/contacts'].post.requestBody.content['application/json'].schema;
    expect(contactBody.properties.name).toMatchObject({ type: 'string' });
    expect(contactBody.required).toContain('name');
    const listParameters = document.paths['/message-logs'].get.parameters.map((p: any) => p.name);
    expect(listParameters).toEqual(expect.arrayContaining(['channel', 'status', 'dateFrom', 'dateTo', 'campaignId', 'recipient', 'limit', 'cursor']));
    expect(Object.keys(document.paths['/message-logs'].get.responses['200'].headers)).toEqual(['X-Total-Count', 'Link']);
    // The upload and the download.
    expect(Object.keys(document.paths['/contacts/import'].post.requestBody.content)).toEqual(['text/csv', 'multipart/form-data']);
    expect(Object.keys(document.paths['/contacts/export'].get.responses['200'].content)).toEqual(['text/csv']);
    // Errors in the one shape.
    expect(document.paths['/contacts/{id}'].get.responses['404']).toEqual({ $ref: '#/components/responses/E404' });
    expect(document.components.schemas.Error.required).toEqual(['statusCode', 'message', 'error']);
  });

  test('the conformance check refuses what the document does not describe', async () => {
    const headers = new Headers({ 'content-type': 'application/json' });
    expect(mismatch('GET', '/contacts/x', 404, headers, { statusCode: 404, message: 'Resource not found', error: 'Not Found' })).toBeNull();
    expect(mismatch('GET', '/contacts/x', 404, headers, { message: 'no shape' })).toMatch(/must have required property 'statusCode'/);
    expect(mismatch('GET', '/contacts', 402, headers, { statusCode: 402, message: 'x', error: 'Payment Required' })).toMatch(/status 402 is not described/);
    expect(mismatch('GET', '/contacts', 200, new Headers({ 'content-type': 'application/json' }), [])).toMatch(/no X-Total-Count/);
    // And a real answer passes it (the client checks every one).
    expect((await api.get('/contacts', { token: org.token })).status).toBe(200);
  });
});

(haveBrowser ? describe : describe.skip)('/docs in a real browser, offline', () => {
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
    context = await browser.newContext();
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  test('renders every operation from this server alone, within its Content-Security-Policy', async () => {
    const offHost: string[] = [];
    await context.route('**/*', (route) => {
      const { hostname, protocol } = new URL(route.request().url());
      if (protocol === 'data:' || hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
      offHost.push(route.request().url());
      return route.abort('internetdisconnected');
    });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    const res = await page.goto(`${herald.url}/docs`);
    expect(res!.headers()['content-security-policy']).toMatch(/script-src 'self'(;|$)/);
    await page.getByRole('heading', { name: /Herald/ }).first().waitFor({ timeout: 30_000 });
    await page.getByText('/campaigns/{id}/launch').first().waitFor();
    const operations = await page.locator('.opblock').count();
    expect(operations).toBe(routes.length + PUBLIC_PATHS.length);
    expect(offHost).toEqual([]);
    expect(violations).toEqual([]);
  }, 90_000);
});
