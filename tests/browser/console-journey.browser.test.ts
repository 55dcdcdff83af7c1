import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithClient, type Client } from '../helpers/herald.js';
import { waitFor } from '../helpers/time.js';

/**
 * A new user's first session in the console, end to end, through the controls' names only: sign up,
 * a group and two contacts, a personalised campaign previewed, launched and watched live until it
 * completes (sent by the workers, carried by the `campaignProgress` subscription), its analytics and
 * a recipient's receipts in the logs, an API key shown once and copied, and logging out.
 */
let herald: Herald, api: Client;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api } = await heraldWithClient({ WORKERS: 'true', CAMPAIGN_INLINE_LIMIT: '0' })), 60_000);
afterAll(() => herald?.stop());

describeInBrowser('a new user’s first session in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('sign up, contacts, a live campaign, its analytics and receipts, an API key, log out', async () => {
    const page = await ui.open(herald.url, null, '/');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: herald.url });
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));

    // Signed out, the console is the login page; a new user follows the link to sign up.
    await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    await expectAccessible(page);
    await page.getByRole('link', { name: 'Create an organization' }).click();
    const email = `journey.${Date.now()}@example.com`;
    for (const [label, value] of [
      [/^First name/, 'Ada'],
      [/^Last name/, 'Lovelace'],
      [/^Email/, email],
      [/^Organization name/, 'Analytical Engines'],
      [/^Sector/, 'Technology'],
      [/^Country \*/, 'Kenya'],
      [/^Phone country code/, '+254'],
      [/^Phone number/, '712345678'],
      [/^Password/, 'correct horse battery'],
    ] as const) {
      await page.getByLabel(label).fill(value);
    }
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByText('Analytical Engines').waitFor();
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('herald.token'))).toMatch(/^ey/);
    expect(page.url()).not.toContain('ey'); // never in a URL
    const login = await api.post('/auth/login', { email, password: 'correct horse battery' });
    const token = login.body.token as string;

    // A group, and two contacts in it.
    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('button', { name: 'New group' }).first().click();
    await page.getByLabel(/^Name/).fill('Early adopters');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('link', { name: 'Early adopters' }).waitFor();
    await page.getByRole('link', { name: 'Contacts', exact: true }).click();
    for (const [name, phone] of [
      ['Grace Hopper', '0711000001'],
      ['Alan Turing', '0711000002'],
    ]) {
      await page.getByRole('button', { name: 'New contact' }).first().click();
      await page.getByLabel(/^Name/).fill(name);
      await page.getByRole('textbox', { name: /^Phone/ }).fill(phone);
      await page.getByRole('combobox', { name: 'Groups' }).click();
      await page.getByRole('option', { name: 'Early adopters' }).click();
      await page.keyboard.press('Escape');
      await page.getByRole('button', { name: 'Create contact' }).click();
      await page.getByRole('link', { name }).waitFor();
    }
    expect((await api.get('/contacts', { token })).body.map((c: any) => c.phone).sort()).toEqual(['+254711000001', '+254711000002']);

    // A personalised campaign, previewed, then launched and followed live to the end.
    await page.getByRole('link', { name: 'Campaigns', exact: true }).click();
    await page.getByRole('link', { name: 'New campaign' }).first().click();
    await page.getByLabel(/^Name/).fill('Welcome');
    await page.getByRole('combobox', { name: 'Groups' }).click();
    await page.getByRole('option', { name: /Early adopters/ }).click();
    await page.keyboard.press('Escape');
    await page.getByLabel(/^SMS text/).fill('Welcome aboard, {{ contact.name }}!');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('heading', { name: 'Welcome' }).waitFor();
    const preview = page.getByLabel('SMS preview');
    await preview.getByText(/^Welcome aboard, (Grace Hopper|Alan Turing)!$/).waitFor();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Launch campaign' }).click();
    await page.getByRole('button', { name: 'Launch now' }).click();
    await page.getByRole('status', { name: 'Campaign status' }).getByText('completed').waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText('2', { exact: true }).waitFor();
    expect(sockets.filter((url) => new URL(url).pathname === '/graphql').length).toBeGreaterThan(0);
    await expectAccessible(page);

    // The campaign's logs, and one recipient's receipts (the sandbox reports deliveries).
    await page.getByRole('link', { name: 'Campaign message logs' }).click();
    await page.getByRole('link', { name: /^SMS log of/ }).first().click();
    const recipients = page.getByRole('region', { name: /Recipients/ });
    await recipients.getByText('+254711000001').waitFor();
    // The sandbox's delivery reports come a moment after the send: once recorded, the page shows them.
    const logId = new URL(page.url()).pathname.split('/').pop()!;
    await waitFor(() => api.get(`/message-logs/${logId}/events`, { token }), (r) => r.body.length > 0, 20_000);
    await page.reload();
    await page.getByRole('region', { name: 'Events' }).getByRole('cell', { name: 'Delivered' }).first().waitFor();
    await expectAccessible(page);

    // An API key, shown once and copied.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'New API key' }).first().click();
    await page.getByLabel(/^Name/).fill('CRM sync');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('will not be shown again').waitFor();
    const key = (await dialog.locator('pre').textContent())!.trim();
    await dialog.getByRole('button', { name: 'Copy key' }).click();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(key);
    await dialog.getByRole('button', { name: 'I have copied it' }).click();
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);

    // Logging out forgets the session: the login page, and a page behind it sends back there.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('herald.token'))).toBeNull();
    await page.goto(new URL('/campaigns', herald.url).toString());
    await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    expect(ui.problems()).toEqual([]);
  }, 120_000);

  test('an expired or revoked session (a 401) sends the user to the login page', async () => {
    const page = await ui.open(herald.url, 'not-a-valid-token', '/contacts');
    await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('herald.token'))).toBeNull();
  }, 60_000);
});
