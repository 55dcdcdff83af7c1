import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * Composing a campaign in the console: the live preview beside the form, rendered by the server
 * for a chosen contact as the user types; the variable menu built from the organization's
 * attribute keys; the email's rich-text editor (bold shown bold in the sandboxed preview, Liquid
 * kept through the editor, block tags kept in Source); a saved template copied in to edit; and
 * the test send's warning for an address that is not a contact. Screenshots go to
 * CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let ann: any;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  const cred = { token: org.token };
  ann = (await api.post('/contacts', { name: 'Ann Wanjiru', phone: '+254711000001', email: 'ann@example.com', attributes: { plan: 'gold', points: 120 } }, cred)).body;
  // The newest contact: the first of the list, which the preview starts with.
  await api.post('/contacts', { name: 'Bob Otieno', phone: '+254711000002', attributes: { city: 'Kisumu' } }, cred);
  await api.post('/templates', { name: 'Spring newsletter', channel: 'email', subject: 'Spring at {{ organization.name }}', content: '<p>Dear {{ contact.name }}, spring is here.</p>' }, cred);
}, 60_000);
afterAll(() => herald?.stop());

/** The rendered email's document in its sandboxed frame. */
const emailFrame = (page: Page) => page.frameLocator('iframe[title="Email preview"]');

async function choosePreviewContact(page: Page, name: string) {
  const picker = page.getByRole('combobox', { name: 'Preview for' });
  await picker.fill(name.split(' ')[0]!);
  await page.getByRole('option', { name: new RegExp(name) }).click();
}

describeInBrowser('composing a campaign in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('the preview follows the text as it is typed, for the chosen contact; variables come from a menu of real attribute keys', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Spring sale');
    const text = page.getByLabel(/^SMS text/);
    const preview = page.getByRole('group', { name: 'SMS preview' });

    // Before anything is saved: the first contact (Bob, the newest), then Ann once chosen.
    await text.fill('Hello {{ contact.firstName }}, the spring sale is on');
    await preview.getByText('Hello Bob, the spring sale is on').waitFor();
    await choosePreviewContact(page, 'Ann Wanjiru');
    await preview.getByText('Hello Ann, the spring sale is on').waitFor();
    await text.pressSequentially(' for', { delay: 20 });
    await preview.getByText('Hello Ann, the spring sale is on for').waitFor();

    // The menu lists the contact fields and the organization's attribute keys; the pick lands at the caret.
    await text.press('End');
    await text.press('Space');
    await page.getByRole('button', { name: 'Insert variable into SMS text' }).click();
    for (const key of ['city', 'plan', 'points']) await page.getByRole('menuitem', { name: new RegExp(`contact\\.attributes\\.${key}\\b`) }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'composer-variable-menu', { fullPage: false });
    await page.getByRole('menuitem', { name: /contact\.attributes\.plan/ }).click();
    expect(await text.inputValue()).toBe('Hello {{ contact.firstName }}, the spring sale is on for {{ contact.attributes.plan }}');
    await preview.getByText('Hello Ann, the spring sale is on for gold').waitFor();
    await page.getByText('1 segment').waitFor();

    // Bob has no plan: the preview says which variable is empty for him.
    await choosePreviewContact(page, 'Bob Otieno');
    await preview.getByText('Hello Bob, the spring sale is on for').waitFor();
    const empty = page.getByRole('status').filter({ hasText: 'Empty for Bob Otieno' });
    await empty.getByText('contact.attributes.plan').waitFor();
    await expectAccessible(page);
    await screenshot(page, 'composer-live-preview');

    // Nothing was saved while previewing.
    expect((await api.get('/campaigns', { token: org.token })).body).toEqual([]);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('the email editor: bold shows bold in the sandboxed preview, Liquid survives the editor, block tags stay in Source', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Spring email');
    await page.getByRole('checkbox', { name: 'SMS' }).uncheck();
    await page.getByRole('checkbox', { name: 'Email' }).check();
    await choosePreviewContact(page, 'Ann Wanjiru');
    await page.getByLabel(/^Subject/).fill('News for ');
    await page.getByRole('button', { name: 'Insert variable into Subject' }).click();
    await page.getByRole('menuitem', { name: /contact\.firstName/ }).click();
    expect(await page.getByLabel(/^Subject/).inputValue()).toBe('News for {{ contact.firstName }}');

    const editor = page.getByRole('textbox', { name: 'Email text' });
    await editor.click();
    await page.keyboard.type('Our sale starts ');
    await page.getByRole('button', { name: 'Bold', exact: true }).click();
    await page.keyboard.type('this Friday');
    await page.getByRole('button', { name: 'Bold', exact: true }).click();
    await page.keyboard.type(', ');
    await page.getByRole('button', { name: 'Insert variable into Email text' }).click();
    await page.getByRole('menuitem', { name: /contact\.firstName/ }).click();

    await page.getByRole('group', { name: 'Email preview' }).getByText('News for Ann').waitFor();
    // The last render first: each one loads the frame anew.
    await emailFrame(page).getByText('Our sale starts this Friday, Ann').waitFor();
    const bold = emailFrame(page).locator('strong', { hasText: 'this Friday' });
    expect(Number(await bold.evaluate((el) => (globalThis as any).getComputedStyle(el).fontWeight))).toBeGreaterThanOrEqual(700);
    expect(await page.locator('iframe[title="Email preview"]').getAttribute('sandbox')).toBe('');
    await expectAccessible(page);
    await screenshot(page, 'composer-email-editor');

    // Source shows the HTML the editor wrote, Liquid as typed.
    await page.getByText('Source', { exact: true }).click();
    const source = page.getByRole('textbox', { name: 'Email text' });
    expect(await source.inputValue()).toBe('<p>Our sale starts <strong>this Friday</strong>, {{ contact.firstName }}</p>');

    // Liquid inside paragraphs, comparisons and filters included, comes back from the editor unchanged.
    const inline = '<p>Hi {{ contact.firstName | default: "there" }}, {% if contact.attributes.points > 100 %}<strong>VIP</strong>{% else %}friend{% endif %} &amp; welcome</p><ul><li>{{ contact.attributes.plan }} plan</li></ul>';
    await source.fill(inline);
    await page.getByText('Rich text', { exact: true }).click();
    await page.getByRole('toolbar', { name: 'Email text formatting' }).waitFor();
    // The caret at the very start of the first paragraph.
    await editor.locator('p').first().click({ position: { x: 1, y: 4 } });
    await page.keyboard.press('Home');
    await page.keyboard.type('Good news! ');
    await page.getByText('Source', { exact: true }).click();
    // The editor's own HTML (a list item's text in a paragraph), every Liquid tag as it was.
    expect(await page.getByRole('textbox', { name: 'Email text' }).inputValue()).toBe(
      '<p>Good news! Hi {{ contact.firstName | default: "there" }}, {% if contact.attributes.points > 100 %}<strong>VIP</strong>{% else %}friend{% endif %} &amp; welcome</p><ul><li><p>{{ contact.attributes.plan }} plan</p></li></ul>',
    );
    await emailFrame(page).getByText('Good news! Hi Ann, VIP & welcome').waitFor();
    await emailFrame(page).getByText('gold plan').waitFor();

    // A Liquid tag around whole paragraphs would be rewritten by the editor: it stays in Source, and says so.
    const blocks = '<p>Hello {{ contact.firstName }}</p>\n{% if contact.attributes.plan == "gold" %}\n<p>Your gold offer</p>\n{% endif %}';
    await page.getByRole('textbox', { name: 'Email text' }).fill(blocks);
    await page.getByText('Rich text', { exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'This HTML stays in Source' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Email text' }).inputValue()).toBe(blocks);
    await emailFrame(page).getByText('Your gold offer').waitFor();
    await choosePreviewContact(page, 'Bob Otieno');
    await emailFrame(page).getByText('Hello Bob').waitFor();
    expect(await emailFrame(page).getByText('Your gold offer').count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'composer-email-source');

    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('heading', { name: 'Spring email' }).waitFor();
    const [created] = (await api.get('/campaigns', { token: org.token })).body;
    const saved = (await api.get(`/campaigns/${created._id}`, { token: org.token })).body;
    expect(saved.messages.email).toMatchObject({ subject: 'News for {{ contact.firstName }}', content: blocks });
    // The campaign's page draws its email the same way.
    await emailFrame(page).getByText(/^Hello (Ann|Bob)$/).waitFor();
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('a saved template is sent as it is or copied in to edit', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByRole('checkbox', { name: 'SMS' }).uncheck();
    await page.getByRole('checkbox', { name: 'Email' }).check();
    await page.getByRole('combobox', { name: 'Email template' }).click();
    await page.getByRole('option', { name: 'Spring newsletter' }).click();
    // Previewed as chosen, before it is copied.
    await emailFrame(page).getByText('Dear Bob Otieno, spring is here.').waitFor();
    await page.getByRole('button', { name: 'Edit a copy of Spring newsletter' }).click();
    expect(await page.getByLabel(/^Subject/).inputValue()).toBe('Spring at {{ organization.name }}');
    const editor = page.getByRole('textbox', { name: 'Email text' });
    await editor.getByText('spring is here.').waitFor();
    await editor.click();
    await page.keyboard.press('ControlOrMeta+End');
    await page.keyboard.type(' See you soon.');
    await emailFrame(page).getByText('Dear Bob Otieno, spring is here. See you soon.').waitFor();
    expect(await page.getByRole('combobox', { name: 'Email template' }).inputValue()).toBe('');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a test send to an address that is not a contact warns which variables will be empty, and asks first', async () => {
    const created = await api.post(
      '/campaigns',
      { name: 'Test warning', type: 'targeted', channels: ['sms'], recipients: { contacts: [ann._id] }, messages: { sms: { content: 'Hello {{ contact.firstName }}, the spring sale is on' } } },
      { token: org.token },
    );
    const page = await ui.open(herald.url, org.token, `/campaigns/${created.body._id}`);
    const recipients = page.getByRole('combobox', { name: 'Test recipients' });
    await recipients.fill('+254799000123');
    await recipients.press('Enter');
    await page.getByRole('button', { name: 'Send test' }).click();
    const warning = page.getByRole('alert').filter({ hasText: 'Some variables will be empty' });
    await warning.getByText('+254799000123 is not a contact').waitFor();
    await warning.getByText('contact.firstName').waitFor();
    await warning.getByText('It would read: “Hello , the spring sale is on”').waitFor();
    expect((await api.get(`/message-logs?campaignId=${created.body._id}`, { token: org.token })).body).toEqual([]);
    await expectAccessible(page);
    await screenshot(page, 'composer-test-send-warning');
    await warning.getByRole('button', { name: 'Send anyway' }).click();
    await page.getByText('1 sent, 0 failed').waitFor();

    // A contact's address renders as that contact: nothing to warn of, it is sent at once.
    const again = await ui.open(herald.url, org.token, `/campaigns/${created.body._id}`);
    await again.getByRole('combobox', { name: 'Test recipients' }).fill(ann.phone);
    await again.getByRole('combobox', { name: 'Test recipients' }).press('Enter');
    await again.getByRole('button', { name: 'Send test' }).click();
    await again.getByText('1 sent, 0 failed').waitFor();
    expect(await again.getByRole('alert').filter({ hasText: 'Some variables will be empty' }).count()).toBe(0);
    const outbox = (await api.get('/sandbox/outbox?limit=100', { token: org.token })).body as any[];
    expect(outbox.find((m) => m.recipient === ann.phone)?.body).toBe('Hello Ann, the spring sale is on');
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
