import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/** The console's audit log page (Settings, admins only): entries of what an admin did, filtered by action and dates. */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;

beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
}, 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s audit log', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin sees what was done, by whom and from where, and filters it by action and dates', async () => {
    // Something done in the console, and something through the API.
    const page = await ui.open(herald.url, org.token, '/settings/api-keys');
    await page.getByText('No API keys yet').waitFor();
    await page.getByRole('button', { name: 'New API key' }).first().click();
    await page.getByLabel(/^Name/).fill('Billing service');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'I have copied it' }).click();
    await page.getByRole('cell', { name: 'Billing service', exact: true }).waitFor();
    await api.put('/organizations/current', { tracking: false }, { token: org.token });

    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    const table = page.getByRole('table');
    await table.getByRole('cell', { name: 'API key created' }).waitFor();
    await table.getByRole('cell', { name: 'Settings changed' }).waitFor();
    expect(await table.getByRole('cell', { name: org.email }).count()).toBe(2);
    await table.getByText('Billing service').waitFor();
    await table.getByText('tracking: true → false').waitFor();
    await expectAccessible(page);

    // By action: one group of actions, then one action.
    await page.getByLabel('Action').selectOption('organization.');
    await table.getByRole('cell', { name: 'API key created' }).waitFor({ state: 'detached' });
    await table.getByRole('cell', { name: 'Settings changed' }).waitFor();
    expect(new URL(page.url()).searchParams.get('action')).toBe('organization.');
    await page.getByLabel('Action').selectOption('api_key.created');
    await table.getByRole('cell', { name: 'API key created' }).waitFor();
    expect(await table.getByRole('cell', { name: 'Settings changed' }).count()).toBe(0);

    // By dates: nothing before today.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await table.getByRole('cell', { name: 'Settings changed' }).waitFor();
    await page.getByLabel('Until').fill('2020-01-01');
    await page.getByText('No entries match these filters').waitFor();
    const today = new Date().toISOString().slice(0, 10);
    await page.getByLabel('Until').fill(today);
    await page.getByLabel('From').fill(today);
    await page.getByRole('table').getByRole('cell', { name: 'Settings changed' }).waitFor();
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role member has no audit log in the sidebar, and the page by URL says it is for admins', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Profile' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Audit log' }).count()).toBe(0);

    await page.goto(new URL('/settings/audit-log', herald.url).toString());
    await page.getByRole('alert').getByText('Admins only').waitFor();
    expect(await page.getByRole('table').count()).toBe(0);
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
