import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

const as = () => ({ token: org.token });
const credits = async () => (await api.get('/organizations/current', as())).body.credits as number;

/** The cells of the row of `channel` in the table of today's sends: Sent, Failed, Pending, Total. */
async function todayRow(page: import('playwright-core').Page, channel: string): Promise<string[]> {
  const row = page.getByRole('region', { name: 'Sends today by channel and status' }).getByRole('row', { name: new RegExp(`^${channel}\\b`) });
  return row.getByRole('cell').allTextContents();
}

describeInBrowser('the console’s dashboard', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a new organization: its credits, nothing sent today, no campaigns (and what to do)', async () => {
    const page = await ui.open(herald.url, org.token, '/');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByText('Nothing sent today').waitFor();
    await page.getByText('No campaigns yet').waitFor();
    await page.getByRole('main').getByRole('link', { name: 'New campaign' }).waitFor();
    const tile = page.getByRole('main').getByText('Credits', { exact: true }).locator('..');
    await tile.getByText(new Intl.NumberFormat('en-US').format(await credits()), { exact: true }).waitFor();
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('after sends and campaigns: credits, today’s counts by channel and status, the five newest campaigns', async () => {
    expect((await api.post('/notifications/send', { type: 'sms', to: ['0712345678', '0712345679', '+254712340000'], message: 'Hello' }, as())).status).toBe(200);
    expect((await api.post('/notifications/send', { type: 'email', to: 'jo@example.com', subject: 'Hi', message: 'Hello Jo' }, as())).status).toBe(200);
    const names = ['Winter', 'Spring', 'Summer', 'Autumn', 'Harvest', 'New year'];
    const ids: string[] = [];
    for (const name of names) {
      const created = await api.post('/campaigns', { name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: `${name} sale` } } }, as());
      expect(created.status).toBe(201);
      ids.push(created.body._id);
    }
    const left = await credits();

    const page = await ui.open(herald.url, org.token, '/');
    await page.getByRole('region', { name: 'Sends today by channel and status' }).getByRole('table').waitFor();
    expect(await todayRow(page, 'SMS')).toEqual(['2', '1', '0', '3']);
    expect(await todayRow(page, 'Email')).toEqual(['1', '0', '0', '1']);
    expect(await todayRow(page, 'WhatsApp')).toEqual(['0', '0', '0', '0']);
    const main = page.getByRole('main');
    await main.getByText('Sent today').locator('..').getByText('3', { exact: true }).waitFor();
    await main.getByText('Failed today').locator('..').getByText('1', { exact: true }).waitFor();
    await main.getByText('Credits', { exact: true }).locator('..').getByText(new Intl.NumberFormat('en-US').format(left), { exact: true }).waitFor();

    // The five newest, newest first; the oldest is a link away.
    const campaigns = page.getByRole('region', { name: 'Recent campaigns' });
    await campaigns.getByRole('link', { name: 'New year' }).waitFor();
    const listed = await campaigns.getByRole('row').getByRole('link').allTextContents();
    expect(listed).toEqual(['New year', 'Harvest', 'Autumn', 'Summer', 'Spring']);
    await campaigns.getByRole('link', { name: 'All 6 campaigns' }).waitFor();
    await expectAccessible(page);

    await campaigns.getByRole('link', { name: 'Harvest' }).click();
    await page.waitForURL(`**/campaigns/${ids[4]}`);

    // A channel's name leads to its logs of today.
    await page.goto(new URL('/', herald.url).toString());
    await page.getByRole('link', { name: 'SMS', exact: true }).click();
    await page.waitForURL(/\/message-logs\?channel=sms&from=\d{4}-\d{2}-\d{2}$/);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role caller sees the same counts and no admin action', async () => {
    const user = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, user.token, '/');
    await page.getByRole('region', { name: 'Recent campaigns' }).getByRole('link', { name: 'New year' }).waitFor();
    expect(await todayRow(page, 'SMS')).toEqual(['2', '1', '0', '3']);
    expect(await page.getByRole('link', { name: 'New campaign' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
