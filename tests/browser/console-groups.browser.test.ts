import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s groups page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an empty list says what to do; a group is created, renamed and deleted', async () => {
    const page = await ui.open(herald.url, org.token, '/groups');
    await page.getByText('No groups yet').waitFor();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'New group' }).first().click();
    await page.getByLabel(/^Name/).fill('VIP customers');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('link', { name: 'VIP customers' }).waitFor();
    const listed = await api.get('/groups', { token: org.token });
    expect(listed.body.map((g: any) => g.name)).toEqual(['VIP customers']);
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Edit VIP customers' }).click();
    await page.getByLabel(/^Name/).fill('Gold customers');
    await page.getByRole('button', { name: 'Save group' }).click();
    await page.getByRole('link', { name: 'Gold customers' }).waitFor();

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete Gold customers' }).click();
    await page.getByText('No groups yet').waitFor();
    expect((await api.get('/groups', { token: org.token })).body).toEqual([]);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the keyboard alone reaches the page from the sidebar, opens the dialog and submits it', async () => {
    const page = await ui.open(herald.url, org.token, '/');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // Tab from the top of the page until the sidebar's Groups link has the focus, then follow it.
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)) === 'Groups') break;
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Groups' }).waitFor();
    await page.getByRole('button', { name: 'New group' }).first().focus();
    await page.keyboard.press('Enter');
    // The dialog puts the focus in its first field (once it has opened: keys typed before that are
    // lost, which a loaded machine showed); Enter submits the form.
    await page.getByRole('dialog').waitFor();
    await page.waitForFunction(() => (globalThis as any).document.activeElement?.tagName === 'INPUT');
    await page.keyboard.type('Keyboard people');
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'Keyboard people' }).waitFor();
    expect((await api.get('/groups', { token: org.token })).body.map((g: any) => g.name)).toContain('Keyboard people');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a server validation error lands next to the field it names', async () => {
    const page = await ui.open(herald.url, org.token, '/groups');
    await page.getByRole('button', { name: 'New group' }).first().click();
    await page.getByLabel(/^Name/).fill('x'.repeat(300));
    await page.getByRole('button', { name: 'Create group' }).click();
    const name = page.getByLabel(/^Name/);
    await page.locator('input[aria-invalid="true"]').waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await name.getAttribute('aria-describedby')) ?? '';
    const message = await page.locator(`[id="${describedBy.split(' ').find((id) => id.endsWith('-error'))}"]`).textContent();
    expect(message).toMatch(/name/i);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
