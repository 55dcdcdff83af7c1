import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { startAfricasTalkingFake, type AfricasTalkingFake } from '../fakes/africastalking-fake.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's Providers page (Settings → Providers), as an admin uses it, with live delivery to
 * the SMS gateway fake (the organization's SMS credentials: its first provider, "SMS gateway") and
 * an Africa's Talking fake: a provider added through the form (the server's 400 on the field it
 * names first), listed second, moved up, sent a test message (taken, then refused by a 503), renamed
 * and deleted; a provider whose circuit is open says so; a member is not offered the page.
 * Screenshots go to CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

const AT_USERNAME = 'herald-app';
const AT_KEY = 'at-key-1';

let herald: Herald, api: Client, org: Org;
let gateway: SmsGatewayFake, at: AfricasTalkingFake;
let ui: ConsoleBrowser;

beforeAll(async () => {
  [gateway, at] = await Promise.all([startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }), startAfricasTalkingFake({ username: AT_USERNAME, apiKey: AT_KEY })]);
  ({ herald, api, org } = await heraldWithOrg({ env: { DELIVERY_MODE: 'live', SMS_API_URL: gateway.url, AFRICASTALKING_API_URL: at.url } }));
  const creds = await api.put('/organizations/current/credentials', { sms_apiKey: 'key-1', sms_partnerID: '42', sms_shortCode: 'HERALD' }, { token: org.token });
  if (creds.status !== 200) throw new Error(`credentials: ${creds.status} ${JSON.stringify(creds.body)}`);
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), at?.stop()]);
});

/** The SMS providers as the API lists them, first to last. */
const smsProviders = async () => (await api.get('/providers?channel=sms', { token: org.token })).body as { _id: string; name: string; type: string; position: number }[];

/** The names of the SMS section's providers, in the order the page lists them. */
const listedNames = (page: Page) => page.getByRole('list', { name: /^SMS providers/ }).getByRole('listitem').getByRole('heading', { level: 4 }).allTextContents();

/** Accepts the next `confirm()` the page shows, keeping its text. */
const acceptNextDialog = (page: Page, seen: string[]) =>
  page.once('dialog', (d) => {
    seen.push(d.message());
    void d.accept();
  });

describeInBrowser('the console’s Providers page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin adds an Africa’s Talking provider, moves it first, sends tests through it, renames it and deletes it', async () => {
    const page = await ui.open(herald.url, org.token, '/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Providers' }).click();
    await page.getByRole('heading', { name: 'Providers', level: 2 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings/providers');

    // One section per channel: SMS has the gateway of the credentials, the others none yet.
    const sms = page.getByRole('region', { name: 'SMS' });
    await sms.getByRole('heading', { name: 'SMS gateway', level: 4 }).waitFor();
    expect(await listedNames(page)).toEqual(['SMS gateway']);
    await sms.getByText('Healthy', { exact: true }).waitFor();
    await page.getByRole('region', { name: 'Email' }).getByText('No Email providers yet').waitFor();
    await page.getByRole('region', { name: 'WhatsApp' }).getByText('No WhatsApp providers yet').waitFor();
    expect(await sms.getByRole('button', { name: 'Move SMS gateway up' }).isDisabled()).toBe(true);
    expect(await sms.getByRole('button', { name: 'Move SMS gateway down' }).isDisabled()).toBe(true);
    await expectAccessible(page);

    // The form is built from the type's fields; the API key left out, the server's 400 lands on it.
    await page.getByRole('button', { name: 'Add provider', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Add provider' });
    expect(await dialog.getByLabel('Channel').inputValue()).toBe('sms');
    await dialog.getByLabel('Type').selectOption({ label: "Africa's Talking" });
    await dialog.getByLabel(/^Username/).fill(AT_USERNAME);
    await dialog.getByLabel(/^From/).fill('HERALD');
    expect(await dialog.getByLabel(/^API key/).getAttribute('type')).toBe('password');
    expect(await dialog.getByLabel(/^API key/).getAttribute('aria-required')).toBe('true');
    expect(await dialog.getByLabel(/^From/).getAttribute('aria-required')).toBeNull();
    await dialog.getByRole('button', { name: 'Create provider' }).click();
    await dialog.locator('input[aria-invalid="true"]').waitFor();
    expect(await dialog.getByLabel(/^API key/).getAttribute('aria-invalid')).toBe('true');
    await dialog.getByText('secrets.apiKey is required for africastalking').waitFor();
    // The error is the input's description too, as a screen reader announces it.
    const described = await dialog.getByLabel(/^API key/).evaluate((el: any) =>
      String(el.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .map((id: string) => (globalThis as any).document.getElementById(id)?.textContent ?? '')
        .join(' '),
    );
    expect(described).toContain('secrets.apiKey is required for africastalking');
    await expectAccessible(page);
    await screenshot(page, 'providers-add-form', { fullPage: false });

    await dialog.getByLabel(/^API key/).fill(AT_KEY);
    await dialog.getByRole('button', { name: 'Create provider' }).click();
    await dialog.waitFor({ state: 'detached' });

    // Listed second, with its delivery report URL to copy.
    await sms.getByRole('heading', { name: "Africa's Talking", level: 4 }).waitFor();
    expect(await listedNames(page)).toEqual(['SMS gateway', "Africa's Talking"]);
    const created = (await smsProviders()).find((p) => p.type === 'africastalking')!;
    expect(created).toMatchObject({ name: "Africa's Talking", position: 2 });
    const full = (await api.get(`/providers/${created._id}`, { token: org.token })).body;
    expect(full).toMatchObject({ settings: { username: AT_USERNAME, from: 'HERALD' }, secrets: { apiKey: 'set' }, missing: [] });
    await sms.getByText(full.reportUrl).waitFor();
    await sms.getByRole('button', { name: "Copy Africa's Talking report URL" }).waitFor();
    expect(await page.content()).not.toContain(AT_KEY);

    // Moved up: first on the page and through the API; focus stays on the provider's buttons.
    await sms.getByRole('button', { name: "Move Africa's Talking up" }).click();
    await sms.getByRole('listitem').first().getByRole('heading', { name: "Africa's Talking", level: 4 }).waitFor();
    expect(await listedNames(page)).toEqual(["Africa's Talking", 'SMS gateway']);
    expect((await smsProviders()).map((p) => [p.name, p.position])).toEqual([
      ["Africa's Talking", 1],
      ['SMS gateway', 2],
    ]);
    await page.locator(':focus', { hasText: "Move Africa's Talking down" }).waitFor();
    expect(await page.locator(':focus').textContent()).toBe("Move Africa's Talking down");
    await screenshot(page, 'providers-list');
    await expectAccessible(page);

    // A test message through it: the fake takes it, and the page says its id.
    await sms.getByRole('button', { name: "Send test through Africa's Talking" }).click();
    const test = page.getByRole('dialog', { name: "Send a test through Africa's Talking" });
    await test.getByLabel(/^Phone number/).fill('+254712000111');
    await test.getByLabel(/^Message/).fill('Hello from the providers page');
    await test.getByRole('button', { name: 'Send test message' }).click();
    await test.getByRole('status').getByText(/^Sent: /).waitFor();
    const [message] = at.messages();
    expect(message).toMatchObject({ number: '+254712000111', message: 'Hello from the providers page', from: 'HERALD' });
    expect(await test.getByRole('status').textContent()).toBe(`Sent: ${message!.messageId}`);
    expect(gateway.calls.length).toBe(0);

    // Africa's Talking down (503): the page says why it was not sent.
    at.setBehaviour({ kind: 'http', status: 503 });
    await test.getByRole('button', { name: 'Send test message' }).click();
    const refused = test.getByRole('alert');
    await refused.getByText(/^Not sent: /).waitFor({ timeout: 30_000 });
    const refusal = (await refused.textContent())!;
    expect(refusal).toMatch(/503/);
    expect(await test.getByRole('status').count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'providers-test-refused', { fullPage: false });
    at.setBehaviour({ kind: 'success' });
    await test.getByRole('button', { name: 'Close', exact: true }).click();
    await test.waitFor({ state: 'detached' });

    // Renamed through the same form: the secret left empty is kept.
    await sms.getByRole('button', { name: "Edit Africa's Talking" }).click();
    const edit = page.getByRole('dialog', { name: "Edit Africa's Talking" });
    await edit.getByText(/Set — leave empty to keep\./).waitFor();
    expect(await edit.getByLabel(/^API key/).inputValue()).toBe('');
    expect(await edit.getByLabel(/^Username/).inputValue()).toBe(AT_USERNAME);
    await edit.getByLabel(/^Name/).fill('AT Kenya');
    await screenshot(page, 'providers-edit-form', { fullPage: false });
    await edit.getByRole('button', { name: 'Save provider' }).click();
    await edit.waitFor({ state: 'detached' });
    await sms.getByRole('heading', { name: 'AT Kenya', level: 4 }).waitFor();
    const renamed = (await api.get(`/providers/${created._id}`, { token: org.token })).body;
    expect(renamed).toMatchObject({ name: 'AT Kenya', position: 1, settings: { username: AT_USERNAME, from: 'HERALD' }, secrets: { apiKey: 'set' } });

    // Switched off and on again from the list.
    const item = sms.getByRole('listitem', { name: 'AT Kenya' });
    const enabledNow = async () => (await api.get(`/providers/${created._id}`, { token: org.token })).body.enabled as boolean;
    const toggle = item.getByRole('switch', { name: 'Enabled' });
    await toggle.click();
    await item.getByRole('switch', { name: 'Enabled', checked: false }).waitFor();
    expect(await waitFor(enabledNow, (e) => e === false, 10_000)).toBe(false);
    await toggle.click();
    await item.getByRole('switch', { name: 'Enabled', checked: true }).waitFor();
    expect(await waitFor(enabledNow, (e) => e === true, 10_000)).toBe(true);

    // Deleted once confirmed.
    const confirms: string[] = [];
    acceptNextDialog(page, confirms);
    await sms.getByRole('button', { name: 'Delete AT Kenya' }).click();
    await sms.getByRole('heading', { name: 'AT Kenya', level: 4 }).waitFor({ state: 'detached' });
    expect(confirms).toEqual(['Delete the provider "AT Kenya"? Nothing is sent through it any more, at once.']);
    expect(await listedNames(page)).toEqual(['SMS gateway']);
    // The order closes the gap the deleted provider left.
    expect((await smsProviders()).map((p) => [p.name, p.position])).toEqual([['SMS gateway', 1]]);
    await sms.getByRole('listitem', { name: 'SMS gateway' }).getByText('Position 1', { exact: true }).waitFor();

    const audit = (await api.get('/audit-log', { token: org.token })).body as { action: string }[];
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(['provider.created', 'provider.reordered', 'provider.tested', 'provider.updated', 'provider.deleted']));
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('a provider whose circuit is open says so, with its last error; a half-open one is probing', async () => {
    const provider = (await smsProviders()).find((p) => p.type === 'sms-gateway');
    await herald.db('providers').where({ id: provider!._id }).update({
      circuit: 'open',
      circuit_changed_at: new Date(),
      last_failure_at: new Date(),
      last_error: 'SMS gateway answered HTTP 502',
    });
    const page = await ui.open(herald.url, org.token, '/settings/providers');
    const item = page.getByRole('region', { name: 'SMS' }).getByRole('listitem', { name: 'SMS gateway' });
    await item.getByText('Circuit open', { exact: true }).waitFor();
    await item.getByText(/^Last error: SMS gateway answered HTTP 502/).waitFor();
    expect(await item.getByText('Healthy', { exact: true }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'providers-circuit-open');

    await herald.db('providers').where({ id: provider!._id }).update({ circuit: 'half-open' });
    await page.reload();
    await item.getByText('Probing', { exact: true }).waitFor();
    await expectAccessible(page);

    await herald.db('providers').where({ id: provider!._id }).update({ circuit: 'closed', circuit_changed_at: null, last_failure_at: null, last_error: null });
    await page.reload();
    await item.getByText('Healthy', { exact: true }).waitFor();
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a member is not offered the page, and opening it by URL says it is for admins', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Profile' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Providers' }).count()).toBe(0);
    await page.goto(new URL('/settings/providers', herald.url).toString());
    await page.getByRole('alert').getByText('Admins only').waitFor();
    expect(await page.getByRole('button', { name: 'Add provider' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
