import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

/** The message of the error Mantine shows under `input` (through its `aria-describedby`). */
async function errorOf(page: import('playwright-core').Page, input: import('playwright-core').Locator): Promise<string | null> {
  const describedBy = (await input.getAttribute('aria-describedby')) ?? '';
  const id = describedBy.split(' ').find((x) => x.endsWith('-error'));
  return id ? page.locator(`[id="${id}"]`).textContent() : null;
}

describeInBrowser('the console’s contacts pages', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('empty states say what to do, for an admin and for a user', async () => {
    const page = await ui.open(herald.url, org.token, '/contacts');
    await page.getByText('No contacts yet').waitFor();
    await page.getByRole('button', { name: 'New contact' }).first().waitFor();
    await expectAccessible(page);

    await page.getByLabel(/^Tag/).fill('nobody');
    await page.getByText('No contacts match these filters').waitFor();
    expect(new URL(page.url()).searchParams.get('tag')).toBe('nobody');
    await page.getByRole('button', { name: 'Clear filters' }).first().click();
    await page.getByText('No contacts yet').waitFor();

    const user = await addUser(api, org, 'user');
    const userPage = await ui.open(herald.url, user.token, '/contacts');
    await userPage.getByText(/Ask an admin/).waitFor();
    expect(await userPage.getByRole('button', { name: 'New contact' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a contact is created with a group and an attribute, found, edited, unsubscribed and deleted', async () => {
    const vip = await api.post('/groups', { name: 'VIP', color: 'bg-blue-500' }, { token: org.token });
    expect(vip.status).toBe(201);
    await api.post('/contacts', { name: 'Bob Other', phone: '+254700000002' }, { token: org.token });

    const page = await ui.open(herald.url, org.token, '/contacts');
    await page.getByRole('link', { name: 'Bob Other' }).waitFor();
    await page.getByRole('button', { name: 'New contact' }).click();
    await page.getByLabel(/^Name/).fill('Ada Lovelace');
    await page.getByRole('textbox', { name: /^Email/ }).fill('ada@example.com');
    await page.getByRole('combobox', { name: 'Groups' }).click();
    await page.getByRole('option', { name: 'VIP' }).click();
    await page.keyboard.press('Escape');
    await page.getByLabel(/^Key/).fill('plan');
    await page.getByLabel(/^Value/).fill('pro');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create contact' }).click();
    await page.getByRole('link', { name: 'Ada Lovelace' }).waitFor();
    let listed = (await api.get('/contacts', { token: org.token })).body as any[];
    const ada = listed.find((c) => c.name === 'Ada Lovelace');
    expect(ada).toMatchObject({ email: 'ada@example.com', groups: [vip.body._id], attributes: { plan: 'pro' } });
    await expectAccessible(page);

    // Found by search; the group filter (the groups page's link) shows its members only.
    await page.getByLabel(/^Search/).fill('lovelace');
    await page.getByRole('link', { name: 'Bob Other' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'Ada Lovelace' }).waitFor();
    const byGroup = await ui.open(herald.url, org.token, `/contacts?group=${vip.body._id}`);
    await byGroup.getByRole('link', { name: 'Ada Lovelace' }).waitFor();
    expect(await byGroup.getByRole('link', { name: 'Bob Other' }).count()).toBe(0);
    expect(await byGroup.getByLabel(/^Group/, { exact: false }).first().inputValue()).toBe('VIP');

    // Edited: renamed, the attribute `plan` removed (sent as null), a number attribute added.
    await page.getByRole('button', { name: 'Edit Ada Lovelace' }).click();
    await page.getByLabel(/^Name/).fill('Ada King');
    await page.getByRole('button', { name: 'Remove attribute plan' }).click();
    await page.getByRole('button', { name: 'Add attribute' }).click();
    await page.getByLabel(/^Key/).fill('seats');
    await page.getByRole('combobox', { name: 'Type' }).click();
    await page.getByRole('option', { name: 'Number' }).click();
    await page.getByLabel(/^Value/).fill('3');
    // Her own time zone, picked by typing a city.
    await page.getByRole('combobox', { name: 'Time zone' }).fill('Dubai');
    await page.getByRole('option', { name: 'Asia/Dubai' }).click();
    await screenshot(page, 'contacts-edit-time-zone', { fullPage: false });
    await page.getByRole('button', { name: 'Save contact' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.getByLabel(/^Search/).fill('ada');
    await page.getByRole('link', { name: 'Ada King' }).click();

    // The contact's page: consent changed there, then the contact deleted.
    await page.getByRole('heading', { name: 'Ada King' }).waitFor();
    await page.getByRole('cell', { name: 'seats' }).waitFor();
    await page.getByRole('row', { name: 'Time zone Asia/Dubai' }).waitFor();
    await screenshot(page, 'contacts-page-time-zone', { fullPage: false });
    let stored = (await api.get(`/contacts/${ada._id}`, { token: org.token })).body;
    expect(stored.attributes).toEqual({ seats: 3 });
    expect(stored.timezone).toBe('Asia/Dubai');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Unsubscribe from SMS' }).click();
    await page.getByRole('button', { name: 'Resubscribe to SMS' }).waitFor();
    stored = (await api.get(`/contacts/${ada._id}`, { token: org.token })).body;
    expect(stored.subscriptions.sms).toMatchObject({ status: 'unsubscribed', source: 'api' });
    expect(stored.subscriptions.email.status).toBe('subscribed');

    await page.getByRole('button', { name: 'Remove from VIP' }).click();
    await page.getByText('In no group yet').waitFor();
    expect((await api.get(`/contacts/${ada._id}`, { token: org.token })).body.groups).toEqual([]);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete contact' }).click();
    await page.waitForURL(/\/contacts$/);
    await page.getByRole('link', { name: 'Bob Other' }).waitFor();
    listed = (await api.get('/contacts', { token: org.token })).body as any[];
    expect(listed.map((c) => c.name)).toEqual(['Bob Other']);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('an admin downloads everything Herald holds about a contact, as the API gives it', async () => {
    const contact = (await api.post('/contacts', { name: 'Wanjiru Data', email: 'wanjiru.data@example.com', phone: '0712399001' }, { token: org.token })).body;
    expect((await api.post('/notifications/send', { type: 'sms', to: ['0712399001', '0712399002'], message: 'Your parcel' }, { token: org.token })).status).toBe(200);
    const page = await ui.open(herald.url, org.token, `/contacts/${contact._id}`);
    await page.getByRole('heading', { name: 'Wanjiru Data' }).waitFor();
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download data' }).click()]);
    expect(file.suggestedFilename()).toBe('wanjiru-data-data.json');
    const chunks: Buffer[] = [];
    for await (const chunk of (await file.createReadStream())!) chunks.push(chunk as Buffer);
    const doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    expect(doc.subject).toEqual({ contactId: contact._id, addresses: ['wanjiru.data@example.com', '+254712399001'] });
    expect(doc.messages.map((m: any) => m.recipients.map((r: any) => r.recipient))).toEqual([['+254712399001']]);
    expect(JSON.stringify(doc)).not.toContain('+254712399002');
    await expectAccessible(page);

    const user = await addUser(api, org, 'user');
    const memberPage = await ui.open(herald.url, user.token, `/contacts/${contact._id}`);
    await memberPage.getByRole('heading', { name: 'Wanjiru Data' }).waitFor();
    expect(await memberPage.getByRole('button', { name: 'Download data' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('an admin erases a person after typing their name; the erasure is queued and the list says so', async () => {
    const contact = (await api.post('/contacts', { name: 'Achieng Forget', email: 'achieng.forget@example.com' }, { token: org.token })).body;
    const page = await ui.open(herald.url, org.token, `/contacts/${contact._id}`);
    await page.getByRole('heading', { name: 'Achieng Forget' }).waitFor();
    await page.getByRole('button', { name: 'Erase person' }).click();
    const dialog = page.getByRole('dialog', { name: 'Erase Achieng Forget?' });
    await dialog.waitFor();
    const erase = dialog.getByRole('button', { name: 'Erase', exact: true });
    expect(await erase.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Achieng Forget to confirm').fill('Achieng');
    expect(await erase.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Achieng Forget to confirm').fill('Achieng Forget');
    await expectAccessible(page);
    await screenshot(page, 'contact-erase-dialog', { fullPage: false });
    await erase.click();
    await page.waitForURL('**/contacts');
    await page.getByRole('status').filter({ hasText: 'Achieng Forget is being erased' }).waitFor();
    const erasures = (await api.get('/erasures', { token: org.token })).body as { contactId: string; status: string; tokens: string[] }[];
    expect(erasures).toEqual([expect.objectContaining({ contactId: contact._id, status: 'pending' })]);
    expect(JSON.stringify(erasures)).not.toContain('achieng.forget@example.com');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a server validation error lands next to the field it names', async () => {
    const page = await ui.open(herald.url, org.token, '/contacts');
    await page.getByRole('button', { name: 'New contact' }).first().click();
    await page.getByLabel(/^Name/).fill('Bad Address');
    await page.getByRole('textbox', { name: /^Email/ }).fill('not-an-email');
    await page.getByRole('button', { name: 'Create contact' }).click();
    const email = page.getByRole('textbox', { name: /^Email/ });
    await page.locator('input[aria-invalid="true"]').first().waitFor();
    expect(await email.getAttribute('aria-invalid')).toBe('true');
    expect(await errorOf(page, email)).toMatch(/email/i);
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
