import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONSOLE_DIST, consoleBuildProblem, writeConsoleStamp } from '../../src/http/console.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const directives = (csp: string) => new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));

describe('the console is served at / to browsers', () => {
  test('a browser navigation gets the page, with a fresh nonce and a policy without unsafe-inline', async () => {
    const [a, b] = await Promise.all([fetch(`${herald.url}/`, { headers: BROWSER }), fetch(`${herald.url}/`, { headers: BROWSER })]);
    for (const res of [a, b]) {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const [htmlA, htmlB] = [await a.text(), await b.text()];
    expect(htmlA).toContain('<div id="root">');
    expect(htmlA).not.toContain('HERALD_CSP_NONCE');
    const policy = directives(a.headers.get('content-security-policy')!);
    const nonce = /nonce-([^']+)'/.exec(policy.get('script-src')!.join(' '))![1]!;
    expect(htmlA).toContain(`nonce="${nonce}"`);
    expect(htmlB).not.toContain(`nonce="${nonce}"`);
    for (const directive of ['script-src', 'style-src']) {
      expect(policy.get(directive)).toEqual(["'self'", `'nonce-${nonce}'`]);
    }
    expect(policy.get('default-src')).toEqual(["'self'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
  });

  test('its assets come from this server, cached for good; a missing one is 404', async () => {
    const html = await (await fetch(`${herald.url}/`, { headers: BROWSER })).text();
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(1);
    for (const ref of refs) {
      expect(ref).toMatch(/^\/assets\//);
      const asset = await fetch(new URL(ref, herald.url));
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toMatch(/immutable/);
      // Scripts and stylesheets are sent as the build compressed them (fetch asks for gzip).
      expect(asset.headers.get('content-encoding')).toBe('gzip');
      expect(asset.headers.get('content-type')).toMatch(/^text\/(javascript|css)/);
      await asset.arrayBuffer();
    }
    expect((await fetch(`${herald.url}/assets/nothing-here.js`)).status).toBe(404);
  });

  test('a console path is the page for a browser and the API for an API client', async () => {
    const page = await fetch(`${herald.url}/contacts`, { headers: BROWSER });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');

    const json = await api.get('/contacts', { token: org.token });
    expect(json.status).toBe(200);
    expect(Array.isArray(json.body)).toBe(true);
    const anonymous = await fetch(`${herald.url}/contacts`, { headers: { accept: '*/*' } });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { message: string }).message).toMatch(/Authentication required/);
  });

  test('the IDE, the probes and unknown API paths are not taken over by the console', async () => {
    const ide = await (await fetch(`${herald.url}/graphql`, { headers: BROWSER })).text();
    expect(ide).toMatch(/ruru|graphiql/i);
    expect((await fetch(`${herald.url}/health`, { headers: BROWSER })).headers.get('content-type')).toMatch(/json/);
    const unknown = await fetch(`${herald.url}/no-such-path`, { headers: { accept: 'application/json' } });
    expect(unknown.status).toBe(404);
  });
});

describe('the build check of npm start', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'herald-console-'));
    mkdirSync(path.join(root, 'web/src'), { recursive: true });
    writeFileSync(path.join(root, 'web/index.html'), '<div id="root"></div>');
    writeFileSync(path.join(root, 'web/vite.config.ts'), 'export default {};');
    writeFileSync(path.join(root, 'web/src/main.tsx'), 'console.log(1);');
    writeFileSync(path.join(root, 'package-lock.json'), '{}');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const build = () => {
    mkdirSync(path.join(root, 'web/dist'), { recursive: true });
    writeFileSync(path.join(root, 'web/dist/index.html'), '<html></html>');
    writeConsoleStamp(root);
  };

  test('a missing build is refused, saying how to build it', () => {
    expect(consoleBuildProblem(root)).toMatch(/not built: run `npm install`/);
  });

  test('a build of the current sources passes; a change of a source, a page or the lock makes it stale', () => {
    build();
    expect(consoleBuildProblem(root)).toBeNull();
    for (const [file, text] of [
      ['web/src/main.tsx', 'console.log(2);'],
      ['web/src/pages/new.tsx', 'export {};'],
      ['package-lock.json', '{"lockfileVersion":3}'],
    ] as const) {
      build();
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), text);
      expect(consoleBuildProblem(root)).toMatch(/stale/);
    }
  });

  test('this checkout’s own build is current (npm install built it)', () => {
    expect(readdirSync(CONSOLE_DIST)).toContain('index.html');
    expect(consoleBuildProblem()).toBeNull();
  });
});
