import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's campaign pages: the list, the form (with the server's field errors), and a campaign's
 * page: preview, test send, estimate, launch with live progress over the `campaignProgress`
 * subscription, schedule and cancel. Launches are sent by the Herald's own workers
 * (`CAMPAIGN_INLINE_LIMIT=0`), so the page sees the campaign go from `active` to `completed` live.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let groupId: string;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true, env: { CAMPAIGN_INLINE_LIMIT: '0' } }));
  const cred = { token: org.token };
  const group = await api.post('/groups', { name: 'Nairobi customers', color: 'bg-blue-500' }, cred);
  groupId = group.body._id;
  for (const [name, phone] of [
    ['Ann Wanjiru', '+254711000001'],
    ['Bob Otieno', '+254711000002'],
  ]) {
    const res = await api.post('/contacts', { name, phone, groups: [groupId] }, cred);
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  }
}, 60_000);
afterAll(() => herald?.stop());

/** The message shown under a form control (Mantine links it through `aria-describedby`). */
async function errorOf(page: Page, label: RegExp): Promise<string | null> {
  const control = page.getByLabel(label);
  await page.locator('[aria-invalid="true"]').first().waitFor();
  expect(await control.getAttribute('aria-invalid')).toBe('true');
  const describedBy = (await control.getAttribute('aria-describedby')) ?? '';
  const id = describedBy.split(' ').find((x) => x.endsWith('-error'));
  return page.locator(`[id="${id}"]`).textContent();
}

describeInBrowser('the console’s campaign pages', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a personalised campaign is composed, previewed, test-sent and launched, and completes live', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns');
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.getByText('No campaigns yet').waitFor();
    await expectAccessible(page);

    await page.getByRole('link', { name: 'New campaign' }).first().click();
    await page.getByLabel(/^Name/).fill('Spring sale');
    await page.getByRole('combobox', { name: 'Groups' }).click();
    await page.getByRole('option', { name: /Nairobi customers/ }).click();
    await page.keyboard.press('Escape');
    await page.getByLabel(/^SMS text/).fill('Hello {{ contact.name }}, our spring sale starts today.');
    await page.getByRole('button', { name: 'Create campaign' }).click();

    // The campaign's page: the preview renders the first recipient's name.
    await page.getByRole('heading', { name: 'Spring sale' }).waitFor();
    const preview = page.getByLabel('SMS preview');
    await preview.getByText('Hello Ann Wanjiru, our spring sale starts today.').or(preview.getByText('Hello Bob Otieno, our spring sale starts today.')).waitFor();
    await page.getByText(/^2 recipients/).waitFor();
    const [created] = (await api.get('/campaigns', { token: org.token })).body;
    expect(created).toMatchObject({ name: 'Spring sale', status: 'draft', channels: ['sms'] });
    await expectAccessible(page);

    // Preview for a chosen contact.
    await page.getByRole('combobox', { name: 'Preview for' }).fill('Bob');
    await page.getByRole('option', { name: /Bob Otieno/ }).click();
    await preview.getByText('Hello Bob Otieno, our spring sale starts today.').waitFor();

    // A test send: one result per address, never in the analytics. The address is no contact's,
    // so the card first says that `contact.name` will be empty.
    await page.getByRole('combobox', { name: 'Test recipients' }).fill('+254711000009');
    await page.getByRole('combobox', { name: 'Test recipients' }).press('Enter');
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.getByRole('button', { name: 'Send anyway' }).click();
    await page.getByText('1 sent, 0 failed').waitFor();
    await page.getByRole('link', { name: 'Open log of +254711000009' }).waitFor();

    // Launch: the page follows the campaign live until it completes.
    await page.getByRole('button', { name: 'Launch campaign' }).click();
    await page.getByRole('dialog').getByText(/^2 recipients/).waitFor();
    const launched = page.waitForResponse((r) => r.url().endsWith('/graphql') && (r.request().postData() ?? '').includes('CampaignPageLaunch'));
    await page.getByRole('button', { name: 'Launch now' }).click();
    // A launch answers `active` while the audience is still being sent, or `completed` when it was
    // all sent within the launch (two recipients on a quick machine): the page follows an active
    // campaign live, over the `campaignProgress` subscription, and has nothing to follow otherwise.
    const answered = (await (await launched).json()).data.launchCampaign.status as string;
    expect(['active', 'completed']).toContain(answered);
    await page.getByRole('status', { name: 'Campaign status' }).getByText('completed').waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText('2', { exact: true }).waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText(/100\s?% of attempted/).waitFor();
    expect(sockets.some((url) => url.endsWith('/graphql'))).toBe(answered === 'active');
    const done = (await api.get(`/campaigns/${created._id}`, { token: org.token })).body;
    expect(done.status).toBe('completed');
    expect(done.analytics).toMatchObject({ sent: 2, failed: 0 });
    expect(await page.getByRole('link', { name: 'Campaign message logs' }).getAttribute('href')).toBe(`/message-logs?campaign=${created._id}`);
    await expectAccessible(page);

    // The list shows it.
    await page.getByRole('link', { name: 'Campaigns', exact: true }).click();
    await page.getByRole('link', { name: 'Spring sale' }).waitFor();
    await page.getByRole('row', { name: /Spring sale/ }).getByText('completed').waitFor();
    await page.mouse.move(900, 10); // off the sidebar: a hovered active link is not what is checked here
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a scheduled campaign is canceled', async () => {
    const created = await api.post(
      '/campaigns',
      { name: 'Autumn sale', type: 'targeted', channels: ['sms'], recipients: { groups: [groupId] }, messages: { sms: { content: 'Autumn is here' } } },
      { token: org.token },
    );
    const page = await ui.open(herald.url, org.token, `/campaigns/${created.body._id}`);
    await page.getByRole('button', { name: 'Schedule campaign' }).click();
    const start = new Date(Date.now() + 3 * 86_400_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    await page.getByLabel(/^Start at/).fill(`${start.getFullYear()}-${pad(start.getMonth() + 1)}-${pad(start.getDate())}T09:30`);
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Schedule launch' }).click();
    await page.getByRole('status', { name: 'Campaign status' }).getByText('scheduled').waitFor();
    expect((await api.get(`/campaigns/${created.body._id}`, { token: org.token })).body.status).toBe('scheduled');
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Cancel campaign', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel campaign now' }).click();
    await page.getByRole('status', { name: 'Campaign status' }).getByText('canceled').waitFor();
    expect((await api.get(`/campaigns/${created.body._id}`, { token: org.token })).body.status).toBe('canceled');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await page.getByRole('button', { name: 'Cancel campaign', exact: true }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a Liquid syntax error lands next to the message, with its line and column', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Broken');
    await page.getByLabel(/^SMS text/).fill('Hello\n{{ contact.name');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    expect(await errorOf(page, /^SMS text/)).toMatch(/line 2, column 1/);
    await expectAccessible(page);
    expect((await api.get('/campaigns', { token: org.token })).body.map((c: any) => c.name)).not.toContain('Broken');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role caller sees campaigns and their preview, but no admin action', async () => {
    const draft = await api.post(
      '/campaigns',
      { name: 'Members only', type: 'targeted', channels: ['sms'], recipients: { groups: [groupId] }, messages: { sms: { content: 'Hi {{ contact.firstName }}' } } },
      { token: org.token },
    );
    const user = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, user.token, '/campaigns');
    await page.getByRole('link', { name: 'Members only' }).click();
    await page.getByLabel('SMS preview').getByText(/^Hi (Ann|Bob)$/).waitFor();
    for (const name of ['Edit campaign', 'Schedule campaign', 'Launch campaign', 'Send test']) {
      expect(await page.getByRole('button', { name }).count()).toBe(0);
    }
    expect(await page.getByRole('link', { name: 'Edit campaign' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Campaigns', exact: true }).click();
    await page.getByRole('link', { name: 'Members only' }).waitFor();
    expect(await page.getByRole('link', { name: 'New campaign' }).count()).toBe(0);
    expect((await api.get(`/campaigns/${draft.body._id}`, { token: org.token })).body.status).toBe('draft');
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
