import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's Suppressions page (Settings → Suppressions), as an admin uses it: an address added
 * by hand (the server's 400 on a bad one, under its field), a CSV of three imported (one line
 * invalid, named in the summary), the list searched, one address removed once confirmed; a member
 * is not offered the page. Screenshots go to CONSOLE_SCREENSHOTS (else herald-console-screenshots in
 * the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;

beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
}, 60_000);
afterAll(() => herald?.stop());

/** The addresses the table shows, top to bottom. */
const listedAddresses = (page: Page) => page.getByRole('table').locator('tbody tr td:first-child').allTextContents();

/** Accepts the next `confirm()` the page shows, keeping its text. */
const acceptNextDialog = (page: Page, seen: string[]) =>
  page.once('dialog', (d) => {
    seen.push(d.message());
    void d.accept();
  });

describeInBrowser('the console’s Suppressions page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin adds an address, imports a CSV, searches the list and removes one', async () => {
    const page = await ui.open(herald.url, org.token, '/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Suppressions' }).click();
    await page.getByRole('heading', { name: 'Suppressions', level: 2 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings/suppressions');
    await page.getByText('No suppressed addresses').waitFor();
    await expectAccessible(page);

    // By hand: a bad address is refused under its field, then a good one is added.
    await page.getByRole('button', { name: 'Add address' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add address' });
    await dialog.getByLabel(/^Email address/).fill('not-an-email@');
    // The browser's own check would stop the form: the server's 400 is what is shown.
    await dialog.locator('form').evaluate((form: any) => form.setAttribute('novalidate', ''));
    await dialog.getByRole('button', { name: 'Add to the list' }).click();
    await dialog.getByText('address must be a valid email').waitFor();
    expect(await dialog.getByLabel(/^Email address/).getAttribute('aria-invalid')).toBe('true');
    await dialog.getByLabel(/^Email address/).fill('Ada.Hand@Example.com');
    await dialog.getByLabel(/^Note/).fill('asked by phone');
    await dialog.getByRole('button', { name: 'Add to the list' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByRole('row', { name: /ada\.hand@example\.com/ });
    await row.getByText('Added by hand').waitFor();
    await row.getByText('asked by phone').waitFor();

    // A CSV of three, one of them not an address.
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await (await chooser).setFiles({
      name: 'bounced.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('email,detail\nbob.csv@example.com,old list\nnot an address,\ncarol.csv@example.org,\n'),
    });
    const summary = page.getByRole('status').filter({ hasText: 'Import finished' });
    await summary.getByText('2 added, 0 already suppressed, 1 invalid.').waitFor();
    await summary.getByText('Line 3: “not an address”').waitFor();
    await page.getByRole('row', { name: /bob\.csv@example\.com/ }).getByText('Imported').waitFor();
    // Newest first; the import's rows share their instant, so their own order is the ids'.
    const shown = await listedAddresses(page);
    expect(shown.slice(0, 2).sort()).toEqual(['bob.csv@example.com', 'carol.csv@example.org']);
    expect(shown[2]).toBe('ada.hand@example.com');
    await page.getByText('3 in all').waitFor();
    await expectAccessible(page);
    await screenshot(page, 'suppressions-list');

    // Searched: only the matching addresses.
    await page.getByRole('search', { name: 'Search suppressions' }).getByLabel(/^Search/).fill('CSV@');
    await page.getByRole('row', { name: /ada\.hand@example\.com/ }).waitFor({ state: 'detached' });
    expect((await listedAddresses(page)).sort()).toEqual(['bob.csv@example.com', 'carol.csv@example.org']);
    await page.getByText('2 in all').waitFor();

    // Removed once confirmed: gone from the page and the API.
    const confirms: string[] = [];
    acceptNextDialog(page, confirms);
    await page.getByRole('button', { name: 'Remove bob.csv@example.com' }).click();
    await page.getByRole('row', { name: /bob\.csv@example\.com/ }).waitFor({ state: 'detached' });
    expect(confirms).toEqual(['Remove bob.csv@example.com from the suppression list? Herald will send email to it again.']);
    expect(((await api.get('/suppressions', { token: org.token })).body as { address: string }[]).map((s) => s.address)).toEqual(['carol.csv@example.org', 'ada.hand@example.com']);
    await expectAccessible(page);
    await screenshot(page, 'suppressions-searched', { fullPage: false });

    const audit = (await api.get('/audit-log?action=suppression.', { token: org.token })).body as { action: string }[];
    expect(audit.map((e) => e.action)).toEqual(['suppression.removed', 'suppression.imported', 'suppression.added']);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('bounces and complaints, added by delivery, read as such', async () => {
    const rows = [
      { address: 'hard.bounce@example.com', reason: 'bounce', bounce_type: 'hard', detail: '550 5.1.1 no such user' },
      { address: 'soft.bounce@example.com', reason: 'bounce', bounce_type: 'soft', detail: '452 4.2.2 mailbox full' },
      { address: 'complained@example.com', reason: 'complaint', bounce_type: null, detail: null },
    ];
    await herald.db('suppressions').insert(rows.map((r) => ({ organization_id: org.orgId, channel: 'email', ...r })));
    const page = await ui.open(herald.url, org.token, '/settings/suppressions');
    await page.getByRole('row', { name: /hard\.bounce@example\.com/ }).getByText('Bounced (hard)').waitFor();
    await page.getByRole('row', { name: /hard\.bounce@example\.com/ }).getByText('550 5.1.1 no such user').waitFor();
    await page.getByRole('row', { name: /soft\.bounce@example\.com/ }).getByText('Bounced (soft)').waitFor();
    await page.getByRole('row', { name: /complained@example\.com/ }).getByText('Complaint').waitFor();
    await expectAccessible(page);
    await screenshot(page, 'suppressions-reasons');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a member is not offered the page, and opening it by URL says it is for admins', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Profile' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Suppressions' }).count()).toBe(0);
    await page.goto(new URL('/settings/suppressions', herald.url).toString());
    await page.getByRole('alert').getByText('Admins only').waitFor();
    expect(await page.getByRole('button', { name: 'Add address' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
