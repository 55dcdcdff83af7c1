import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { addUser, heraldWithOrg, type Client, type Credential, type Org } from '../helpers/herald.js';

/** The contacts page's export (a CSV download) and bulk actions (selection, menu, confirmation, result). */

let herald: Herald, api: Client, org: Org, admin: Credential;
let ui: ConsoleBrowser;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  admin = { token: org.token };
}, 60_000);
afterAll(() => herald?.stop());

async function contact(body: Record<string, unknown>) {
  const res = await api.post('/contacts', body, admin);
  if (res.status !== 201) throw new Error(`contact: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

describeInBrowser('the console’s contacts export and bulk actions', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('Export CSV downloads the contacts the filters match', async () => {
    const vip = (await api.post('/groups', { name: 'VIP', color: 'bg-blue-500' }, admin)).body;
    await contact({ name: 'Ada Export', email: 'ada.export@example.com', tags: ['gold'], groups: [vip._id], attributes: { plan: 'pro' } });
    await contact({ name: 'Bob Export', phone: '+254700000101', tags: ['gold'] });
    await contact({ name: 'Cy Other', phone: '+254700000102' });

    const page = await ui.open(herald.url, org.token, '/contacts?tag=gold');
    await page.getByRole('link', { name: 'Ada Export' }).waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^contacts-\d{4}-\d{2}-\d{2}\.csv$/);
    const [header, ...rows] = parse(await readFile((await download.path())!, 'utf8')) as string[][];
    const at = (name: string) => header!.indexOf(name);
    expect(rows.map((r) => r[at('name')]).sort()).toEqual(['Ada Export', 'Bob Export']);
    const ada = rows.find((r) => r[at('name')] === 'Ada Export')!;
    expect({ groups: ada[at('groups')], plan: ada[at('attributes.plan')], email: ada[at('email')] }).toEqual({ groups: 'VIP', plan: 'pro', email: 'ada.export@example.com' });
    // The page is still the list: the download did not navigate away.
    await page.getByRole('link', { name: 'Ada Export' }).waitFor();

    // A user (who can not change contacts) exports too, and sees no selection or bulk actions.
    const user = await addUser(api, org, 'user');
    const userPage = await ui.open(herald.url, user.token, '/contacts');
    await userPage.getByRole('link', { name: 'Cy Other' }).waitFor();
    const [userDownload] = await Promise.all([userPage.waitForEvent('download'), userPage.getByRole('button', { name: 'Export CSV' }).click()]);
    expect((parse(await readFile((await userDownload.path())!, 'utf8')) as string[][]).length).toBe(1 + 3);
    expect(await userPage.getByRole('button', { name: 'Bulk actions' }).count()).toBe(0);
    expect(await userPage.getByRole('checkbox', { name: /^Select/ }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('two selected contacts are added to a group through Bulk actions, confirmed by name and count', async () => {
    const team = (await api.post('/groups', { name: 'Team', color: 'bg-green-500' }, admin)).body;
    const [dee, eve] = [await contact({ name: 'Dee Bulk', phone: '+254700000201' }), await contact({ name: 'Eve Bulk', phone: '+254700000202' })];
    await contact({ name: 'Fay Bulk', phone: '+254700000203' });

    const page = await ui.open(herald.url, org.token, '/contacts?q=bulk');
    await page.getByRole('link', { name: 'Fay Bulk' }).waitFor();
    await page.getByRole('checkbox', { name: 'Select Dee Bulk' }).check();
    await page.getByRole('checkbox', { name: 'Select Eve Bulk' }).check();
    await page.getByText('2 contacts selected').waitFor();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Bulk actions' }).click();
    await page.getByRole('menuitem', { name: /Add to group/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Add to group' });
    await dialog.getByRole('radio', { name: 'The 2 contacts selected' }).waitFor();
    expect(await dialog.getByRole('radio', { name: 'The 2 contacts selected' }).isChecked()).toBe(true);
    await dialog.getByLabel(/^Group/).click();
    await page.getByRole('option', { name: 'Team' }).click();
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Add 2 contacts to Team' }).click();

    await page.getByRole('status').getByText('2 contacts added to Team.').waitFor();
    await page.getByText('Select contacts, or act on all that match the filters').waitFor();
    const members = (await api.get(`/contacts?group=${team._id}`, admin)).body.map((c: any) => c._id).sort();
    expect(members).toEqual([dee._id, eve._id].sort());
    // The list shows the new memberships.
    await page.getByRole('row', { name: /Dee Bulk/ }).getByText('Team').waitFor();
    await expectAccessible(page);

    // Every contact matching the filter: the page's header checkbox is not needed for it.
    await page.getByRole('button', { name: 'Bulk actions' }).click();
    await page.getByRole('menuitem', { name: /Add tag/ }).click();
    const tagDialog = page.getByRole('dialog', { name: 'Add tag' });
    expect(await tagDialog.getByRole('radio', { name: 'All 3 contacts matching the filters' }).isChecked()).toBe(true);
    await tagDialog.getByRole('textbox', { name: /^Tag/ }).fill('bulk-tagged');
    await tagDialog.getByRole('button', { name: 'Tag 3 contacts bulk-tagged' }).click();
    await page.getByRole('status').getByText('3 contacts tagged bulk-tagged.').waitFor();
    expect((await api.get('/contacts?tag=bulk-tagged', admin)).body).toHaveLength(3);

    // Select the page, then deleting asks first and names the count.
    await page.getByRole('checkbox', { name: 'Select all contacts on this page' }).check();
    await page.getByText('3 contacts selected').waitFor();
    await page.getByRole('button', { name: 'Bulk actions' }).click();
    await page.getByRole('menuitem', { name: /Delete/ }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete' });
    await deleteDialog.getByText('This can not be undone').waitFor();
    await deleteDialog.getByRole('button', { name: 'Delete 3 contacts' }).click();
    await page.getByRole('status').getByText('3 contacts deleted.').waitFor();
    await page.getByText('No contacts match these filters').waitFor();
    await page.screenshot({ path: '/tmp/console-contacts-bulk.png', fullPage: true });
    expect(ui.problems()).toEqual([]);
  }, 90_000);
});
