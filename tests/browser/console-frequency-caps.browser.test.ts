import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Frequency caps in the console: the organization's caps on the Sending hours page (saved, read
 * back through the API, refused next to the figure the server names), a campaign's estimate before
 * launch (whom the caps leave out; with sending hours, how many wait and when each zone gets it, and
 * when the previewed recipient would), a launch that leaves capped addresses out with its Capped
 * counter on the campaign's page, and a campaign composed as exempt from the caps. Small campaigns
 * are sent within their launch (no workers). Screenshots go to CONSOLE_SCREENSHOTS (else
 * herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let groupId: string;
const people: { _id: string; phone: string }[] = [];
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  const cred = { token: org.token };
  const group = await api.post('/groups', { name: 'Mombasa customers', color: 'bg-blue-500' }, cred);
  groupId = group.body._id;
  for (const [name, phone] of [
    ['Amina Hassan', '+254711000201'],
    ['Baraka Kahindi', '+254711000202'],
    ['Chiku Mwanzia', '+254711000203'],
  ]) {
    const res = await api.post('/contacts', { name, phone, groups: [groupId] }, cred);
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
    people.push(res.body);
  }
}, 60_000);
afterAll(() => herald?.stop());

const cred = () => ({ token: org.token });
const caps = async () =>
  (await api.gql('{ organization { frequencyCaps { email { messages days } sms { messages days } whatsapp { messages days } } } }', {}, cred())).body.data.organization.frequencyCaps;
const campaign = async (id: string) => (await api.get(`/campaigns/${id}`, cred())).body;
const draft = async (body: Record<string, unknown>) => {
  const res = await api.post('/campaigns', { type: 'targeted', channels: ['sms'], recipients: { groups: [groupId] }, messages: { sms: { content: 'Fresh fish at the market today.' } }, ...body }, cred());
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body._id as string;
};

/** A time as the page formats its dates (the browser's locale and zone). */
const formatted = (page: Page, iso: string) => page.evaluate((at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(at)), iso);

/** The message shown under a form control (Mantine links it through `aria-describedby`). */
async function errorOf(page: Page, control: ReturnType<Page['getByLabel']>): Promise<string | null> {
  await waitFor(() => control.getAttribute('aria-invalid'), (v: string | null) => v === 'true');
  const id = ((await control.getAttribute('aria-describedby')) ?? '').split(' ').find((x) => x.endsWith('-error'));
  return page.locator(`[id="${id}"]`).textContent();
}

const pad = (n: number) => String(n).padStart(2, '0');

describeInBrowser('frequency caps in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test("the organization's SMS cap is saved with the page, read back through the API, and refused next to the figure out of range", async () => {
    const page = await ui.open(herald.url, org.token, '/settings/sending-hours');
    await page.getByRole('heading', { name: 'Sending hours and caps' }).waitFor();
    await page.getByRole('heading', { name: 'Frequency caps' }).waitFor();
    await page.getByText(/left out of the next campaign \(never charged\); automated campaigns, resends, test sends, single sends and exempt campaigns are never capped/).waitFor();
    const sms = page.getByRole('switch', { name: 'Cap SMS' });
    expect(await sms.isChecked()).toBe(false);
    expect(await page.getByRole('switch', { name: 'Cap Email' }).isChecked()).toBe(false);
    expect(await page.getByRole('switch', { name: 'Cap WhatsApp' }).isChecked()).toBe(false);
    expect(await page.getByRole('group', { name: 'SMS cap' }).count()).toBe(0);
    // The sidebar still says Sending hours.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sending hours', exact: true }).waitFor();
    await expectAccessible(page);

    await sms.click();
    const cap = page.getByRole('group', { name: 'SMS cap' });
    await cap.getByLabel('At most (messages)').fill('1');
    await cap.getByLabel('In (days)').fill('7');
    const saved = page.waitForRequest((r) => r.url().endsWith('/graphql') && (r.postData() ?? '').includes('SendingHoursUpdate'));
    await page.getByRole('button', { name: 'Save' }).click();
    // One update with every channel: the caps replace the saved ones.
    expect(JSON.parse((await saved).postData()!).variables.input).toEqual({ frequencyCaps: { sms: { messages: 1, days: 7 }, email: null, whatsapp: null } });
    await page.getByRole('status').filter({ hasText: 'frequency caps: SMS at most 1 message in 7 days' }).waitFor();
    expect(await caps()).toEqual({ sms: { messages: 1, days: 7 }, email: null, whatsapp: null });
    expect((await api.get('/organizations/current', cred())).body.frequencyCaps).toEqual({ sms: { messages: 1, days: 7 } });
    await expectAccessible(page);
    await screenshot(page, 'settings-frequency-caps');

    // Kept across a reload.
    await page.reload();
    await waitFor(() => cap.getByLabel('In (days)').inputValue().catch(() => ''), (v: string) => v === '7');
    expect(await page.getByRole('switch', { name: 'Cap SMS' }).isChecked()).toBe(true);
    expect(await cap.getByLabel('At most (messages)').inputValue()).toBe('1');

    // An empty figure is said before anything is sent.
    await cap.getByLabel('At most (messages)').fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    expect(await errorOf(page, cap.getByLabel('At most (messages)'))).toBe('Enter how many messages');

    // 0 messages: the server's message lands under that figure, and nothing changes.
    await cap.getByLabel('At most (messages)').fill('0');
    const refused = page.waitForResponse((r) => r.url().endsWith('/graphql') && (r.request().postData() ?? '').includes('SendingHoursUpdate'));
    await page.getByRole('button', { name: 'Save' }).click();
    const answer = await (await refused).json();
    const detail = answer.errors[0].extensions.details.find((d: any) => d.field.endsWith('frequencyCaps.sms.messages'));
    expect(detail).toBeDefined();
    expect(await errorOf(page, cap.getByLabel('At most (messages)'))).toBe(detail.message);
    expect(await cap.getByLabel('In (days)').getAttribute('aria-invalid')).not.toBe('true');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await caps()).toEqual({ sms: { messages: 1, days: 7 }, email: null, whatsapp: null });
    await expectAccessible(page);
    await screenshot(page, 'settings-frequency-caps-error', { fullPage: false });
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('before launch, the estimate says how many wait for their sending hours and when each zone gets it, and the preview when its recipient would', async () => {
    // A window starting two hours after this one in Nairobi (the recipients' zone, UTC+3): now is outside it.
    const nairobiHour = (new Date().getUTCHours() + 3) % 24;
    const window = `${pad((nairobiHour + 2) % 24)}:00-${pad((nairobiHour + 3) % 24)}:00`;
    const id = await draft({ name: 'Evening catch', sendingHours: window });
    const estimate = (
      await api.gql('query ($id: ID!) { campaignEstimate(id: $id) { waiting nextOpeningAt capped channels { zones { timezone recipients sendsAt } } } }', { id }, cred())
    ).body.data.campaignEstimate;
    expect(estimate).toMatchObject({ waiting: 3, capped: 0 });
    expect(estimate.channels[0].zones).toEqual([{ timezone: 'Africa/Nairobi', recipients: 3, sendsAt: expect.any(String) }]);

    const page = await ui.open(herald.url, org.token, `/campaigns/${id}`);
    const opening = await formatted(page, estimate.nextOpeningAt);
    await page.getByText(`3 will wait for their sending hours or local time; the first at ${opening}.`).waitFor();
    await page.getByRole('list', { name: 'When each time zone gets it' }).getByText(`Africa/Nairobi · 3 recipients · ${await formatted(page, estimate.channels[0].zones[0].sendsAt)}`).waitFor();
    // Nobody is capped yet: the estimate says nothing of caps.
    expect(await page.getByText(/reached their frequency cap/).count()).toBe(0);
    await page.getByText(`Reaches them at ${opening}`, { exact: false }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'campaign-estimate-zones');

    await page.getByRole('button', { name: 'Launch campaign' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText(`3 will wait for their sending hours or local time; the first at ${opening}.`).waitFor();
    await dialog.getByText(/^Africa\/Nairobi · 3 recipients · /).waitFor();
    await screenshot(page, 'campaign-launch-zones', { fullPage: false });
    await dialog.getByRole('button', { name: 'Keep as draft' }).click();
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a campaign launched after another leaves out the addresses that reached their cap, says so before launch, and counts them as Capped', async () => {
    // The first campaign reaches two of the three: with a cap of 1 in 7 days, they are done for the week.
    const first = await draft({ name: 'Monday catch', recipients: { contacts: [people[0]!._id, people[1]!._id] } });
    const launched = await api.post(`/campaigns/${first}/launch`, undefined, cred());
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 2, capped: 0 } });

    const second = await draft({ name: 'Tuesday catch' });
    const page = await ui.open(herald.url, org.token, `/campaigns/${second}`);
    // The estimate card: the one left, the two capped, in its own column too.
    await page.getByText(/^1 recipient \(0 left out: unsubscribed or on the suppression list\), costing 1 credit of your/).waitFor();
    await page.getByText('2 left out: they reached their frequency cap.').first().waitFor();
    await page.getByRole('columnheader', { name: 'Capped' }).waitFor();

    await page.getByRole('button', { name: 'Launch campaign' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('2 left out: they reached their frequency cap.').waitFor();
    await dialog.getByText(/^1 recipient \(0 left out: unsubscribed or on the suppression list\), costing 1 credit of your/).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'campaign-launch-capped', { fullPage: false });
    await dialog.getByRole('button', { name: 'Launch now' }).click();
    await dialog.waitFor({ state: 'detached' });

    await page.getByRole('status', { name: 'Campaign status' }).getByText('completed').waitFor();
    const tile = page.getByRole('group', { name: 'Capped' });
    await tile.getByText('2', { exact: true }).waitFor();
    await tile.getByText(/66\.7\s?% of the audience/).waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText('1', { exact: true }).waitFor();
    await page.getByRole('group', { name: 'Suppressed' }).getByText(/0\s?% of the audience/).waitFor();
    await page.getByText(/Capped counts addresses left out at launch because they had reached their frequency cap/).waitFor();
    expect((await campaign(second)).analytics).toMatchObject({ sent: 1, capped: 2 });
    // The funnel says so too.
    await page.getByText(/2 left out at launch \(frequency cap reached\)/).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'campaign-capped');
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a campaign composed as exempt from the caps sends exemptFromCaps, says so on its page, is edited back, and reaches everyone', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Market closed notice');
    await page.getByRole('combobox', { name: 'Groups' }).click();
    await page.getByRole('option', { name: /Mombasa customers/ }).click();
    await page.keyboard.press('Escape');
    await page.getByLabel(/^SMS text/).fill('The market is closed on Friday for repairs.');
    const exempt = page.getByRole('switch', { name: 'Exempt from frequency caps' });
    expect(await exempt.isChecked()).toBe(false);
    await page.getByText(/it does not count against them either\. The organization's caps: SMS at most 1 message in 7 days\./).waitFor();
    await exempt.click();
    await expectAccessible(page);
    await screenshot(page, 'campaign-form-exempt');
    const created = page.waitForRequest((r) => r.url().endsWith('/graphql') && (r.postData() ?? '').includes('CampaignFormCreate'));
    await page.getByRole('button', { name: 'Create campaign' }).click();
    expect(JSON.parse((await created).postData()!).variables.input).toMatchObject({ exemptFromCaps: true });

    await page.getByRole('heading', { name: 'Market closed notice' }).waitFor();
    await page.getByRole('row', { name: /^Frequency caps/ }).getByText('Exempt: sent whatever the caps, and not counted against them').waitFor();
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect((await campaign(id)).exemptFromCaps).toBe(true);
    // Exempt: nobody is left out.
    await page.getByText(/^3 recipients \(0 left out/).waitFor();
    expect(await page.getByText(/reached their frequency cap/).count()).toBe(0);

    // Edited: an unchanged exemption is not sent; turned off, false is.
    await page.getByRole('link', { name: 'Edit campaign' }).click();
    await page.getByLabel(/^Name/).fill('Market closed');
    expect(await exempt.isChecked()).toBe(true);
    let updated = page.waitForRequest((r) => r.url().endsWith('/graphql') && (r.postData() ?? '').includes('CampaignFormUpdate'));
    await page.getByRole('button', { name: 'Save campaign' }).click();
    expect(JSON.parse((await updated).postData()!).variables.input).not.toHaveProperty('exemptFromCaps');
    await page.getByRole('heading', { name: 'Market closed' }).waitFor();
    await page.getByRole('link', { name: 'Edit campaign' }).click();
    await exempt.click();
    updated = page.waitForRequest((r) => r.url().endsWith('/graphql') && (r.postData() ?? '').includes('CampaignFormUpdate'));
    await page.getByRole('button', { name: 'Save campaign' }).click();
    expect(JSON.parse((await updated).postData()!).variables.input).toMatchObject({ exemptFromCaps: false });
    await page.getByRole('heading', { name: 'Market closed' }).waitFor();
    await waitFor(() => page.getByRole('row', { name: /^Frequency caps/ }).count(), (n: number) => n === 0);
    expect((await campaign(id)).exemptFromCaps).toBe(false);
    // Held to the caps, it would reach nobody: the three had their one this week.
    await page.getByText('3 left out: they reached their frequency cap.').first().waitFor();

    // Exempt again, and launched: all three get it, none capped, and no Capped counter.
    await page.getByRole('link', { name: 'Edit campaign' }).click();
    await exempt.click();
    await page.getByRole('button', { name: 'Save campaign' }).click();
    await page.getByRole('row', { name: /^Frequency caps/ }).waitFor();
    await page.getByRole('button', { name: 'Launch campaign' }).click();
    await page.getByRole('dialog').getByText(/^3 recipients \(0 left out/).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Launch now' }).click();
    await page.getByRole('status', { name: 'Campaign status' }).getByText('completed').waitFor();
    await page.getByRole('group', { name: 'Sent' }).getByText('3', { exact: true }).waitFor();
    expect(await page.getByRole('group', { name: 'Capped' }).count()).toBe(0);
    expect((await campaign(id)).analytics).toMatchObject({ sent: 3, capped: 0 });
    await expectAccessible(page);
    await screenshot(page, 'campaign-exempt');
    expect(ui.problems()).toEqual([]);
  }, 90_000);
});
