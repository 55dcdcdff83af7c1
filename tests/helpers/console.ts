/**
 * The console in a real browser (Debian's Chromium through playwright-core), offline: every request
 * off loopback is aborted and recorded. `openConsole` gives a page signed in as `token` (the JWT put
 * in sessionStorage as the console's login would), and `problems()` what went wrong meanwhile:
 * Content-Security-Policy violations, page errors, requests off loopback. `expectAccessible` runs
 * axe-core on the page shown and fails on serious or critical violations.
 *
 *   const ui = await consoleBrowser();            // in beforeAll (skips when there is no browser)
 *   const page = await ui.open(herald.url, org.token, '/groups');
 *   await page.getByRole('button', { name: 'New group' }).click();
 *   await expectAccessible(page);
 *   expect(ui.problems()).toEqual([]);
 *   await ui.close();                              // in afterAll
 */
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const haveBrowser = existsSync(CHROMIUM);

/** `describe` when Chromium is here (CI installs it and sets REQUIRE_BROWSER=1, so it always is there). */
export const describeInBrowser = haveBrowser || process.env.REQUIRE_BROWSER === '1' ? describe : describe.skip;

const isLoopback = (url: string) => {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:') return true;
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
};

export interface ConsoleBrowser {
  browser: Browser;
  /**
   * A new signed-in page (own context: own sessionStorage) at `path`, or signed out without a token;
   * `timezoneId` sets the browser's time zone (the machine's by default).
   */
  open(baseUrl: string, token: string | null, path?: string, options?: { timezoneId?: string }): Promise<Page>;
  /** CSP violations, page errors and off-loopback requests seen so far, in every page. */
  problems(): string[];
  close(): Promise<void>;
}

export async function consoleBrowser(): Promise<ConsoleBrowser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const problems: string[] = [];
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async open(baseUrl, token, path = '/', options = {}) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
      contexts.push(context);
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (isLoopback(url)) return route.continue();
        problems.push(`off loopback: ${url}`);
        return route.abort('internetdisconnected');
      });
      // Not in a sandboxed frame (an email preview): it has no storage, and the session is the page's.
      if (token) await context.addInitScript((t) => (globalThis as any).top === globalThis && (globalThis as any).sessionStorage.setItem('herald.token', t), token);
      await context.addInitScript(() => {
        (globalThis as any).document.addEventListener('securitypolicyviolation', (e: any) => console.error(`CSP violation: ${e.effectiveDirective} ${e.blockedURI}`));
      });
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      page.on('console', (m) => {
        if (/Content.Security.Policy|CSP violation|Refused to/i.test(m.text())) problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      await page.goto(new URL(path, baseUrl).toString());
      return page;
    },
    problems: () => [...problems],
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close();
    },
  };
}

/** axe-core on the page as shown: no serious or critical violation (WCAG 2 A and AA rules). */
export async function expectAccessible(page: Page): Promise<void> {
  // Run in the page itself (legacy mode): the console has no frames, so there are no frames'
  // results to gather in a new blank page, which is what the default mode opens on every call, with
  // axe injected again (over 3 times slower, the same violations). Only the violations are read:
  // axe need not gather the nodes of every rule that passed.
  const { violations } = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .options({ resultTypes: ['violations'] })
    .setLegacyMode(true)
    .analyze();
  const bad = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
  expect(bad).toEqual([]);
}

/**
 * A PNG of `page` named `name`, to look at how a page is laid out, in CONSOLE_SCREENSHOTS (else
 * herald-console-screenshots in the temp directory); answers its path. The whole page, or with
 * `fullPage: false` the viewport only (a hovered tooltip stays shown).
 */
export async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<string> {
  const dir = process.env.CONSOLE_SCREENSHOTS ?? path.join(tmpdir(), 'herald-console-screenshots');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}
