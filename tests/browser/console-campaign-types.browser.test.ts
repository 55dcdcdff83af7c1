import path from 'node:path';
import type { Page } from 'playwright-core';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * The console's recurring and automated campaigns: composed in the form (a rule and its time zone; a
 * trigger, its group and a delay), shown on the campaign's page (the rule in words, the next runs;
 * the trigger and delay in words), launched, and followed: an automated campaign's run appears in
 * its Runs table once a contact meets its trigger, its waiting contacts in Pending sends. Set
 * CONSOLE_SCREENSHOTS to a folder to keep screenshots of the pages.
 */

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let vipGroupId: string;
let annId: string;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true }));
  const cred = { token: org.token };
  const group = await api.post('/groups', { name: 'VIPs', color: 'bg-purple-500' }, cred);
  vipGroupId = group.body._id;
  const ann = await api.post('/contacts', { name: 'Ann Wanjiru', phone: '+254711000001' }, cred);
  if (ann.status !== 201) throw new Error(`${ann.status} ${JSON.stringify(ann.body)}`);
  annId = ann.body._id;
}, 60_000);
afterAll(() => herald?.stop());

async function screenshot(page: Page, name: string) {
  const dir = process.env.CONSOLE_SCREENSHOTS;
  if (dir) await page.screenshot({ path: path.join(dir, `campaign-types-${name}.png`), fullPage: true });
}

/** The message shown under a form control (Mantine links it through `aria-describedby`). */
async function errorOf(page: Page, label: RegExp): Promise<string | null> {
  const control = page.getByLabel(label);
  await page.locator('[aria-invalid="true"]').first().waitFor();
  expect(await control.getAttribute('aria-invalid')).toBe('true');
  const describedBy = (await control.getAttribute('aria-describedby')) ?? '';
  const id = describedBy.split(' ').find((x) => x.endsWith('-error'));
  return page.locator(`[id="${id}"]`).textContent();
}

/** Chooses `option` in the form's Type select. */
async function chooseType(page: Page, option: RegExp) {
  await page.getByRole('combobox', { name: /^Type/ }).click();
  await page.getByRole('option', { name: option }).click();
}

/** Launches the campaign shown, through the launch dialog, and waits for it to be active. */
async function launch(page: Page, name: string) {
  await page.getByRole('button', { name: 'Launch campaign' }).click();
  await page.getByRole('dialog').getByText(/recipients?\b|estimate failed|answering its trigger/).waitFor();
  await screenshot(page, `${name}-launch`);
  await page.getByRole('button', { name: 'Launch now' }).click();
  await page.getByRole('status', { name: 'Campaign status' }).getByText('active').waitFor();
  await page.getByRole('dialog').waitFor({ state: 'hidden' });
}

const campaignNamed = async (name: string) => {
  const res = await api.gql<{ campaigns: { edges: { node: any }[] } }>(
    `{ campaigns(first: 100) { edges { node { _id name type status delay analytics { sent failed } recurrence { rule timezone } trigger { event groupId } } } } }`,
    {},
    { token: org.token },
  );
  return res.body.data?.campaigns.edges.map((e) => e.node).find((c) => c.name === name);
};

describeInBrowser('the console’s recurring and automated campaigns', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a recurring campaign is composed with its rule and zone, reads in words, and once launched shows its next run', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Monday digest');
    await chooseType(page, /^Recurring/);
    await page.getByLabel(/^Recurrence rule/).fill('FREQ=WEEKLY;BYDAY=MO;BYHOUR=9');
    const zone = page.getByRole('combobox', { name: /^Time zone/ });
    await zone.click();
    await zone.fill('Nairobi');
    await page.getByRole('option', { name: 'Africa/Nairobi' }).click();
    expect(await zone.inputValue()).toBe('Africa/Nairobi');
    await page.getByLabel(/^SMS text/).fill('Good morning {{ contact.firstName }}, here is this week’s digest.');
    await screenshot(page, 'recurring-form');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create campaign' }).click();

    await page.getByRole('heading', { name: 'Monday digest' }).waitFor();
    await page.getByText('every week on Monday at 09:00 Nairobi time').waitFor();
    await page.getByRole('row', { name: /^Time zone/ }).getByText('Africa/Nairobi').waitFor();
    await page.getByRole('list', { name: 'Upcoming runs' }).getByRole('listitem').first().waitFor();
    expect(await campaignNamed('Monday digest')).toMatchObject({
      type: 'recurring',
      status: 'draft',
      recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi' },
    });
    await expectAccessible(page);

    await launch(page, 'recurring');
    // The next run is a Monday, 09:00 on Nairobi's clock (shown on it).
    const nextRun = page.getByRole('row', { name: /^Next run/ });
    await nextRun.getByText(/Mon/).waitFor();
    expect(await nextRun.textContent()).toMatch(/9:00|09:00/);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await page.getByText(/^No run yet/).waitFor();
    await screenshot(page, 'recurring-launched');
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('an automated campaign on a group is composed, launched, and sends to a contact added to the group in a run', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('VIP welcome');
    await chooseType(page, /^Automated/);
    // An automated campaign's audience is whoever meets its trigger.
    expect(await page.getByRole('combobox', { name: 'Groups' }).count()).toBe(0);
    await page.getByRole('combobox', { name: /^Trigger/ }).click();
    await page.getByRole('option', { name: 'Contact added to a group' }).click();
    await page.getByRole('combobox', { name: 'Group', exact: true }).click();
    await page.getByRole('option', { name: /^VIPs/ }).click();
    const delay = page.getByLabel(/^Delay/);
    expect(await delay.inputValue()).toBe('PT0S');
    await delay.fill('PT0S');
    await page.getByLabel(/^SMS text/).fill('Welcome to the VIPs, {{ contact.firstName }}!');
    await screenshot(page, 'automated-form');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create campaign' }).click();

    await page.getByRole('heading', { name: 'VIP welcome' }).waitFor();
    await page.getByRole('cell', { name: 'When a contact is added to group VIPs' }).waitFor();
    await page.getByRole('row', { name: /^Delay/ }).getByText(/^At once/).waitFor();
    const created = await campaignNamed('VIP welcome');
    expect(created).toMatchObject({ type: 'automated', status: 'draft', delay: 'PT0S', trigger: { groupId: vipGroupId } });
    await expectAccessible(page);

    await launch(page, 'automated');
    await page.getByRole('heading', { name: 'Pending sends' }).waitFor();
    await page.getByText(/^No run yet/).waitFor();

    // Ann joins the group: a run sends her the message, and the page shows it without a reload.
    const joined = await api.put(`/contacts/${annId}`, { groups: [vipGroupId] }, { token: org.token });
    expect(joined.status).toBe(200);
    const runs = page.getByRole('table', { name: 'Runs' });
    const run = runs.getByRole('row').filter({ hasText: 'completed' });
    await run.waitFor({ timeout: 60_000 });
    // Recipients, sent, failed.
    await run.getByRole('cell').nth(3).getByText('1', { exact: true }).waitFor();
    expect((await run.getByRole('cell').allTextContents()).slice(1)).toEqual(['completed', '1', '1', '0', '—']);
    await page.getByText('No contact is waiting for its delay to pass.').waitFor();
    // The campaign's analytics sum its runs.
    expect((await campaignNamed('VIP welcome')).analytics).toEqual({ sent: 1, failed: 0 });
    await page.getByRole('group', { name: 'Sent' }).getByText('1', { exact: true }).waitFor();
    expect((await page.getByRole('status', { name: 'Campaign status' }).textContent()) ?? '').toMatch(/active/);
    await screenshot(page, 'automated-run');
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 120_000);

  test('an automated campaign’s contacts waiting for its delay are listed as pending sends', async () => {
    const created = await api.gql(
      `mutation ($input: CreateCampaignInput!) { createCampaign(input: $input) { _id } }`,
      {
        input: {
          name: 'Day-after hello',
          type: 'automated',
          channels: ['sms'],
          messages: { sms: { content: 'Hello again {{ contact.firstName }}' } },
          trigger: { event: 'CONTACT_CREATED' },
          delay: 'P1D',
        },
      },
      { token: org.token },
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createCampaign._id;
    const launched = await api.gql(`mutation ($id: ID!) { launchCampaign(id: $id) { status } }`, { id }, { token: org.token });
    expect(launched.body).toEqual({ data: { launchCampaign: { status: 'active' } } });
    const cara = await api.post('/contacts', { name: 'Cara Njeri', phone: '+254711000003' }, { token: org.token });
    expect(cara.status).toBe(201);

    const page = await ui.open(herald.url, org.token, `/campaigns/${id}`);
    await page.getByRole('cell', { name: 'When a contact is created' }).waitFor();
    await page.getByRole('row', { name: /^Delay/ }).getByText('1 day after the trigger').waitFor();
    const pending = page.getByRole('table', { name: 'Pending sends' });
    await pending.getByRole('link', { name: 'Cara Njeri' }).waitFor({ timeout: 30_000 });
    expect(await pending.getByRole('link', { name: 'Cara Njeri' }).getAttribute('href')).toBe(`/contacts/${cara.body._id}`);
    await screenshot(page, 'automated-pending');
    await expectAccessible(page);
    expect(ui.problems()).toEqual([]);
  }, 90_000);

  test('a draft’s rule, trigger and delay are loaded into the form and saved', async () => {
    const create = (input: Record<string, unknown>) =>
      api.gql(
        `mutation ($input: CreateCampaignInput!) { createCampaign(input: $input) { _id } }`,
        { input: { channels: ['sms'], messages: { sms: { content: 'Hi {{ contact.firstName }}' } }, ...input } },
        { token: org.token },
      );
    const recurring = await create({ name: 'Evening note', type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=8', timezone: 'America/New_York' } });
    expect(recurring.body.errors).toBeUndefined();
    const page = await ui.open(herald.url, org.token, `/campaigns/${recurring.body.data.createCampaign._id}/edit`);
    const rule = page.getByLabel(/^Recurrence rule/);
    await rule.waitFor();
    expect(await rule.inputValue()).toBe('FREQ=DAILY;BYHOUR=8');
    expect(await page.getByRole('combobox', { name: /^Time zone/ }).inputValue()).toBe('America/New_York');
    await rule.fill('FREQ=WEEKLY;BYDAY=FR;BYHOUR=17');
    await page.getByRole('button', { name: 'Save campaign' }).click();
    await page.getByRole('heading', { name: 'Evening note' }).waitFor();
    await page.getByText('every week on Friday at 17:00 New York time').waitFor();
    expect((await campaignNamed('Evening note')).recurrence).toEqual({ rule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=17', timezone: 'America/New_York' });

    const automated = await create({ name: 'Later hello', type: 'automated', trigger: { event: 'CONTACT_CREATED' }, delay: 'PT1H' });
    expect(automated.body.errors).toBeUndefined();
    await page.goto(new URL(`/campaigns/${automated.body.data.createCampaign._id}/edit`, herald.url).toString());
    const trigger = page.getByRole('combobox', { name: /^Trigger/ });
    await trigger.waitFor();
    expect(await trigger.inputValue()).toBe('Contact created');
    expect(await page.getByLabel(/^Delay/).inputValue()).toBe('PT1H');
    await trigger.click();
    await page.getByRole('option', { name: 'Contact added to a group' }).click();
    await page.getByRole('combobox', { name: 'Group', exact: true }).click();
    await page.getByRole('option', { name: /^VIPs/ }).click();
    await page.getByLabel(/^Delay/).fill('P2D');
    await screenshot(page, 'automated-edit');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Save campaign' }).click();
    await page.getByRole('heading', { name: 'Later hello' }).waitFor();
    await page.getByRole('cell', { name: 'When a contact is added to group VIPs' }).waitFor();
    await page.getByRole('row', { name: /^Delay/ }).getByText('2 days after the trigger').waitFor();
    expect(await campaignNamed('Later hello')).toMatchObject({ delay: 'P2D', trigger: { groupId: vipGroupId } });
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a rule that fires more often than hourly is refused with the server’s message next to it', async () => {
    const page = await ui.open(herald.url, org.token, '/campaigns/new');
    await page.getByLabel(/^Name/).fill('Every minute');
    await chooseType(page, /^Recurring/);
    await page.getByLabel(/^Recurrence rule/).fill('FREQ=MINUTELY');
    await page.getByLabel(/^SMS text/).fill('Too often');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    expect(await errorOf(page, /^Recurrence rule/)).toMatch(/more often than once an hour/);
    await screenshot(page, 'recurring-error');
    await expectAccessible(page);
    expect(await campaignNamed('Every minute')).toBeUndefined();
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
