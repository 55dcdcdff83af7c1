import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()), 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s templates page', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a template is created (a Liquid error shown on its field first), edited and deleted', async () => {
    const page = await ui.open(herald.url, org.token, '/templates');
    await page.getByText('No templates yet').waitFor();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'New template' }).first().click();
    await page.getByLabel(/^Name/).fill('Welcome');
    await page.getByLabel(/^Subject/).fill('Hello {{ contact.name }}');
    const content = page.getByLabel(/^Content/);
    await content.fill('Hi {{ contact.name');
    await page.getByRole('button', { name: 'Create template' }).click();
    await page.locator('textarea[aria-invalid="true"]').waitFor();
    const describedBy = (await content.getAttribute('aria-describedby')) ?? '';
    const message = await page.locator(`[id="${describedBy.split(' ').find((id) => id.endsWith('-error'))}"]`).textContent();
    expect(message).toMatch(/line 1, column 4/);
    await page.getByRole('button', { name: 'Go to line 1, column 4' }).waitFor();
    await expectAccessible(page);

    await content.fill('Hi {{ contact.name }}, welcome to {{ organization.name }}.');
    await page.getByRole('button', { name: 'Create template' }).click();
    await page.getByRole('cell', { name: 'Welcome', exact: true }).waitFor();
    let listed = (await api.get('/templates', { token: org.token })).body as any[];
    expect(listed).toMatchObject([{ name: 'Welcome', channel: 'email', subject: 'Hello {{ contact.name }}' }]);
    await expectAccessible(page);

    // Moved to SMS: the subject goes (sent as null).
    await page.getByRole('button', { name: 'Edit Welcome' }).click();
    await page.getByLabel(/^Name/).fill('Welcome SMS');
    await page.getByRole('combobox', { name: /^Channel/ }).click();
    await page.getByRole('option', { name: 'SMS' }).click();
    await page.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('cell', { name: 'Welcome SMS', exact: true }).waitFor();
    listed = (await api.get('/templates', { token: org.token })).body as any[];
    expect(listed).toMatchObject([{ name: 'Welcome SMS', channel: 'sms', subject: null }]);

    // A user reads templates but sees no admin action.
    const user = await addUser(api, org, 'user');
    const userPage = await ui.open(herald.url, user.token, '/templates');
    await userPage.getByRole('button', { name: 'View Welcome SMS' }).click();
    await userPage.getByRole('dialog', { name: 'Welcome SMS' }).waitFor();
    expect(await userPage.getByRole('button', { name: /^(New template|Edit|Delete)/ }).count()).toBe(0);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete Welcome SMS' }).click();
    await page.getByText('No templates yet').waitFor();
    expect((await api.get('/templates', { token: org.token })).body).toEqual([]);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
