import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Sending hours and local send times in the console: the organization's hours on the Sending hours
 * page (saved, refused next to the times, turned off), a campaign's local send time and own hours
 * in its form (sent as typed, whatever the browser's zone, shown on its page and loaded again to
 * edit), and a campaign whose recipients wait for their hours, with how many and the next opening
 * on its page. Launches are sent by the Herald's own workers (`CAMPAIGN_INLINE_LIMIT=0`).
 * Screenshots go to CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let groupId: string;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true, env: { CAMPAIGN_INLINE_LIMIT: '0' } }));
  const cred = { token: org.token };
  const group = await api.post('/groups', { name: 'Kisumu customers', color: 'bg-blue-500' }, cred);
  groupId = group.body._id;
  for (const [name, phone] of [
    ['Achieng Odhiambo', '+254711000101'],
    ['Baraka Mwangi', '+254711000102'],
  ]) {
    const res = await api.post('/contacts', { name, phone, groups: [groupId] }, cred);
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  }
}, 60_000);
afterAll(() => herald?.stop());

const organization = async () => (await api.get('/organizations/current', { token: org.token })).body;
const campaignNamed = async (name: string) => (await api.get('/campaigns', { token: org.token })).body.find((c: any) => c.name === name);
const campaign = async (id: string) => (await api.get(`/campaigns/${id}`, { token: org.token })).body;

const pad = (n: number) => String(n).padStart(2, '0');
/** The date `days` from now, as a date input holds it (`2026-12-05`). */
const dateAhead = (days: number) => {
  const d = new Date(Date.now() + days * 86_400_000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
};

/** A time as the page formats its dates (the browser's locale and zone). */
const formatted = (page: Page, iso: string) => page.evaluate((at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(at)), iso);

describeInBrowser('sending hours and local send times in the console', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test("the organization's sending hours are saved, refused next to the times when they do not make a window, and turned off", async () => {
    const page = await ui.open(herald.url, org.token, '/settings/sending-hours');
    const limit = page.getByRole('switch', { name: 'Limit campaign sending hours' });
    await limit.waitFor();
    expect(await limit.isChecked()).toBe(false);
    expect(await page.getByLabel('From').count()).toBe(0);
    await page.getByText(/read in each recipient's time zone, a window ending before it starts crosses midnight/).waitFor();
    await page.getByText(/automated campaigns and single sends are never held/).waitFor();
    await expectAccessible(page);

    await limit.click();
    const hours = page.getByRole('group', { name: 'Limit campaign sending hours' });
    await hours.getByLabel('From').fill('08:00');
    await hours.getByLabel('Until').fill('20:00');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'campaigns reach recipients between 08:00 and 20:00 their time' }).waitFor();
    expect((await organization()).sendingHours).toBe('08:00-20:00');
    const gql = await api.gql('{ organization { sendingHours } }', {}, { token: org.token });
    expect(gql.body.data.organization.sendingHours).toBe('08:00-20:00');
    await expectAccessible(page);
    await screenshot(page, 'settings-sending-hours-window', { fullPage: false });

    // Kept across a reload.
    await page.reload();
    await waitFor(() => page.getByRole('group', { name: 'Limit campaign sending hours' }).getByLabel('Until').inputValue(), (v: string) => v === '20:00');
    expect(await page.getByRole('switch', { name: 'Limit campaign sending hours' }).isChecked()).toBe(true);
    expect(await hours.getByLabel('From').inputValue()).toBe('08:00');

    // From equal to until is no window: the server's message lands under the times, both marked.
    await hours.getByLabel('Until').fill('08:00');
    await page.getByRole('button', { name: 'Save' }).click();
    await hours.getByText(/^sendingHours must be a daily window HH:MM-HH:MM/).waitFor();
    expect(await hours.getByLabel('From').getAttribute('aria-invalid')).toBe('true');
    expect(await hours.getByLabel('Until').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect((await organization()).sendingHours).toBe('08:00-20:00');
    await expectAccessible(page);
    await screenshot(page, 'settings-sending-hours-error', { fullPage: false });

    // Off: null is sent, any time again.
    await page.getByRole('switch', { name: 'Limit campaign sending hours' }).click();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'campaigns reach recipients at any time' }).waitFor();
    expect((await organization()).sendingHours).toBeNull();
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a campaign is composed with a local send time and its own sending hours, sent as typed whatever the browser’s zone, shown, and edited back to one start time', async () => {
    // A browser far from the recipients: the local send time is not moved to its zone.
    const page = await ui.open(herald.url, org.token, '/campaigns/new', { timezoneId: 'Pacific/Honolulu' });
    await page.getByLabel(/^Name/).fill('Festival morning');
    await page.getByRole('combobox', { name: 'Groups' }).click();
    await page.getByRole('option', { name: /Kisumu customers/ }).click();
    await page.keyboard.press('Escape');
    await page.getByLabel(/^SMS text/).fill('The festival opens at 10:00, {{ contact.firstName }}.');
    expect(await page.getByLabel(/^Local send time/).count()).toBe(0);
    await page.getByRole('radio', { name: 'At a local time for each recipient' }).check();
    expect(await page.getByLabel(/^Start at/).count()).toBe(0);
    const day = dateAhead(10);
    await page.getByLabel(/^Local send time/).fill(`${day}T09:00`);
    await page.getByRole('switch', { name: 'Own sending hours' }).click();
    const hours = page.getByRole('group', { name: 'Own sending hours' });
    await hours.getByLabel('From').fill('21:00');
    await hours.getByLabel('Until').fill('07:00');
    await expectAccessible(page);
    await screenshot(page, 'campaign-form-local-time');

    const created = page.waitForRequest((r) => r.url().endsWith('/graphql') && (r.postData() ?? '').includes('CampaignFormCreate'));
    await page.getByRole('button', { name: 'Create campaign' }).click();
    const sent = JSON.parse((await created).postData()!).variables.input;
    expect(sent).toMatchObject({ localSendAt: `${day}T09:00`, sendingHours: '21:00-07:00' });
    expect(sent).not.toHaveProperty('scheduleDate');

    await page.getByRole('heading', { name: 'Festival morning' }).waitFor();
    const stored = await campaignNamed('Festival morning');
    const saved = await campaign(stored._id);
    expect(saved).toMatchObject({ localSendAt: `${day}T09:00:00`, sendingHours: '21:00-07:00' });
    // It starts when 09:00 first comes anywhere: UTC+14.
    expect(saved.scheduleDate).toBe(new Date(Date.parse(`${day}T09:00:00Z`) - 14 * 3_600_000).toISOString());

    // Its page shows the local time as its own wall clock (not Honolulu's), and its hours.
    const wallClock = await page.evaluate((d) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(`${d}T09:00:00Z`)), day);
    await page.getByRole('row', { name: /^Local send time/ }).getByText(`${wallClock} on each recipient's clock`).waitFor();
    await page.getByRole('row', { name: /^Sending hours/ }).getByText("21:00–07:00 in each recipient's time zone, instead of the organization's").waitFor();
    await page.getByRole('row', { name: /^Starts/ }).getByText(`${await formatted(page, saved.scheduleDate)}, where its local send time comes first`).waitFor();
    // Its preview and estimate count its recipients as for any campaign.
    await page.getByText(/^2 recipients \(0 left out/).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    // A local send time gives the start: no start time to schedule it at, and the launch says so.
    expect(await page.getByRole('button', { name: 'Schedule campaign' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Launch campaign' }).click();
    await page.getByRole('dialog').getByText(`Each recipient gets it at ${wallClock} on their own clock: it will start by itself on`, { exact: false }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Schedule launch' }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'campaign-local-time-launch', { fullPage: false });
    await page.getByRole('button', { name: 'Keep as draft' }).click();
    await expectAccessible(page);
    await screenshot(page, 'campaign-local-time');

    // Edited: the form shows what it has; back to one start time for everyone, with the organization's hours.
    await page.getByRole('link', { name: 'Edit campaign' }).click();
    const local = page.getByLabel(/^Local send time/);
    await local.waitFor();
    expect(await local.inputValue()).toBe(`${day}T09:00`);
    expect(await page.getByRole('radio', { name: 'At a local time for each recipient' }).isChecked()).toBe(true);
    expect(await page.getByRole('switch', { name: 'Own sending hours' }).isChecked()).toBe(true);
    expect(await hours.getByLabel('From').inputValue()).toBe('21:00');
    expect(await hours.getByLabel('Until').inputValue()).toBe('07:00');
    await page.getByRole('radio', { name: 'At one time for everyone' }).check();
    await page.getByLabel(/^Start at/).fill(`${dateAhead(12)}T10:30`);
    await page.getByRole('switch', { name: 'Own sending hours' }).click();
    await page.getByRole('button', { name: 'Save campaign' }).click();
    // Back on the campaign's page once the save is answered (the form has no link to edit).
    await page.getByRole('link', { name: 'Edit campaign' }).waitFor();
    await page.getByRole('heading', { name: 'Festival morning' }).waitFor();
    await waitFor(() => page.getByRole('row', { name: /^Local send time/ }).count(), (n: number) => n === 0);
    const edited = await campaign(stored._id);
    expect(edited).toMatchObject({ localSendAt: null, sendingHours: null });
    // The start time as typed in Honolulu (UTC-10, no daylight saving).
    expect(edited.scheduleDate).toBe(new Date(`${dateAhead(12)}T20:30:00Z`).toISOString());
    expect(await page.getByRole('row', { name: /^Sending hours/ }).count()).toBe(0);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('a sending campaign whose recipients wait for its sending hours says how many and when the next opening is', async () => {
    // A window starting two hours after this one in Nairobi (the recipients' zone, UTC+3): now is outside it.
    const nairobiHour = (new Date().getUTCHours() + 3) % 24;
    const window = `${pad((nairobiHour + 2) % 24)}:00-${pad((nairobiHour + 3) % 24)}:00`;
    const cred = { token: org.token };
    const created = await api.post(
      '/campaigns',
      { name: 'Evening market', type: 'targeted', channels: ['sms'], recipients: { groups: [groupId] }, messages: { sms: { content: 'The market opens tonight.' } }, sendingHours: window },
      cred,
    );
    expect(created.status).toBe(201);
    const id = created.body._id as string;
    const launched = await api.post(`/campaigns/${id}/launch`, undefined, cred);
    expect(launched.status).toBe(200);
    const progressOf = async () => (await api.gql('query ($id: ID!) { campaign(id: $id) { progress { waiting nextOpeningAt } } }', { id }, cred)).body.data.campaign.progress;
    const progress = await waitFor(progressOf, (p: any) => p.waiting === 2);
    expect(progress.nextOpeningAt).not.toBeNull();

    const page = await ui.open(herald.url, org.token, `/campaigns/${id}`);
    await page.getByRole('status', { name: 'Campaign status' }).getByText('active').waitFor();
    await page.getByText(`2 waiting for their sending hours · next at ${await formatted(page, progress.nextOpeningAt)}`).waitFor();
    await page.getByRole('row', { name: /^Sending hours/ }).getByText(`${window.replace('-', '–')} in each recipient's time zone, instead of the organization's`).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'campaign-waiting-for-hours');
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
