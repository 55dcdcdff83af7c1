import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { startDnsTxtServer, type DnsTxtServer } from '../fakes/dns-txt-server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's DKIM keys page (Settings → DKIM keys), as an admin uses it, with a DNS server on
 * loopback standing for the domain's zone: a bad domain refused under its field, an RSA key and an
 * Ed25519 key made, a record copied, a key checked before and after its record is published and with
 * another key's record at its name, one key deleted once confirmed; a member is not offered the page.
 * Screenshots go to CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let dns: DnsTxtServer;
let ui: ConsoleBrowser;

beforeAll(async () => {
  dns = await startDnsTxtServer();
  ({ herald, api, org } = await heraldWithOrg({ env: { DNS_SERVERS: dns.address } }));
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await dns?.stop();
});

interface Key {
  _id: string;
  selector: string;
  algorithm: string;
  dnsName: string;
  record: string;
}

/** The section of one key, named by its DNS name. */
const card = (page: Page, dnsName: string | RegExp) => page.getByRole('region', { name: dnsName });

/** Accepts the next `confirm()` the page shows, keeping its text. */
const acceptNextDialog = (page: Page, seen: string[]) =>
  page.once('dialog', (d) => {
    seen.push(d.message());
    void d.accept();
  });

describeInBrowser('the console’s DKIM keys page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin makes an RSA and an Ed25519 key, copies a record, checks a key against DNS and deletes one', async () => {
    const page = await ui.open(herald.url, org.token, '/');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: herald.url });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'DKIM keys' }).click();
    await page.getByRole('heading', { name: 'DKIM keys', level: 2 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings/dkim-keys');
    await page.getByText('No DKIM keys yet').waitFor();
    await expectAccessible(page);

    // A domain that is not one is refused under its field; then an RSA key with a chosen selector.
    await page.getByRole('button', { name: 'New key' }).first().click();
    let dialog = page.getByRole('dialog', { name: 'New DKIM key' });
    await dialog.getByLabel(/^Domain/).fill('not a domain');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('must be a domain name such as example.com').waitFor();
    expect(await dialog.getByLabel(/^Domain/).getAttribute('aria-invalid')).toBe('true');
    await dialog.getByLabel(/^Domain/).fill('Acme-Mail.test');
    await dialog.getByLabel(/^Selector/).fill('s2026');
    expect(await dialog.getByRole('radio', { name: 'RSA (2048 bits)' }).isChecked()).toBe(true);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.waitFor({ state: 'detached' });
    const rsaCard = card(page, 's2026._domainkey.acme-mail.test');
    await rsaCard.getByText('RSA', { exact: true }).waitFor();
    await rsaCard.getByText('Not checked').waitFor();

    // An Ed25519 key with the default selector.
    await page.getByRole('button', { name: 'New key' }).click();
    dialog = page.getByRole('dialog', { name: 'New DKIM key' });
    await dialog.getByLabel(/^Domain/).fill('acme-mail.test');
    await dialog.getByRole('radio', { name: 'Ed25519' }).check();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.waitFor({ state: 'detached' });
    const edCard = card(page, /^herald\d{8}ed\._domainkey\.acme-mail\.test$/);
    await edCard.getByText('Ed25519', { exact: true }).waitFor();

    const keys = (await api.get('/dkim-keys', { token: org.token })).body as Key[];
    expect(keys.map((k) => [k.selector.replace(/\d{8}/, '<date>'), k.algorithm])).toEqual([
      ['s2026', 'rsa'],
      ['herald<date>ed', 'ed25519'],
    ]);
    const [rsa, ed] = keys as [Key, Key];
    await edCard.getByText(ed.record).waitFor();
    await edCard.getByRole('button', { name: 'Copy record' }).click();
    await edCard.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(ed.record);

    // Checked before the record is published, then after.
    await page.getByRole('button', { name: `Check DNS for ${rsa.dnsName}` }).click();
    let outcome = rsaCard.getByRole('status');
    await outcome.getByText('Not published').waitFor();
    await outcome.getByText(`No TXT record at ${rsa.dnsName}`).waitFor();
    await rsaCard.getByText('Not in DNS').waitFor();
    dns.set(rsa.dnsName, rsa.record);
    await page.getByRole('button', { name: `Check DNS for ${rsa.dnsName}` }).click();
    await outcome.getByText('Published: DNS has this key').waitFor();
    await rsaCard.getByText('Published', { exact: true }).waitFor();

    // The RSA key's record at the Ed25519 key's name: published, but another key's.
    dns.set(ed.dnsName, rsa.record);
    await page.getByRole('button', { name: `Check DNS for ${ed.dnsName}` }).click();
    outcome = edCard.getByRole('status');
    await outcome.getByText('Published, but not this key').waitFor();
    await outcome.getByText(`The record at ${ed.dnsName} is another key's`).waitFor();
    await outcome.getByText(rsa.record).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'dkim-keys');

    // Deleted once confirmed: gone from the page and the API.
    const confirms: string[] = [];
    acceptNextDialog(page, confirms);
    await page.getByRole('button', { name: `Delete ${ed.dnsName}` }).click();
    await edCard.waitFor({ state: 'detached' });
    expect(confirms).toEqual([`Delete the key ${ed.dnsName}? Email from acme-mail.test is no longer signed with it; remove its record from DNS afterwards.`]);
    expect(((await api.get('/dkim-keys', { token: org.token })).body as Key[]).map((k) => k._id)).toEqual([rsa._id]);
    await expectAccessible(page);

    const audit = (await api.get('/audit-log?action=dkim.', { token: org.token })).body as { action: string }[];
    expect(audit.map((e) => e.action)).toEqual(['dkim.deleted', 'dkim.created', 'dkim.created']);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('a member is not offered the page, and opening it by URL says it is for admins', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Profile' }).waitFor();
    expect(await nav.getByRole('link', { name: 'DKIM keys' }).count()).toBe(0);
    await page.goto(new URL('/settings/dkim-keys', herald.url).toString());
    await page.getByRole('alert').getByText('Admins only').waitFor();
    expect(await page.getByRole('button', { name: 'New key' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
