import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg({ workers: true })), 60_000);
afterAll(() => herald?.stop());

const as = () => ({ token: org.token });

/** Two SMS (one to a number the sandbox fails), an HTML email, and a campaign of one SMS. */
async function sendSome(): Promise<{ campaignId: string }> {
  expect((await api.post('/notifications/send', { type: 'sms', to: ['0712345678', '+254712340000'], message: 'Your parcel is on its way' }, as())).status).toBe(200);
  const email = { type: 'email', to: 'jo@example.com', subject: 'Welcome aboard', message: '<p>Hello <b>Jo</b>,</p><p>Read <a href="https://example.com/start">the guide</a>.</p>' };
  expect((await api.post('/notifications/send', email, as())).status).toBe(200);
  const campaign = await api.post(
    '/campaigns',
    { name: 'Spring sale', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Spring sale today' } }, recipients: { manual: ['0712345699'] } },
    as(),
  );
  expect(campaign.status).toBe(201);
  expect((await api.post(`/campaigns/${campaign.body._id}/launch`, {}, as())).status).toBe(200);
  return { campaignId: campaign.body._id };
}

describeInBrowser('the console’s message logs and sandbox outbox', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('empty: the logs and the outbox say what to do', async () => {
    const logs = await ui.open(herald.url, org.token, '/message-logs');
    await logs.getByText('No messages sent yet').waitFor();
    await logs.getByRole('link', { name: 'Send a message' }).waitFor();
    await expectAccessible(logs);

    const outbox = await ui.open(herald.url, org.token, '/outbox');
    await outbox.getByText('The outbox is empty').waitFor();
    await expectAccessible(outbox);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the logs list the sends, filter by channel and campaign; a log shows its recipients and events', async () => {
    const { campaignId } = await sendSome();
    const page = await ui.open(herald.url, org.token, '/message-logs');
    const logLinks = page.getByRole('link', { name: / log of / });
    await page.getByRole('link', { name: /^Email log of/ }).waitFor();
    expect(await logLinks.count()).toBe(3);
    await page.getByText('3 in all').waitFor();
    await expectAccessible(page);

    // By channel: the URL keeps the filter, the list follows it.
    await page.getByLabel('Channel').selectOption('email');
    await page.getByText('1 in all').waitFor();
    expect(await logLinks.count()).toBe(1);
    expect(new URL(page.url()).searchParams.get('channel')).toBe('email');
    await page.getByLabel('Channel').selectOption('sms');
    await page.getByText('2 in all').waitFor();

    // By recipient status.
    await page.getByLabel('Recipient status').selectOption('failed');
    await page.getByText('1 in all').waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).first().click();
    await page.getByText('3 in all').waitFor();

    // A bad date range: the server's message on the field it names.
    await page.getByLabel('Sent from').fill('2030-01-02');
    await page.getByLabel('Sent until').fill('2030-01-01');
    const until = page.getByLabel('Sent until');
    await page.locator('input[aria-invalid="true"]').waitFor();
    expect(await until.getAttribute('aria-invalid')).toBe('true');
    await page.getByText('dateTo must not be before dateFrom').waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).first().click();

    // The campaign page's link: `?campaign=<id>` shows that campaign's logs, and names it.
    const byCampaign = await ui.open(herald.url, org.token, `/message-logs?campaign=${campaignId}`);
    await byCampaign.getByRole('link', { name: 'Spring sale' }).waitFor();
    await byCampaign.getByText('1 in all').waitFor();
    await byCampaign.getByRole('button', { name: 'Show every campaign' }).click();
    await byCampaign.getByText('3 in all').waitFor();
    await expectAccessible(byCampaign);

    // The SMS log of the ad hoc send: each recipient with its status; the sandbox's receipt as an event.
    const logs = (await api.get('/message-logs?channel=sms', as())).body as any[];
    const adHoc = logs.find((l) => !l.campaignId);
    await page.goto(new URL('/message-logs?channel=sms', herald.url).toString());
    await page.getByRole('link', { name: /^SMS log of/ }).last().click();
    await page.waitForURL(`**/message-logs/${adHoc._id}`);
    const rows = page.getByRole('region', { name: /Recipients/ }).getByRole('row');
    await rows.filter({ hasText: '+254712345678' }).getByText('Sent').waitFor();
    await rows.filter({ hasText: '+254712340000' }).getByText('Failed').waitFor();
    await page.getByText('Sandbox: delivery to a reserved failing address').waitFor();
    const events = page.getByRole('region', { name: 'Events' });
    await events.getByRole('cell', { name: 'Delivered' }).first().waitFor();
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the logs of one recipient: typed as a person writes it, only its logs; not an address: the server’s message on the field', async () => {
    const page = await ui.open(herald.url, org.token, '/message-logs');
    await page.getByText('3 in all').waitFor();
    const recipient = page.getByLabel('Recipient', { exact: true });
    const logLinks = page.getByRole('link', { name: / log of / });

    // The campaign's number, in the national format: its log only, and the URL keeps it.
    await recipient.fill('0712 345 699');
    await recipient.press('Enter');
    await page.getByText('1 in all').waitFor();
    expect(await logLinks.count()).toBe(1);
    await page.getByRole('link', { name: 'Open campaign' }).waitFor();
    expect(new URL(page.url()).searchParams.get('recipient')).toBe('0712 345 699');
    await expectAccessible(page);

    // An email address in capitals, with the button; then with another filter that excludes it.
    await recipient.fill('JO@EXAMPLE.COM');
    await page.getByRole('button', { name: 'Filter by recipient' }).click();
    await page.getByRole('link', { name: /^Email log of/ }).waitFor();
    await page.getByText('1 in all').waitFor();
    expect(await logLinks.count()).toBe(1);
    await page.getByLabel('Channel').selectOption('sms');
    await page.getByText('No message logs match these filters').waitFor();
    await page.getByLabel('Channel').selectOption('');

    // A failed recipient's log is found too.
    await recipient.fill('+254712340000');
    await recipient.press('Enter');
    await page.getByRole('link', { name: /^SMS log of/ }).waitFor();
    await page.getByText('1 in all').waitFor();

    // Not an address: the server's message on the field.
    await recipient.fill('not a number');
    await recipient.press('Enter');
    await page.getByText('recipient must be a valid email address or phone number').waitFor();
    expect(await recipient.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page);

    // Clearing the filters empties the field and lists every log again.
    await page.getByRole('button', { name: 'Clear filters' }).first().click();
    await page.getByText('3 in all').waitFor();
    expect(await recipient.inputValue()).toBe('');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('an email log shows an open simulated in the sandbox', async () => {
    const [log] = (await api.get('/message-logs?channel=email', as())).body as any[];
    expect((await api.post('/sandbox/events', { logId: log._id, recipient: 'jo@example.com', type: 'open' }, as())).status).toBe(200);
    const page = await ui.open(herald.url, org.token, `/message-logs/${log._id}`);
    await page.getByRole('heading', { name: /^Email log of/ }).waitFor();
    await page.getByRole('region', { name: 'Events' }).getByRole('cell', { name: 'Opened' }).waitFor();
    await page.getByRole('region', { name: 'Events' }).getByRole('cell', { name: 'jo@example.com' }).waitFor();
    await expectAccessible(page);

    const unknown = await ui.open(herald.url, org.token, '/message-logs/00000000-0000-4000-8000-000000000000');
    await unknown.getByRole('alert').waitFor();
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the outbox lists the captured messages, newest first; an email shows as text', async () => {
    const page = await ui.open(herald.url, org.token, '/outbox');
    await page.getByRole('button', { name: 'View message to jo@example.com' }).waitFor();
    await page.getByText('4 in all').waitFor();
    // Newest first: the campaign's SMS, the email, then the first send's two (the last of a call first).
    const recipients = await page.locator('tbody tr td:nth-child(3)').allTextContents();
    expect(recipients).toEqual(['+254712345699', 'jo@example.com', '+254712340000', '+254712345678']);
    await expectAccessible(page);

    await page.getByLabel('Channel').selectOption('email');
    await page.getByText('1 in all').waitFor();
    await page.getByRole('button', { name: 'View message to jo@example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Email to jo@example.com' });
    await dialog.getByText('Welcome aboard').waitFor();
    // The HTML as its text: no markup, the link's address (the tracking link) kept.
    const body = dialog.locator('pre');
    await body.getByText(/Hello Jo,/).waitFor();
    expect(await body.textContent()).not.toContain('<');
    expect(await body.textContent()).toMatch(/Read the guide \(http:\/\/[^)]+\)\./);
    await expectAccessible(page);
    await dialog.getByText('HTML source').click();
    expect(await body.textContent()).toContain('<b>Jo</b>');
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();

    // By recipient: the server normalises the number as sends store it.
    await page.getByLabel('Channel').selectOption('');
    await page.getByLabel(/^Recipient/).fill('0712340000');
    await page.getByLabel(/^Recipient/).press('Enter');
    await page.getByText('1 in all').waitFor();
    await page.getByRole('cell', { name: 'Failed' }).waitFor();
    await page.getByLabel(/^Recipient/).fill('0799999999');
    await page.getByRole('button', { name: 'Filter by recipient' }).click();
    await page.getByText('No captured messages match these filters').waitFor();
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
