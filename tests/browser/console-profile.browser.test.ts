import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/** The console's profile page: the signed-in user's details and password. */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s profile page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an admin changes their name, then their password, and stays signed in', async () => {
    const page = await ui.open(herald.url, org.token, '/profile');
    await page.getByText(org.email).waitFor();
    await expectAccessible(page);

    await page.getByLabel(/^First name/).fill('Augusta');
    await page.getByRole('button', { name: 'Save details' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    expect((await api.get('/users/me', { token: org.token })).body.firstName).toBe('Augusta');

    await page.getByLabel(/^Current password/).fill('not my password');
    await page.getByLabel(/^New password/).fill('a brand new password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').getByText('Old password is incorrect').waitFor();

    await page.getByLabel(/^Current password/).fill(org.password);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText(/^Password changed/).waitFor();
    const login = await api.post('/auth/login', { email: org.email, password: 'a brand new password' });
    expect(login.status).toBe(200);
    expect((await api.post('/auth/login', { email: org.email, password: org.password })).status).toBe(401);
    // The session opened before the change has ended; the console signed in again with the new password.
    expect((await api.get('/users/me', { token: org.token })).status).toBe(401);
    org = { ...org, token: login.body.token, password: 'a brand new password' };
    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('heading', { name: 'Groups' }).waitFor();
    expect(page.url()).toMatch(/\/groups$/);
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role member sees their details read-only and can change their password', async () => {
    const member = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, member.token, '/profile');
    await page.getByText(member.email).waitFor();
    await page.getByText('An admin of your organization can change your name and phone number.').waitFor();
    expect(await page.getByLabel(/^First name/).getAttribute('readonly')).not.toBeNull();
    expect(await page.getByRole('button', { name: 'Save details' }).count()).toBe(0);
    await expectAccessible(page);

    await page.getByLabel(/^Current password/).fill(member.password);
    await page.getByLabel(/^New password/).fill('my own new password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText(/^Password changed/).waitFor();
    expect((await api.post('/auth/login', { email: member.email, password: 'my own new password' })).status).toBe(200);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
