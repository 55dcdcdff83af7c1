import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const haveBrowser = existsSync(CHROMIUM);
const requireBrowser = process.env.REQUIRE_BROWSER === '1';

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

const isLoopback = (url: string) => {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:') return true;
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
};

describe('the IDE page', () => {
  test('a browser asking for /graphql gets the IDE, built from this server’s own files', async () => {
    const res = await fetch(`${herald.url}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toMatch(/graphiql|ruru/i);

    // Every script, stylesheet and preload comes from this server.
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).toMatch(/^\/(?!\/)/);
    expect(html).not.toMatch(/<(script|link)[^>]+(?:src|href)="(?:https?:)?\/\//i);
    for (const ref of refs) {
      const asset = await fetch(new URL(ref, herald.url));
      expect(asset.status).toBe(200);
      await asset.arrayBuffer();
    }

    // Its inline scripts are allowed one by one, not with 'unsafe-inline'.
    const csp = res.headers.get('content-security-policy') ?? '';
    const scriptSrc = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src')) ?? '';
    expect(scriptSrc).toMatch(/'sha256-/);
    expect(scriptSrc).not.toContain("'unsafe-inline'");
    expect(csp).toMatch(/connect-src 'self'/);
  });

  test('API clients asking /graphql for JSON are not given the IDE', async () => {
    const res = await fetch(`${herald.url}/graphql?query=${encodeURIComponent('{ health }')}`, {
      headers: { accept: 'application/json', 'apollo-require-preflight': 'true' },
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/(graphql-response\+)?json/);
    expect(await res.json()).toEqual({ data: { health: 'ok' } });
  });
});

if (!haveBrowser && requireBrowser) {
  test('a browser is available', () => {
    throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing: install it with "apt-get install -y chromium"`);
  });
}

(haveBrowser ? describe : describe.skip)('the IDE in a real browser, offline', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const offHost: string[] = [];
  const securityMessages: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    // A default launch starts from a fresh temporary profile.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    context = await browser.newContext();
    // Only loopback may be reached: anything else is recorded and aborted, as if offline.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (isLoopback(url)) return route.continue();
      offHost.push(url);
      return route.abort('internetdisconnected');
    });
    context.on('request', (request) => {
      if (!isLoopback(request.url())) offHost.push(request.url());
    });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('console', (message) => {
      if (/Content Security Policy|Content-Security-Policy|Refused to (execute|load|apply|connect|create|evaluate)/i.test(message.text())) {
        securityMessages.push(message.text());
      }
    });
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.addInitScript(() => {
      const g = globalThis as unknown as { __cspViolations: string[]; addEventListener: (t: string, f: (e: any) => void) => void };
      g.__cspViolations = [];
      g.addEventListener('securitypolicyviolation', (e) => g.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  /** The text a Monaco editor shows, with its non-breaking spaces made plain. */
  const editorText = (selector: string) =>
    page.locator(selector).first().evaluate((el) => (el as unknown as { textContent: string }).textContent.replace(/\u00a0/g, ' '));

  // GraphiQL's three Monaco editors, told apart by the model each one edits.
  const QUERY_EDITOR = '.monaco-editor[data-uri$="-operation.graphql"]';
  const HEADERS_EDITOR = '.monaco-editor[data-uri$="-request-headers.json"]';
  const RESPONSE_VIEW = '.monaco-editor[data-uri$="-response.json"]';

  /** Replaces the whole content of the Monaco editor `selector`, as a paste would. */
  async function replaceEditorText(selector: string, text: string) {
    await page.locator(`${selector} .view-lines`).click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(text);
  }

  async function run(operationName: string) {
    const response = page.waitForResponse(
      (r) => r.url().endsWith('/graphql') && r.request().method() === 'POST' && (r.request().postData() ?? '').includes(`query ${operationName} `),
    );
    await page.locator('.graphiql-execute-button').click();
    return response;
  }

  test('loads without the network, gets its schema, and runs a query with the caller’s token', async () => {
    const introspection = page.waitForResponse((r) => r.request().method() === 'POST' && (r.request().postData() ?? '').includes('__schema'));
    await page.goto(`${herald.url}/graphql`);
    await page.locator(QUERY_EDITOR).waitFor();

    // The IDE's own introspection query passes every limit, so the schema is available.
    const schema = await (await introspection).json();
    expect(schema.errors).toBeUndefined();
    expect(schema.data.__schema.types.length).toBeGreaterThan(10);

    const query = 'query Mine { me { email role } organization { _id name } }';
    await replaceEditorText(QUERY_EDITOR, query);
    expect((await editorText(QUERY_EDITOR)).replace(/\s+/g, ' ')).toContain('query Mine { me { email role } organization { _id name } }');
    // The IDE has parsed the edit once the tab is named after the new operation.
    await page.locator('.graphiql-tab-active', { hasText: 'Mine' }).waitFor();

    // Without a credential the API says so, in the result pane.
    const anonymous = await run('Mine');
    expect((await anonymous.json()).errors[0].extensions).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' });
    await page.waitForFunction((sel) => (globalThis as any).document.querySelector(sel)?.textContent.includes('UNAUTHORIZED'), RESPONSE_VIEW);

    // The token goes in through the headers editor.
    await page.locator('button[data-name="headers"]').click();
    await page.locator(HEADERS_EDITOR).waitFor();
    await replaceEditorText(HEADERS_EDITOR, JSON.stringify({ Authorization: `Bearer ${org.token}` }));

    const answered = await run('Mine');
    expect(await answered.request().headerValue('authorization')).toBe(`Bearer ${org.token}`);
    expect(answered.status()).toBe(200);

    // The result pane shows the caller's own data.
    await page.waitForFunction(([sel, id]) => (globalThis as any).document.querySelector(sel)?.textContent.includes(id), [RESPONSE_VIEW, org.orgId]);
    const shown = await editorText(RESPONSE_VIEW);
    expect(shown).toContain(org.email);
    expect(shown).toContain(org.orgId);
    expect(shown).toContain('"admin"');
    expect(shown).not.toContain('UNAUTHORIZED');
  }, 60_000);

  test('nothing outside loopback was requested, and nothing broke the page’s security policy', async () => {
    // The test above left the IDE open on this page; an empty page would prove nothing.
    expect(page.url()).toBe(`${herald.url}/graphql`);
    expect(offHost).toEqual([]);
    expect(securityMessages).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { __cspViolations: string[] }).__cspViolations)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
