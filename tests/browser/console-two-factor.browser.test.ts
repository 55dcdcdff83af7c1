import { generate } from 'otplib';
import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Two-factor authentication in the console: set up on the profile page (the QR code drawn in the
 * page, the secret read from it and its code computed here with otplib), the second step of the
 * login page with an app code and with a recovery code, and the organization's requirement, which
 * sends a member without it to their profile until they have set it up. The server's TOTP clock is a
 * fake one (`deps.clock`) that the test moves a step at a time, so every code is exact.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

let now = Date.UTC(2032, 1, 3, 4, 5, 10);
const nextStep = () => {
  now += 30_000;
  herald.deps.clock = () => new Date(now);
};
const code = (secret: string) => generate({ secret, epoch: Math.floor(now / 1000) });

/** Sets up two-factor authentication on the profile page shown; answers the secret and the recovery codes. */
async function setUp(page: Page): Promise<{ secret: string; recoveryCodes: string[] }> {
  const section = page.getByRole('region', { name: 'Two-factor authentication' });
  await section.getByRole('button', { name: 'Set up two-factor authentication' }).click();
  const qr = section.getByRole('img', { name: 'QR code to scan with your authenticator app' });
  await qr.waitFor();
  expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
  const secret = (await section.getByText(/^[A-Z2-7]{32}$/).textContent())!;
  nextStep();
  await section.getByLabel(/^Verification code/).fill('000000');
  await section.getByRole('button', { name: 'Verify and turn on' }).click();
  await section.getByText(/^code is not a valid authentication code/).waitFor();
  await section.getByLabel(/^Verification code/).fill(await code(secret));
  await section.getByRole('button', { name: 'Verify and turn on' }).click();
  await section.getByText('Save your recovery codes').waitFor();
  await section.getByRole('button', { name: 'Copy recovery codes' }).waitFor();
  const recoveryCodes = (await section.getByText(/^[a-z2-7]{4}-/).textContent())!.split('\n');
  expect(recoveryCodes).toHaveLength(10);
  await section.getByRole('button', { name: 'I have saved my recovery codes' }).click();
  await section.getByText(/^Two-factor authentication is on since .*10 of 10 recovery codes left\.$/).waitFor();
  return { secret, recoveryCodes };
}

async function logInWithCode(page: Page, email: string, password: string, secondFactor: string) {
  await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
  await page.getByLabel(/^Email/).fill(email);
  await page.getByLabel(/^Password/).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByLabel(/^Authentication code/).fill(secondFactor);
  await page.getByRole('button', { name: 'Verify' }).click();
}

describeInBrowser('two-factor authentication in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());
  afterEach(() => delete herald.deps.clock);

  test('an admin sets it up on the profile page, logs out, and logs in again with a code, then with a recovery code', async () => {
    nextStep();
    const page = await ui.open(herald.url, org.token, '/profile');
    await page.getByText(org.email).waitFor();
    const { secret, recoveryCodes } = await setUp(page);
    await expectAccessible(page);
    expect((await api.get('/users/me/two-factor', { token: org.token })).body.enabled).toBe(true);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in to Herald' }).waitFor();
    nextStep();
    await logInWithCode(page, org.email, org.password, '123456');
    await page.getByRole('alert').getByText('Invalid authentication code').waitFor();
    await expectAccessible(page);
    await page.getByLabel(/^Authentication code/).fill(await code(secret));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(new URL(page.url()).pathname).not.toBe('/login');

    await page.getByRole('button', { name: 'Log out' }).click();
    await logInWithCode(page, org.email, org.password, recoveryCodes[0]!.toUpperCase());
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Profile' }).click();
    await page.getByText(/9 of 10 recovery codes left/).waitFor();
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('an admin requires it; a member without it is taken to their profile until they set it up', async () => {
    const admin = await ui.open(herald.url, org.token, '/settings/team');
    const toggle = admin.getByRole('switch', { name: 'Require two-factor authentication' });
    await toggle.waitFor();
    expect(await toggle.isChecked()).toBe(false);
    await toggle.click();
    await admin.getByText('Every member must use two-factor authentication.').waitFor();
    expect((await api.get('/organizations/current', { token: org.token })).body.requireTwoFactor).toBe(true);
    await expectAccessible(admin);

    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/contacts');
    await page.waitForURL(/\/profile$/);
    await page.getByRole('alert').getByText(/Your organization requires two-factor authentication/).waitFor();
    await expectAccessible(page);
    nextStep();
    await setUp(page);
    await page.getByRole('link', { name: 'Contacts' }).click();
    await page.getByRole('heading', { name: 'Contacts' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/contacts');
    // It can not be turned off while required.
    await page.getByRole('link', { name: 'Profile' }).click();
    await page.getByText(/it can not be turned off/).waitFor();
    expect(await page.getByRole('button', { name: 'Turn off two-factor authentication' }).count()).toBe(0);

    await toggle.click();
    await admin.getByText('Two-factor authentication is up to each member.').waitFor();
    const lifted = await waitFor(() => api.get('/organizations/current', { token: org.token }), (r) => r.body.requireTwoFactor === false);
    expect(lifted.body.requireTwoFactor).toBe(false);
    expect(ui.problems()).toEqual([]);
  }, 90_000);
});
