import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, uniqueEmail, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's team invitations: an admin invites a person and copies the link; the person opens
 * it in a browser of their own, chooses a password and is signed in; the admin sees them in the
 * team. The admin's own row offers no way to deactivate or delete themself.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

/** Accepts the next `confirm()` the page shows. */
const acceptNextDialog = (page: Page) => page.once('dialog', (d) => void d.accept());

/** The link's path on the test Herald (its PUBLIC_URL is not the address it listens on). */
const pathOf = (link: string) => new URL(link).pathname;

describeInBrowser('team invitations in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin invites, copies the link; the person opens it, sets a password, is signed in and in the team', async () => {
    const admin = await ui.open(herald.url, org.token, '/settings/team');
    await admin.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: herald.url });
    // The first page of a fresh browser may take a while to load.
    await admin.getByRole('cell', { name: org.email, exact: true }).waitFor({ timeout: 30_000 });
    // The admin's own row: no way to lock themself out.
    const self = `${org.user.firstName} ${org.user.lastName}`;
    await admin.getByRole('button', { name: `Edit ${self}` }).waitFor();
    expect(await admin.getByRole('button', { name: `Deactivate ${self}` }).count()).toBe(0);
    expect(await admin.getByRole('button', { name: `Delete ${self}` }).count()).toBe(0);

    await admin.getByRole('button', { name: 'Invite member' }).click();
    const dialog = admin.getByRole('dialog');
    const email = uniqueEmail('invited');
    await dialog.getByLabel(/^Email/).fill(email);
    await dialog.getByLabel(/^Role/).selectOption('user');
    await dialog.getByLabel(/^First name/).fill('Mary');
    await dialog.getByLabel(/^Last name/).fill('Jackson');
    await expectAccessible(admin);
    await dialog.getByRole('button', { name: 'Send invitation' }).click();

    await dialog.getByText('Sandbox mode: not delivered').waitFor();
    const link = (await dialog.locator('pre').textContent())!.trim();
    expect(link).toMatch(/\/invite\/[\w-]+$/);
    await dialog.getByRole('button', { name: 'Copy link' }).click();
    await dialog.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    expect(await admin.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(link);
    await expectAccessible(admin);
    await screenshot(admin, 'invitations-link', { fullPage: false });
    // The same link went to the sandbox outbox.
    const outbox = (await api.get(`/sandbox/outbox?channel=email&recipient=${encodeURIComponent(email)}`, { token: org.token })).body;
    expect(outbox[0].body).toContain(link);

    await dialog.getByRole('button', { name: 'Done' }).click();
    const pending = admin.getByRole('region', { name: 'Pending invitations' });
    await pending.getByRole('cell', { name: email, exact: true }).waitFor();
    await pending.getByRole('cell', { name: 'Mary Jackson', exact: true }).waitFor();
    await expectAccessible(admin);
    await screenshot(admin, 'invitations-team-pending');

    // The invited person, in a browser of their own, signed out.
    const person = await ui.open(herald.url, null, pathOf(link));
    const main = person.getByRole('main');
    await main.getByRole('heading', { name: /^Join .+ on Herald$/ }).waitFor();
    expect(await main.getByLabel(/^Email/).inputValue()).toBe(email);
    expect(await main.getByLabel(/^First name/).inputValue()).toBe('Mary');
    await expectAccessible(person);
    await screenshot(person, 'invitations-accept');
    await main.getByLabel(/^Password/).fill('short');
    await main.getByRole('button', { name: 'Accept invitation' }).click();
    // The server's 400 lands on the field it names.
    await main.getByText('password must be at least 8 characters').waitFor();
    await main.getByLabel(/^Password/).fill('a password of my own');
    await main.getByRole('button', { name: 'Accept invitation' }).click();

    await person.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(person.url()).pathname).toBe('/');
    const session = await person.evaluate(() => (globalThis as any).sessionStorage.getItem('herald.token'));
    expect((await api.get('/users/me', { token: session })).body).toMatchObject({ email, firstName: 'Mary', role: 'user' });
    await expectAccessible(person);
    await screenshot(person, 'invitations-signed-in');

    await admin.reload();
    await admin.getByRole('cell', { name: email, exact: true }).waitFor();
    expect(await admin.getByRole('region', { name: 'Pending invitations' }).count()).toBe(0);
    await admin.getByRole('button', { name: 'Deactivate Mary Jackson' }).waitFor();

    // The link is spent: opened again, it says so.
    const again = await ui.open(herald.url, null, pathOf(link));
    await again.getByRole('alert').getByText('This invitation was already accepted: log in instead').waitFor();
    await again.getByRole('link', { name: 'Log in' }).waitFor();
    await expectAccessible(again);
    await screenshot(again, 'invitations-used-link');
    expect(ui.problems()).toEqual([]);
  }, 120_000);

  test('a pending invitation is revoked from the team page, and its link stops working', async () => {
    const email = uniqueEmail('revoked');
    const made = await api.post('/invitations', { email }, { token: org.token });
    expect(made.status).toBe(201);
    const admin = await ui.open(herald.url, org.token, '/settings/team');
    const pending = admin.getByRole('region', { name: 'Pending invitations' });
    await pending.getByRole('cell', { name: email, exact: true }).waitFor();
    acceptNextDialog(admin);
    await pending.getByRole('button', { name: `Revoke invitation to ${email}` }).click();
    await admin.getByRole('region', { name: 'Pending invitations' }).waitFor({ state: 'detached' });
    expect((await api.get('/invitations', { token: org.token })).body).toEqual([]);

    const person = await ui.open(herald.url, null, pathOf(made.body.link));
    await person.getByRole('alert').getByText('This invitation was revoked').waitFor();
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
