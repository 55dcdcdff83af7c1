import type { Herald } from '../../src/server.js';
import { bounced, complained } from '../../src/modules/bounces/service.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * Bounces and spam reports in the console: a sandbox campaign's email to two addresses, one bounced
 * and one reported as spam, recorded as Herald records what its SMTP listener takes (the bounces
 * service, so no mail server is needed); the campaign page counts them, the log page shows each
 * recipient's bounce and report, and the webhook form offers their event types. Screenshots go to
 * CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let campaignId: string, logId: string, smsCampaignId: string;

const as = () => ({ token: org.token });

/** A broadcast to `to` on `channel`, launched (sent inline: the sandbox settles it at once); answers its id. */
async function launched(name: string, channel: 'email' | 'sms', to: string[]): Promise<string> {
  const messages = channel === 'email' ? { email: { subject: name, content: '<p>Our autumn news</p>' } } : { sms: { content: name } };
  const created = await api.post('/campaigns', { name, type: 'broadcast', channels: [channel], messages, recipients: { manual: to } }, as());
  expect(created.status).toBe(201);
  const launch = await api.post(`/campaigns/${created.body._id}/launch`, {}, as());
  expect(launch.body).toMatchObject({ status: 'completed' });
  return created.body._id;
}

beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  campaignId = await launched('Autumn news', 'email', ['gone@example.com', 'annoyed@example.com']);
  smsCampaignId = await launched('Autumn SMS', 'sms', ['0712345678']);

  const [log] = (await api.get(`/message-logs?campaignId=${campaignId}`, as())).body as { _id: string; recipients: { recipient: string }[] }[];
  logId = log._id;
  const position = (address: string) => log.recipients.findIndex((r) => r.recipient === address) + 1;
  const at = new Date();
  expect(await bounced(herald.db, herald.deps.config, org.orgId, { logId, position: position('gone@example.com') }, { type: 'hard', reason: '550 5.1.1 user unknown', at })).toBe('changed');
  expect(await complained(herald.db, org.orgId, { logId, position: position('annoyed@example.com') }, { feedbackType: 'abuse', at })).toBe('changed');
  expect((await api.get(`/campaigns/${campaignId}`, as())).body.analytics).toMatchObject({ sent: 2, bounced: 1, complained: 1 });
}, 60_000);
afterAll(() => herald?.stop());

describeInBrowser('bounces and spam reports in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('the campaign page counts the bounce and the spam report, and says where suppressed addresses are', async () => {
    const page = await ui.open(herald.url, org.token, `/campaigns/${campaignId}`);
    await page.getByRole('heading', { name: 'Autumn news' }).waitFor();
    const bounce = page.getByRole('group', { name: 'Bounced' });
    const complaint = page.getByRole('group', { name: 'Complained' });
    await bounce.getByText('1', { exact: true }).waitFor();
    await bounce.getByText(/50% of sent/).waitFor();
    await complaint.getByText('1', { exact: true }).waitFor();
    await complaint.getByText(/50% of sent/).waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText('2', { exact: true }).waitFor();
    await page.getByRole('link', { name: 'Suppressions' }).last().click();
    await page.waitForURL('**/settings/suppressions');
    // The hard bounce and the spam report suppressed both addresses.
    await page.getByRole('row', { name: /gone@example\.com/ }).waitFor();
    await page.getByRole('row', { name: /annoyed@example\.com/ }).waitFor();

    await page.goto(new URL(`/campaigns/${campaignId}`, herald.url).toString());
    await page.getByRole('group', { name: 'Bounced' }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'bounces-campaign');

    // A member reads the same counters; the settings are not theirs, so no link.
    const member = await addUser(api, org, 'user');
    const asMember = await ui.open(herald.url, member.token, `/campaigns/${campaignId}`);
    await asMember.getByRole('group', { name: 'Complained' }).getByText('1', { exact: true }).waitFor();
    await asMember.getByText(/unsubscribes from email whoever reports spam\.$/).waitFor();
    expect(await asMember.getByRole('link', { name: 'Suppressions' }).count()).toBe(0);

    // An SMS campaign neither bounces nor draws spam reports.
    const sms = await ui.open(herald.url, org.token, `/campaigns/${smsCampaignId}`);
    await sms.getByRole('group', { name: 'Sent' }).getByText('1', { exact: true }).waitFor();
    expect(await sms.getByRole('group', { name: 'Bounced' }).count()).toBe(0);
    expect(await sms.getByRole('group', { name: 'Complained' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the log page shows the recipient’s bounce with its reason, and the other’s spam report', async () => {
    const page = await ui.open(herald.url, org.token, `/message-logs/${logId}`);
    await page.getByRole('heading', { name: /^Email log of/ }).waitFor();
    const recipients = page.getByRole('region', { name: /Recipients/ });
    await recipients.getByRole('columnheader', { name: 'Bounced' }).waitFor();
    await recipients.getByRole('columnheader', { name: 'Reported as spam' }).waitFor();

    const headers = await recipients.getByRole('columnheader').allTextContents();
    const cell = async (address: string, column: string) =>
      (await recipients.getByRole('row', { name: new RegExp(address.replace(/\./g, '\\.')) }).getByRole('cell').nth(headers.indexOf(column)).textContent())?.trim();
    expect(await cell('gone@example.com', 'Bounced')).toMatch(/\(hard\)550 5\.1\.1 user unknown$/);
    expect(await cell('gone@example.com', 'Reported as spam')).toBe('—');
    expect(await cell('annoyed@example.com', 'Bounced')).toBe('—');
    expect(await cell('annoyed@example.com', 'Reported as spam')).toMatch(/\d/);

    const events = page.getByRole('region', { name: 'Events' });
    const bounceEvent = events.getByRole('row', { name: /Bounced/ });
    await bounceEvent.getByRole('cell', { name: 'gone@example.com' }).waitFor();
    await bounceEvent.getByRole('cell', { name: 'hard bounce; 550 5.1.1 user unknown' }).waitFor();
    const spamEvent = events.getByRole('row', { name: /Reported as spam/ });
    await spamEvent.getByRole('cell', { name: 'annoyed@example.com' }).waitFor();
    await spamEvent.getByRole('cell', { name: 'feedback type: abuse' }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'bounces-log');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a webhook endpoint can take the bounce and spam report events', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/webhooks');
    await page.getByRole('button', { name: 'New endpoint' }).first().click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('checkbox', { name: /^message\.bounced/ }).waitFor();
    await dialog.getByText('A recipient’s email bounced, hard or soft').waitFor();
    await dialog.getByRole('checkbox', { name: /^message\.complained/ }).waitFor();
    await dialog.getByText('A recipient reported an email as spam').waitFor();
    await expectAccessible(page);
    await screenshot(page, 'bounces-webhook-types', { fullPage: false });
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
