import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, signupOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's smaller parts, as a marketer meets them: the sidebar grouped by task, the sandbox
 * banner, the group form's colour swatches, the campaigns list's analytics, a contact's messages,
 * the send page's cost before sending, and the signed-out pages' `main` landmark. Screenshots go to
 * CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
// Workers settle the sandbox's delivery receipts, which the campaigns list and the contact page show.
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg({ workers: true })), 60_000);
afterAll(() => herald?.stop());

const as = (o: Org = org) => ({ token: o.token });

/** The sidebar's sections, each with the links an admin sees in it, in order. */
const SECTIONS: Record<string, string[]> = {
  Messaging: ['Send', 'Campaigns', 'Templates', 'Sandbox outbox'],
  Audience: ['Contacts', 'Import contacts', 'Groups', 'Suppressions'],
  Insights: ['Message logs', 'Audit log'],
  Settings: ['Team', 'API keys', 'Channels', 'Providers', 'DKIM keys', 'Webhooks', 'Tracking', 'Sending hours', 'Privacy', 'Profile'],
};

const sidebar = (page: Page) => page.getByRole('navigation', { name: 'Main' });

/** The texts of the cells of the data row that has a cell named `cell` (exactly), in `scope`. */
async function rowWith(page: Page, scope: ReturnType<Page['getByRole']>, cell: string): Promise<string[]> {
  const row = scope.getByRole('row').filter({ has: page.getByRole('cell', { name: cell, exact: true }) });
  await row.waitFor();
  return row.getByRole('cell').allTextContents();
}

/** A message log's id and the position of `address` in it: what `POST /sandbox/events` names. */
async function simulate(type: 'open' | 'click', address: string, query: string) {
  const logs = (await api.get(`/message-logs?${query}`, as())).body as { _id: string; recipients: { recipient: string }[] }[];
  const log = logs.find((l) => l.recipients.some((r) => r.recipient === address))!;
  const res = await api.post('/sandbox/events', { logId: log._id, recipient: address, type, ...(type === 'click' ? { url: 'https://example.com/sale' } : {}) }, as());
  expect(res.status).toBe(200);
}

describeInBrowser('the console’s navigation and smaller parts', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('the sidebar groups its links under named sections; the page shown is marked; a member sees no admin link', async () => {
    const page = await ui.open(herald.url, org.token, '/groups');
    await page.getByRole('heading', { name: 'Groups' }).waitFor();
    const nav = sidebar(page);
    await nav.getByRole('link', { name: 'Dashboard' }).waitFor();
    for (const [section, links] of Object.entries(SECTIONS)) {
      const group = nav.getByRole('group', { name: section });
      expect(await group.getByRole('link').allTextContents()).toEqual(links);
    }
    expect(await nav.getByRole('link', { name: 'Groups' }).getAttribute('aria-current')).toBe('page');
    expect(await nav.getByRole('link', { name: 'Contacts', exact: true }).getAttribute('aria-current')).toBeNull();
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-sidebar-admin', { fullPage: false }));

    // Every link is reached by its name and opens its page.
    await nav.getByRole('group', { name: 'Insights' }).getByRole('link', { name: 'Message logs' }).click();
    await page.getByRole('heading', { name: 'Message logs' }).waitFor();
    await nav.getByRole('group', { name: 'Insights' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();

    const member = await addUser(api, org, 'user');
    const memberPage = await ui.open(herald.url, member.token, '/profile');
    const memberNav = sidebar(memberPage);
    await memberNav.getByRole('link', { name: 'Profile' }).waitFor();
    expect(await memberNav.getByRole('group', { name: 'Messaging' }).getByRole('link').allTextContents()).toEqual(SECTIONS.Messaging);
    expect(await memberNav.getByRole('group', { name: 'Audience' }).getByRole('link').allTextContents()).toEqual(['Contacts', 'Groups']);
    expect(await memberNav.getByRole('group', { name: 'Insights' }).getByRole('link').allTextContents()).toEqual(['Message logs']);
    expect(await memberNav.getByRole('group', { name: 'Settings' }).getByRole('link').allTextContents()).toEqual(['Profile']);
    for (const name of ['Import contacts', 'Suppressions', 'Team', 'API keys', 'Providers', 'Audit log']) expect(await memberNav.getByRole('link', { name }).count()).toBe(0);
    await expectAccessible(memberPage);
    console.log(await screenshot(memberPage, 'navigation-sidebar-member', { fullPage: false }));
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('in sandbox mode a banner on every signed-in page says so and leads to the outbox; a live platform shows none', async () => {
    const page = await ui.open(herald.url, org.token, '/contacts');
    await page.getByRole('heading', { name: 'Contacts' }).waitFor();
    const banner = page.getByRole('main').getByRole('region', { name: 'Sandbox mode' });
    await banner.getByText('Sandbox mode: messages are recorded in the Sandbox outbox, not sent.').waitFor();
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-sandbox-banner', { fullPage: false }));
    await banner.getByRole('link', { name: 'Open the outbox' }).click();
    await page.getByRole('heading', { name: 'Sandbox outbox' }).waitFor();
    await page.getByRole('region', { name: 'Sandbox mode' }).waitFor();

    const live = await heraldWithOrg({ env: { DELIVERY_MODE: 'live' } });
    try {
      const livePage = await ui.open(live.herald.url, live.org.token, '/contacts');
      await livePage.getByRole('heading', { name: 'Contacts' }).waitFor();
      await sidebar(livePage).getByRole('link', { name: 'Dashboard' }).waitFor();
      // The mode is read with the caller: once the organization's name shows, the banner would have too.
      await livePage.getByText(live.org.user.firstName, { exact: true }).waitFor();
      expect(await livePage.getByRole('region', { name: 'Sandbox mode' }).count()).toBe(0);
    } finally {
      await live.herald.stop();
    }
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a group’s colour is chosen from named swatches, by pointer or keyboard, and stored as the API takes it', async () => {
    const page = await ui.open(herald.url, org.token, '/groups');
    await page.getByRole('button', { name: 'New group' }).first().click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(/^Name/).fill('Spring buyers');
    const colors = dialog.getByRole('radiogroup', { name: 'Color' });
    expect(await colors.getByRole('radio').count()).toBe(10);
    expect(await colors.getByRole('radio', { name: 'Blue' }).getAttribute('aria-checked')).toBe('true');
    await colors.getByRole('radio', { name: 'Teal' }).click();
    expect(await colors.getByRole('radio', { name: 'Teal' }).getAttribute('aria-checked')).toBe('true');
    expect(await colors.getByRole('radio', { name: 'Blue' }).getAttribute('aria-checked')).toBe('false');
    // One tab stop: the chosen swatch; the arrows move the choice and the focus.
    expect(await colors.getByRole('radio', { name: 'Teal' }).getAttribute('tabindex')).toBe('0');
    expect(await colors.getByRole('radio', { name: 'Blue' }).getAttribute('tabindex')).toBe('-1');
    await colors.getByRole('radio', { name: 'Teal' }).press('ArrowRight');
    expect(await colors.getByRole('radio', { name: 'Blue' }).getAttribute('aria-checked')).toBe('true');
    await page.keyboard.press('ArrowLeft');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('aria-label'))).toBe('Teal');
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-group-colors', { fullPage: false }));
    await dialog.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('link', { name: 'Spring buyers' }).waitFor();
    let stored = (await api.get('/groups', as())).body.find((g: any) => g.name === 'Spring buyers');
    expect(stored.color).toBe('bg-teal-500');

    await page.getByRole('button', { name: 'Edit Spring buyers' }).click();
    const editColors = page.getByRole('dialog').getByRole('radiogroup', { name: 'Color' });
    expect(await editColors.getByRole('radio', { name: 'Teal' }).getAttribute('aria-checked')).toBe('true');
    await editColors.getByRole('radio', { name: 'Teal' }).press('End');
    await page.getByRole('dialog').getByRole('button', { name: 'Save group' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    stored = (await api.get(`/groups/${stored._id}`, as())).body;
    expect(stored.color).toBe('bg-gray-500');

    // A colour set through the API that the console does not offer is shown, chosen, and kept.
    const custom = await api.post('/groups', { name: 'Roses', color: 'bg-rose-400 text-white' }, as());
    expect(custom.status).toBe(201);
    await page.reload();
    await page.getByRole('button', { name: 'Edit Roses' }).click();
    const current = page.getByRole('dialog').getByRole('radio', { name: 'Current (bg-rose-400 text-white)' });
    expect(await current.getAttribute('aria-checked')).toBe('true');
    await page.getByRole('dialog').getByLabel(/^Name/).fill('Rose lovers');
    await page.getByRole('dialog').getByRole('button', { name: 'Save group' }).click();
    await page.getByRole('link', { name: 'Rose lovers' }).waitFor();
    expect((await api.get(`/groups/${custom.body._id}`, as())).body.color).toBe('bg-rose-400 text-white');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the campaigns list shows each campaign’s sent, delivered, opened and clicked', async () => {
    const email = await api.post(
      '/campaigns',
      { name: 'Spring sale', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Sale', content: '<p>Our <a href="https://example.com/sale">sale</a></p>' } }, recipients: { manual: ['amina@example.com', 'baraka@example.com'] } },
      as(),
    );
    const sms = await api.post('/campaigns', { name: 'Flash SMS', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Flash sale today' } }, recipients: { manual: ['0712345671', '0712345672', '0712345673'] } }, as());
    for (const c of [email, sms]) expect((await api.post(`/campaigns/${c.body._id}/launch`, {}, as())).status).toBe(200);
    await waitFor(() => api.get(`/campaigns/${sms.body._id}`, as()), (r) => r.body.status === 'completed' && r.body.analytics.delivered === 3);
    await waitFor(() => api.get(`/campaigns/${email.body._id}`, as()), (r) => r.body.status === 'completed');
    await simulate('open', 'amina@example.com', `campaignId=${email.body._id}`);
    await simulate('click', 'baraka@example.com', `campaignId=${email.body._id}`);

    const page = await ui.open(herald.url, org.token, '/campaigns');
    const table = page.getByRole('table');
    await table.getByRole('link', { name: 'Spring sale' }).waitFor();
    const headers = await table.getByRole('columnheader').allTextContents();
    expect(headers.slice(-4)).toEqual(['Sent', 'Delivered', 'Opened', 'Clicked']);
    const row = (name: string) => table.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) }).getByRole('cell').allTextContents();
    // A click counts as an open too; email reports no deliveries.
    expect((await row('Spring sale')).slice(-4)).toEqual(['2', '0', '2', '1']);
    expect((await row('Flash SMS')).slice(-4)).toEqual(['3', '3', '0', '0']);
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-campaigns-list'));
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a contact’s page lists what was sent to its phone and its email, with its receipts, linking to each log', async () => {
    const contact = await api.post('/contacts', { name: 'Wanjiru Kamau', phone: '+254711000005', email: 'wanjiru@example.com' }, as());
    expect(contact.status).toBe(201);
    expect((await api.post('/notifications/send', { type: 'sms', to: ['+254711000005', '+254711000006'], message: 'Your order shipped' }, as())).status).toBe(200);
    await waitFor(
      () => api.get('/message-logs?recipient=%2B254711000005', as()),
      (r) => r.body[0]?.recipients.find((x: any) => x.recipient === '+254711000005')?.deliveredAt,
    );
    expect((await api.post('/notifications/send', { type: 'email', to: 'wanjiru@example.com', subject: 'Receipt', message: '<p>Thanks</p>' }, as())).status).toBe(200);
    await simulate('open', 'wanjiru@example.com', 'recipient=wanjiru@example.com');
    // Someone else's message is not hers.
    await api.post('/notifications/send', { type: 'email', to: 'other@example.com', subject: 'Other', message: 'Hi' }, as());

    const page = await ui.open(herald.url, org.token, `/contacts/${contact.body._id}`);
    await page.getByRole('heading', { name: 'Wanjiru Kamau' }).waitFor();
    const messages = page.getByRole('region', { name: 'Messages' });
    const table = messages.getByRole('table');
    await table.getByRole('link', { name: /^Email log of/ }).waitFor();
    expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Sent', 'Channel', 'Address', 'Status', 'Delivered', 'Opened', 'Clicked', 'Bounced']);
    expect(await table.getByRole('row').count()).toBe(3);
    const [, channel, address, status, delivered, opened, clicked, bounced] = await rowWith(page, table, 'Email');
    expect([channel, address, status, delivered, clicked, bounced]).toEqual(['Email', 'wanjiru@example.com', 'Sent', '—', '—', '—']);
    expect(opened).not.toBe('—');
    const sms = await rowWith(page, table, 'SMS');
    expect(sms.slice(1, 4)).toEqual(['SMS', '+254711000005', 'Sent']);
    expect(sms[4]).not.toBe('—');
    // Newest first: the email went after the SMS.
    expect(await table.getByRole('row').nth(1).getByRole('cell').nth(1).textContent()).toBe('Email');
    await messages.getByRole('link', { name: 'Logs of wanjiru@example.com' }).waitFor();
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-contact-messages'));

    await table.getByRole('link', { name: /^Email log of/ }).click();
    await page.getByRole('heading', { name: /^Email log of/ }).waitFor();
    const [log] = (await api.get('/message-logs?recipient=wanjiru@example.com', as())).body;
    expect(new URL(page.url()).pathname).toBe(`/message-logs/${log._id}`);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the send page counts the recipients and shows the cost before sending, and the send costs that', async () => {
    const sender = await signupOrg(api);
    const page = await ui.open(herald.url, sender.token, '/send');
    await page.getByRole('heading', { name: 'Send' }).waitFor();
    await page.getByText('Add recipients and a message to see what this send costs.').waitFor();
    const others = page.getByRole('combobox', { name: 'Other addresses' });
    for (const address of ['0712345678', '+254712345678', '12']) {
      await others.fill(address);
      await others.press('Enter');
    }
    await page.getByLabel(/^Message/).fill('a'.repeat(161));
    const estimate = page.getByRole('table', { name: 'Estimate' });
    await estimate.getByRole('row', { name: 'Recipients 2' }).waitFor();
    expect(await estimate.getByRole('row').allTextContents()).toEqual(['Recipients2', 'Cannot be sent to1', 'Credits each2', 'This send costs2 credits']);
    await page.getByText('Your balance: 100 credits').waitFor();
    expect((await api.get('/message-logs', as(sender))).body).toEqual([]);
    await expectAccessible(page);
    console.log(await screenshot(page, 'navigation-send-cost'));

    await page.getByRole('button', { name: 'Send message' }).click();
    await page.getByText('1 sent, 1 failed').waitFor();
    expect((await api.get('/organizations/current', as(sender))).body.credits).toBe(98);
    await page.getByText('Your balance: 98 credits').waitFor();

    // Short of credits: the page says so before anything is tried.
    await herald.db('organization_credits').where({ organization_id: sender.orgId }).update({ credits: 1 });
    const poor = await ui.open(herald.url, sender.token, '/send');
    const address = poor.getByRole('combobox', { name: 'Other addresses' });
    await address.fill('0712345679');
    await address.press('Enter');
    await poor.getByLabel(/^Message/).fill('a'.repeat(161));
    await poor.getByRole('alert').getByText('Not enough credits').waitFor();
    await expectAccessible(poor);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the login and sign-up pages have a main landmark', async () => {
    const login = await ui.open(herald.url, null, '/login');
    await login.getByRole('main').getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    await expectAccessible(login);
    console.log(await screenshot(login, 'navigation-login'));
    await login.getByRole('main').getByRole('link', { name: 'Create an organization' }).click();
    await login.getByRole('main').getByRole('heading', { name: 'Create your Herald organization' }).waitFor();
    await login.getByRole('main').getByRole('button', { name: 'Create organization' }).waitFor();
    expect(await login.getByRole('main').count()).toBe(1);
    await expectAccessible(login);
    console.log(await screenshot(login, 'navigation-signup'));
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
