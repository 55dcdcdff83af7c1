import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, signupOrg, uniqueEmail, waitFor, type Client, type Org } from '../helpers/herald.js';

/** The console's settings pages (team, API keys, channels, webhooks, tracking), as an admin and as a user. */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
/** A webhook receiver that answers every request 200. */
let receiver: Server, receiverUrl: string;

beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true }));
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('received'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
}, 60_000);
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await herald?.stop();
});

/** Accepts the next `confirm()` the page shows. */
const acceptNextDialog = (page: Page) => page.once('dialog', (d) => void d.accept());

describeInBrowser('the console’s settings pages', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('team: a user is created with a role, the role changed, and the user deactivated', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/team');
    await page.getByRole('cell', { name: org.email }).waitFor();

    await page.getByRole('button', { name: 'New user' }).click();
    const email = uniqueEmail('member');
    await page.getByLabel(/^First name/).fill('Katherine');
    await page.getByLabel(/^Last name/).fill('Johnson');
    await page.getByLabel(/^Email/).fill(email);
    await page.getByLabel(/^Password/).fill('a long enough password');
    await page.getByLabel(/^Country code/).fill('+254');
    await page.getByLabel(/^Phone number/).fill('12');
    await page.getByLabel(/^Role/).selectOption('admin');
    await page.getByRole('button', { name: 'Create user' }).click();
    // The server's 400 lands on the field it names.
    await page.locator('input[aria-invalid="true"]').waitFor();
    expect(await page.getByLabel(/^Phone number/).getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel(/^Phone number/).fill('711222333');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('cell', { name: email }).waitFor();
    await expectAccessible(page);
    const created = (await api.get('/users', { token: org.token })).body.find((u: any) => u.email === email);
    expect(created).toMatchObject({ firstName: 'Katherine', role: 'admin', isActive: true });

    await page.getByRole('button', { name: 'Edit Katherine Johnson' }).click();
    await page.getByLabel(/^Role/).selectOption('user');
    await page.getByRole('button', { name: 'Save user' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect((await api.get(`/users/${created._id}`, { token: org.token })).body.role).toBe('user');

    acceptNextDialog(page);
    await page.getByRole('button', { name: 'Deactivate Katherine Johnson' }).click();
    await page.getByRole('button', { name: 'Reactivate Katherine Johnson' }).waitFor();
    expect((await api.get(`/users/${created._id}`, { token: org.token })).body.isActive).toBe(false);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('API keys: a new key is shown once with a copy button, then revoked', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/api-keys');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: herald.url });
    await page.getByText('No API keys yet').waitFor();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'New API key' }).first().click();
    await page.getByLabel(/^Name/).fill('Billing service');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('will not be shown again').waitFor();
    const key = (await dialog.locator('pre').textContent())!.trim();
    expect(key).toMatch(/^uak_[A-Za-z0-9]{38}$/);
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Copy key' }).click();
    await dialog.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(key);
    await dialog.getByRole('button', { name: 'I have copied it' }).click();
    await page.getByRole('cell', { name: 'Billing service', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    await expectAccessible(page);
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(200);

    acceptNextDialog(page);
    await page.getByRole('button', { name: 'Revoke Billing service' }).click();
    await page.getByText('Revoked', { exact: true }).waitFor();
    const [listed] = (await api.get('/api-keys', { token: org.token })).body;
    expect(listed.revokedAt).not.toBeNull();
    expect((await api.get('/contacts', { apiKey: key })).status).toBe(401);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('channels: SMTP credentials are saved, the password shown only as set; the providers’ URLs can be copied', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/channels');
    await page.getByRole('button', { name: 'Save email settings' }).waitFor();
    await expectAccessible(page);
    const creds = (await api.get('/organizations/current', { token: org.token })).body.credentials;
    await page.getByText(creds.sms_reportUrl).waitFor();
    await page.getByText(creds.whatsapp_webhookUrl).waitFor();
    await page.getByRole('button', { name: 'Copy delivery report URL' }).waitFor();
    await page.getByRole('button', { name: 'Copy webhook URL' }).waitFor();

    const email = page.getByRole('form', { name: 'Email (SMTP) settings' });
    await email.getByLabel(/^SMTP host/).fill('smtp.example.com');
    await email.getByLabel(/^Port/).fill('587');
    await email.getByLabel(/^User name/).fill('mailer');
    await email.getByLabel(/^Password/).fill('smtp-secret-1234');
    await email.getByLabel(/^From address/).fill('news@example.com');
    await email.getByLabel(/^TLS mode/).selectOption('starttls');
    await email.getByRole('button', { name: 'Save email settings' }).click();
    await email.getByRole('status').getByText('Saved.').waitFor();
    await email.getByText(/^Set \(\*\*\*\*1234\)/).waitFor();
    expect(await email.getByLabel(/^Password/).inputValue()).toBe('');
    expect(await page.content()).not.toContain('smtp-secret-1234');

    const saved = (await api.get('/organizations/current', { token: org.token })).body.credentials;
    expect(saved).toMatchObject({ email_host: 'smtp.example.com', email_port: '587', email_user: 'mailer', email_pass: '****1234', email_from: 'news@example.com', email_secure: 'starttls' });

    const whatsapp = page.getByRole('form', { name: 'WhatsApp settings' });
    expect(await whatsapp.getByText('Not set.').count()).toBe(2);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('channels: the SMS rate is set, kept across a reload, refused out of range, and cleared back to the default', async () => {
    const rateOf = async () => (await api.get('/organizations/current', { token: org.token })).body.credentials.sms_rate;
    const reload = async (page: Page) => {
      await page.reload();
      await page.getByRole('button', { name: 'Save SMS settings' }).waitFor();
    };
    const rateInput = (page: Page) => page.getByRole('form', { name: 'SMS settings' }).getByLabel(/^SMS rate \(messages per second\)/);
    const save = async (page: Page) => {
      const sms = page.getByRole('form', { name: 'SMS settings' });
      await sms.getByRole('button', { name: 'Save SMS settings' }).click();
      await sms.getByRole('status').getByText('Saved.').waitFor();
    };

    const page = await ui.open(herald.url, org.token, '/settings/channels');
    await page.getByRole('button', { name: 'Save SMS settings' }).waitFor();
    expect(await rateInput(page).inputValue()).toBe('');
    // Each channel's rate says what its default is, and that throttling answers slow it down.
    await page.getByRole('form', { name: 'SMS settings' }).getByText(/default if it sets one, else unpaced\. The provider’s throttling answers slow it down/).waitFor();
    await page.getByRole('form', { name: 'Email (SMTP) settings' }).getByLabel(/^Email rate \(messages per second\)/).waitFor();
    const whatsapp = page.getByRole('form', { name: 'WhatsApp settings' });
    await whatsapp.getByLabel(/^WhatsApp rate \(messages per second\)/).waitFor();
    await whatsapp.getByText(/WhatsApp Cloud’s default, 80\./).waitFor();

    await rateInput(page).fill('25');
    await save(page);
    expect(await rateOf()).toBe(25);

    await reload(page);
    expect(await rateInput(page).inputValue()).toBe('25');
    await expectAccessible(page);
    await screenshot(page, 'channels-rates');

    // Out of range: the server's 400 lands on the field, and the rate stays as it was.
    await rateInput(page).fill('0');
    await page.getByRole('form', { name: 'SMS settings' }).getByRole('button', { name: 'Save SMS settings' }).click();
    await page.locator('input[aria-invalid="true"]').waitFor();
    expect(await rateInput(page).getAttribute('aria-invalid')).toBe('true');
    expect(await rateOf()).toBe(25);

    // Emptied: null is sent, and the default applies again.
    await rateInput(page).fill('');
    await save(page);
    expect(await rateOf()).toBeNull();
    const gql = await api.gql('{ organization { credentials { sms_rate email_rate whatsapp_rate } } }', {}, { token: org.token });
    expect(gql.body.data?.organization.credentials).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: null });

    await reload(page);
    expect(await rateInput(page).inputValue()).toBe('');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('webhooks: an endpoint is created (secret shown once), sent a test event, its attempt listed, and the event re-sent', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/webhooks');
    await page.getByText('No webhook endpoints yet').waitFor();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'New endpoint' }).first().click();
    await page.getByLabel(/^URL/).fill(receiverUrl);
    await page.getByLabel(/^Description/).fill('Our CRM');
    await page.getByRole('checkbox', { name: 'message.sent' }).check();
    await page.getByRole('checkbox', { name: 'campaign.completed' }).check();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('will not be shown again').waitFor();
    expect((await dialog.locator('pre').textContent())!.trim()).toMatch(/^whsec_/);
    await dialog.getByRole('button', { name: 'Copy secret' }).waitFor();
    await dialog.getByRole('button', { name: 'I have copied it' }).click();

    const [endpoint] = (await api.get('/webhooks', { token: org.token })).body;
    expect(endpoint).toMatchObject({ url: receiverUrl, description: 'Our CRM', eventTypes: ['message.sent', 'campaign.completed'], enabled: true });
    await page.getByRole('heading', { name: receiverUrl }).waitFor();
    await page.getByText('No attempts yet').waitFor();

    await page.getByRole('button', { name: 'Send test event' }).click();
    const attempts = page.getByRole('region', { name: 'Attempts' });
    await attempts.getByRole('cell', { name: 'succeeded' }).waitFor({ timeout: 20_000 });
    await attempts.getByRole('cell', { name: '200', exact: true }).waitFor();
    await attempts.getByText('received').waitFor();
    const listed = (await api.get(`/webhooks/${endpoint._id}/attempts`, { token: org.token })).body;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ status: 'succeeded', responseStatus: 200 });
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Disable endpoint' }).click();
    await page.getByRole('button', { name: 'Enable endpoint' }).waitFor();
    expect((await api.get(`/webhooks/${endpoint._id}`, { token: org.token })).body.enabled).toBe(false);
    await page.getByRole('button', { name: 'Enable endpoint' }).click();
    await page.getByRole('button', { name: 'Disable endpoint' }).waitFor();

    await page.getByRole('link', { name: 'All webhook endpoints' }).click();
    await page.getByRole('tab', { name: 'Events' }).click();
    await page.getByRole('link', { name: 'message.sent' }).click();
    await page.getByRole('button', { name: `Re-send to ${receiverUrl}` }).click();
    await page.getByText(`Queued again for ${receiverUrl}.`).waitFor();
    await waitFor(
      async () => (await api.get(`/webhooks/${endpoint._id}/attempts`, { token: org.token })).body,
      (a: any[]) => a.length === 2,
    );
    await page.getByRole('region', { name: 'Attempts' }).getByRole('cell', { name: 'succeeded' }).nth(1).waitFor({ timeout: 10_000 });
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('tracking: the switch turns open and click tracking off and on', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/tracking');
    const toggle = page.getByRole('switch', { name: 'Track opens and clicks of sent emails' });
    await toggle.waitFor();
    expect(await toggle.isChecked()).toBe(true);
    await expectAccessible(page);
    await toggle.click();
    await page.getByText(/^Tracking is off/).waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.tracking).toBe(false);
    await toggle.click();
    await page.getByText('Tracking is on.').waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.tracking).toBe(true);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('privacy: how long logs are kept, refused out of range next to the field, saved and kept across a reload', async () => {
    const page = await ui.open(herald.url, org.token, '/settings/privacy');
    const field = page.getByLabel('Keep message logs for (days)');
    await field.waitFor();
    expect(await field.inputValue()).toBe('395');
    await expectAccessible(page);
    await field.fill('20');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^retentionDays must be .*30/).waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.retentionDays).toBe(395);
    await field.fill('90');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: logs are kept for 90 days.' }).waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.retentionDays).toBe(90);
    await screenshot(page, 'settings-privacy', { fullPage: false });
    await page.reload();
    await page.getByLabel('Keep message logs for (days)').waitFor();
    await waitFor(() => page.getByLabel('Keep message logs for (days)').inputValue(), (v: string) => v === '90');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test("sending hours: the organization's time zone, picked by typing a city, saved and kept across a reload", async () => {
    const page = await ui.open(herald.url, org.token, '/settings/sending-hours');
    const field = page.getByRole('combobox', { name: 'Organization time zone' });
    await field.waitFor();
    const before = (await api.get('/organizations/current', { token: org.token })).body.timezone;
    expect(await field.inputValue()).toBe(before);
    await expectAccessible(page);
    await field.fill('Lagos');
    await page.getByRole('option', { name: 'Africa/Lagos' }).click();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'contacts without a zone of their own are in Africa/Lagos' }).waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.timezone).toBe('Africa/Lagos');
    await screenshot(page, 'settings-sending-hours', { fullPage: false });
    await page.reload();
    await waitFor(() => page.getByRole('combobox', { name: 'Organization time zone' }).inputValue(), (v: string) => v === 'Africa/Lagos');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('privacy: closing the organization takes its name and the password again; every page says it is closing; an admin cancels', async () => {
    const closing = await signupOrg(api, { companyName: 'Shutters Down Ltd' });
    const page = await ui.open(herald.url, closing.token, '/settings/privacy');
    await page.getByRole('button', { name: 'Close organization…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Close the organization' });
    const confirm = dialog.getByRole('button', { name: 'Close organization' });
    await dialog.getByLabel('Your password').fill('not my password');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type "Shutters Down Ltd"').fill('Shutters Down Ltd');
    await confirm.click();
    await dialog.getByText('Password is incorrect').waitFor();
    await expectAccessible(page);
    await dialog.getByLabel('Your password').fill(closing.password);
    await confirm.click();
    const banner = page.getByRole('region', { name: 'Organization closing' });
    await banner.getByText(/will be deleted on/).waitFor();
    await page.getByRole('alert').filter({ hasText: 'Every member, key, contact' }).waitFor();
    expect((await api.get('/organizations/current/closure', { token: closing.token })).body.status).toBe('scheduled');
    await expectAccessible(page);
    await screenshot(page, 'settings-privacy-closing', { fullPage: false });
    // The banner is on every page.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Contacts', exact: true }).click();
    await page.waitForURL(/\/contacts$/);
    await banner.getByRole('link', { name: 'Cancel closing' }).click();
    await page.getByRole('button', { name: 'Cancel closing' }).click();
    await page.getByRole('button', { name: 'Close organization…' }).waitFor();
    await waitFor(() => banner.count(), (n: number) => n === 0);
    expect((await api.get('/organizations/current/closure', { token: closing.token })).status).toBe(404);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role member sees no settings in the sidebar, and an admin page by URL says it is for admins', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Profile' }).waitFor();
    await page.getByRole('button', { name: 'Change password' }).waitFor();
    await expectAccessible(page);
    for (const name of ['Team', 'API keys', 'Channels', 'Webhooks', 'Tracking', 'Sending hours', 'Privacy']) expect(await nav.getByRole('link', { name }).count()).toBe(0);

    await page.goto(new URL('/settings/api-keys', herald.url).toString());
    await page.getByRole('alert').getByText('Admins only').waitFor();
    expect(await page.getByRole('button', { name: 'New API key' }).count()).toBe(0);
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
