import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's contact import: a file picked and previewed in the browser, its columns mapped, the
 * import started and followed live on its page (the `contactImportProgress` subscription), its row
 * errors and counts, the list of past imports; files over 10 MB go to `POST /contacts/import` as
 * multipart/form-data. Set CONSOLE_SCREENSHOTS to a folder to keep screenshots of the pages.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let groupId: string;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true }));
  const cred = { token: org.token };
  const group = await api.post('/groups', { name: 'Newsletter', color: 'bg-blue-500' }, cred);
  groupId = group.body._id;
  const existing = await api.post('/contacts', { name: 'Old Name', email: 'existing.import@example.com', tags: ['kept'] }, cred);
  if (existing.status !== 201) throw new Error(`${existing.status} ${JSON.stringify(existing.body)}`);
}, 60_000);
afterAll(() => herald?.stop());

async function screenshot(page: Page, name: string) {
  const dir = process.env.CONSOLE_SCREENSHOTS;
  if (dir) await page.screenshot({ path: path.join(dir, `imports-${name}.png`), fullPage: true });
}

/**
 * Picks a file in the "CSV file" control, as a user does (through the file chooser). The file is
 * written to disk and handed over by path, as a user's file is: a buffer would travel to the page
 * base64-encoded, which for the 10 MB file took longer than an action's 15 s on a loaded CI
 * machine. The page reads the file when it needs it, so the files stay until the suite ends.
 */
let files: string;
beforeAll(async () => (files = await mkdtemp(path.join(os.tmpdir(), 'herald-import-'))));
afterAll(() => rm(files, { recursive: true, force: true }));
async function pickFile(page: Page, name: string, content: string | Buffer) {
  const file = path.join(files, name);
  await writeFile(file, content);
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: 'CSV file' }).click()]);
  await chooser.setFiles(file, { timeout: 60_000 });
}

const countOf = async (page: Page, label: string) => (await page.getByRole('group', { name: label }).locator('p').nth(1).textContent())?.trim();

const contactsOf = async (search: string) => (await api.get(`/contacts?search=${encodeURIComponent(search)}`, { token: org.token })).body as any[];

describeInBrowser('the console’s contact import', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a `;` file with a BOM is previewed, mapped, imported live, its counts and row errors shown', async () => {
    const page = await ui.open(herald.url, org.token, '/contacts');
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Import contacts' }).click();
    await page.getByRole('heading', { name: 'Import contacts' }).waitFor();
    await page.getByText('No imports yet').waitFor();
    await expectAccessible(page);

    const csv = [
      '\uFEFFName;E-mail;Phone Number;Plan;Notes',
      'Ada Import;ada.import@example.com;0712000001;gold;"likes; semicolons"',
      'Bad Address;not-an-email;;silver;',
      'New Name;EXISTING.IMPORT@example.com;;bronze;',
    ].join('\r\n');
    await pickFile(page, 'people.csv', csv);

    // The preview: the header and rows as the server will split them, the BOM gone.
    await page.getByRole('columnheader', { name: 'Name', exact: true }).waitFor();
    await page.getByRole('cell', { name: 'likes; semicolons' }).waitFor();
    expect(await page.getByRole('columnheader').allTextContents()).toEqual(['Name', 'E-mail', 'Phone Number', 'Plan', 'Notes']);
    expect(await page.getByLabel('Separator').inputValue()).toBe(';');

    // Targets chosen as the server reads headers; `Plan` is ignored until mapped to an attribute.
    expect(await page.getByLabel('Column Name').inputValue()).toBe('name');
    expect(await page.getByLabel('Column E-mail').inputValue()).toBe('email');
    expect(await page.getByLabel('Column Phone Number').inputValue()).toBe('phone');
    expect(await page.getByLabel('Column Plan').inputValue()).toBe('');
    expect(await page.getByLabel('Column Notes').inputValue()).toBe('');
    await page.getByLabel('Column Plan').selectOption({ label: 'Attribute…' });
    expect(await page.getByLabel(/^Attribute key for Plan/).inputValue()).toBe('plan');
    await page.getByLabel(/^Attribute key for Plan/).fill('plan');

    await page.getByRole('combobox', { name: 'Add to groups' }).click();
    await page.getByRole('option', { name: 'Newsletter' }).click();
    await page.keyboard.press('Escape');
    await page.getByRole('combobox', { name: 'Add tags' }).fill('imported');
    await page.keyboard.press('Enter');
    await expectAccessible(page);
    await screenshot(page, 'form');

    // An import of the organization already under way: this one waits its turn, so its page opens
    // on it queued and follows it to the end live (over the subscription), whatever the machine's speed.
    const blocker = ['name,email', ...Array.from({ length: 40_000 }, (_, i) => `Before ${i},before.${i}@example.com`)].join('\n');
    const ahead = await api.raw('POST', '/contacts/import', blocker, { token: org.token }, { 'content-type': 'text/csv' });
    expect(ahead.status).toBe(202);
    await waitFor(() => api.get(`/contact-imports/${ahead.body._id}`, { token: org.token }), (r) => r.body.status === 'running');
    await page.getByRole('button', { name: 'Start import' }).click();
    await page.waitForURL(/\/imports\/[0-9a-f-]{36}$/);
    const importId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'Import of people.csv' }).waitFor();
    await page.getByText('Waiting for a worker').waitFor();
    await page.getByRole('status', { name: 'Import status' }).getByText('completed').waitFor({ timeout: 60_000 });
    expect(await countOf(page, 'Created')).toBe('1');
    expect(await countOf(page, 'Updated')).toBe('1');
    expect(await countOf(page, 'Skipped')).toBe('0');
    expect(await countOf(page, 'Failed')).toBe('1');
    expect(await page.getByRole('progressbar', { name: 'Import progress' }).getAttribute('aria-valuenow')).toBe('100');
    await page.getByText('3 of 3 rows done').waitFor();
    const errorRow = page.getByRole('table', { name: 'Rows not imported' }).getByRole('row').nth(1);
    expect(await errorRow.getByRole('cell').allTextContents()).toEqual(['3', 'E-mail', 'E-mail must be a valid email']);
    expect(await page.getByRole('button', { name: 'Cancel import' }).count()).toBe(0);
    expect(sockets.some((u) => u.endsWith('/graphql'))).toBe(true);
    await expectAccessible(page);
    await screenshot(page, 'completed');

    // Stored as the page said: the attribute, the group, the tag; the existing contact updated, not doubled.
    const [ada] = await contactsOf('ada.import@');
    expect(ada).toMatchObject({ name: 'Ada Import', phone: '+254712000001', attributes: { plan: 'gold' }, groups: [groupId], tags: ['imported'] });
    expect(ada.attributes).not.toHaveProperty('Notes');
    const existing = await contactsOf('existing.import@');
    expect(existing).toHaveLength(1);
    expect(existing[0]).toMatchObject({ name: 'New Name', attributes: { plan: 'bronze' }, groups: [groupId], tags: ['kept', 'imported'] });
    const stored = (await api.get(`/contact-imports/${importId}`, { token: org.token })).body;
    expect(stored).toMatchObject({ fileName: 'people.csv', delimiter: ';', matchBy: 'email', groups: [groupId], tags: ['imported'] });
    expect(stored.columns.map((c: any) => c.field)).toEqual(['name', 'email', 'phone', 'attributes.plan', null]);

    // Listed among past imports, linking back to its page.
    await page.getByRole('link', { name: 'New import' }).click();
    await page.getByRole('link', { name: 'people.csv' }).click();
    await page.waitForURL(new RegExp(`/imports/${importId}$`));
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('the server’s refusal of a mapping is shown next to the columns', async () => {
    const page = await ui.open(herald.url, org.token, '/imports');
    await pickFile(page, 'no-address.csv', 'Name,Company,Plan\nAda,Acme,gold\n');
    await page.getByLabel('Column Company').waitFor();
    expect(await page.getByLabel('Column Company').inputValue()).toBe('organization');
    await page.getByLabel('Column Plan').selectOption({ label: 'Attribute…' });
    await page.getByLabel(/^Attribute key for Plan/).fill('bad key');
    await page.getByRole('button', { name: 'Start import' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The columns need a change' });
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/attribute keys must be 1-50 letters/);
    expect(await alert.textContent()).toMatch(/must send a column to email or phone/);
    await expectAccessible(page);
    await screenshot(page, 'refused');
    expect(page.url()).toMatch(/\/imports$/);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a file over 10 MB is uploaded to POST /contacts/import as multipart/form-data', async () => {
    const page = await ui.open(herald.url, org.token, '/imports');
    const uploads: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/contacts/import') uploads.push(r.headers()['content-type'] ?? '');
    });
    // 200 rows padded by an ignored column past the 10 MB that goes as GraphQL text.
    const pad = 'x'.repeat(55_000);
    const lines = ['name,email,notes', ...Array.from({ length: 200 }, (_, i) => `Big ${i},big.${i}@example.com,${pad}`)];
    const big = Buffer.from(lines.join('\n'));
    expect(big.length).toBeGreaterThan(10 * 1024 * 1024);
    await pickFile(page, 'big.csv', big);
    await page.getByLabel('Column notes').waitFor();
    await page.getByRole('button', { name: 'Start import' }).click();
    await page.waitForURL(/\/imports\/[0-9a-f-]{36}$/, { timeout: 30_000 });
    await page.getByRole('heading', { name: 'Import of big.csv' }).waitFor();
    await screenshot(page, 'big-started');
    await page.getByRole('status', { name: 'Import status' }).getByText('completed').waitFor({ timeout: 30_000 });
    expect(await countOf(page, 'Created')).toBe('200');
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatch(/^multipart\/form-data; boundary=/);
    expect((await contactsOf('big.199@'))[0]).toMatchObject({ name: 'Big 199', attributes: {} });
    expect(ui.problems()).toEqual([]);
  }, 150_000);

  test('a queued import is canceled from its page', async () => {
    const cred = { token: org.token };
    const upload = (csv: string) => api.raw('POST', '/contacts/import', csv, cred, { 'content-type': 'text/csv' });
    // An organization's imports run one at a time: a small one waits while a long one runs.
    const long = await upload(['name,email', ...Array.from({ length: 400_000 }, (_, i) => `Long ${i},long.${i}@example.com`)].join('\n'));
    expect(long.status).toBe(202);
    const waiting = await upload('name,email\nNever,never.imported@example.com\n');
    expect(waiting.status).toBe(202);

    const page = await ui.open(herald.url, org.token, `/imports/${waiting.body._id}`);
    await page.getByRole('status', { name: 'Import status' }).getByText('queued').waitFor();
    await page.getByText('Waiting for a worker to start it').waitFor();
    await page.getByRole('button', { name: 'Cancel import' }).click();
    await page.getByRole('dialog', { name: 'Cancel this import?' }).getByRole('button', { name: 'Cancel import' }).click();
    await page.getByRole('status', { name: 'Import status' }).getByText('canceled').waitFor();
    await page.getByText('The import was canceled').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel import' }).count()).toBe(0);
    await expectAccessible(page);
    expect((await api.get(`/contact-imports/${waiting.body._id}`, cred)).body.status).toBe('canceled');
    expect(await contactsOf('never.imported@')).toEqual([]);
    await api.post(`/contact-imports/${long.body._id}/cancel`, {}, cred);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a user-role caller has no import entry and is refused on its pages', async () => {
    const user = await addUser(api, org, 'user');
    const page = await ui.open(herald.url, user.token, '/contacts');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Contacts', exact: true }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Import contacts' }).count()).toBe(0);
    await page.goto(`${herald.url}/imports`);
    await page.getByText('Admins only').waitFor();
    expect(await page.getByRole('button', { name: 'CSV file' }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
