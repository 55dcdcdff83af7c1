import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's send page: an ad hoc SMS to a contact (picked by name) and a raw address, the result
 * per recipient with a link to its message log, and the server's field errors next to their fields.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  const res = await api.post('/contacts', { name: 'Ann Wanjiru', phone: '+254711000001', email: 'ann@example.com' }, { token: org.token });
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
}, 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s send page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('an SMS to a contact and an address shows each recipient’s result', async () => {
    const page = await ui.open(herald.url, org.token, '/send');
    await page.getByRole('heading', { name: 'Send' }).waitFor();
    await page.getByText(/Your balance: 100 credits/).waitFor();
    await expectAccessible(page);

    await page.getByRole('radio', { name: 'SMS' }).check();
    await page.getByRole('combobox', { name: 'Contacts' }).fill('Ann');
    await page.getByRole('option', { name: /Ann Wanjiru/ }).click();
    await page.keyboard.press('Escape');
    const others = page.getByRole('combobox', { name: 'Other addresses' });
    await others.fill('12');
    await others.press('Enter');
    await page.getByLabel(/^Message/).fill('Your code is 4321. {{ organization.name }}');
    await page.getByText('2 recipients').waitFor();
    await page.getByRole('button', { name: 'Send message' }).click();

    const results = page.getByRole('table', { name: 'Result per recipient' });
    await page.getByText('1 sent, 1 failed').waitFor();
    await results.getByRole('row', { name: /\+254711000001/ }).getByText('sent').waitFor();
    await results.getByRole('row', { name: /^12 / }).getByText('failed').waitFor();
    const logLink = results.getByRole('link', { name: 'Open log of +254711000001' });
    await logLink.waitFor();

    const logs = (await api.get('/message-logs', { token: org.token })).body;
    expect(logs).toHaveLength(1);
    expect(logs[0].recipients).toEqual(expect.arrayContaining([expect.objectContaining({ recipient: '+254711000001', status: 'success' })]));
    expect(await logLink.getAttribute('href')).toBe(`/message-logs/${logs[0]._id}`);
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a Liquid syntax error lands next to the message, with its line and column', async () => {
    const page = await ui.open(herald.url, org.token, '/send');
    const others = page.getByRole('combobox', { name: 'Other addresses' });
    await others.fill('+254711000002');
    await others.press('Enter');
    await page.getByLabel(/^Message/).fill('Hi {{ contact.phone');
    await page.getByRole('button', { name: 'Send message' }).click();
    const message = page.getByLabel(/^Message/);
    await page.locator('textarea[aria-invalid="true"]').waitFor();
    const describedBy = (await message.getAttribute('aria-describedby')) ?? '';
    const error = await page.locator(`[id="${describedBy.split(' ').find((id) => id.endsWith('-error'))}"]`).textContent();
    expect(error).toMatch(/line 1, column 4/);
    await expectAccessible(page);
    expect((await api.get('/message-logs', { token: org.token })).body).toHaveLength(1);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
