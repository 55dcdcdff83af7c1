import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { jsonRows, run } from '../../src/db/statements.js';
import { pendingRecipientsJson, settledRecipientsJson } from '../../src/delivery/log-recipients.js';
import { insertPendingLogs, settleLogs } from '../../src/delivery/sql/logs.js';
import { record } from '../../src/modules/receipts/service.js';
import { reportSandboxReceipts } from '../../src/modules/sandbox/receipts.js';
import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrgs, type Client, type Org } from '../helpers/herald.js';

/**
 * The dashboard's pictures of the organization's sends over 7, 30 or 90 days (the rollup, through
 * `dailyStats`), and a finished campaign's funnel card, in Chromium: the figures drawn are the API's,
 * the range and channel switches ask again, each chart has its name, summary and table.
 */

let herald: Herald, api: Client, org: Org, quiet: Org;
let ui: ConsoleBrowser;
let campaignId: string;
const as = (o: Org) => ({ token: o.token });
const DAY_MS = 86_400_000;
const midnight = Math.floor(Date.now() / DAY_MS) * DAY_MS;

/** An SMS log of the organization written `daysAgo` days before today's midnight UTC (plus an hour), by the send's own statements. */
async function smsLogDaysAgo(daysAgo: number, sent: number, failed: number): Promise<void> {
  const id = randomUUID();
  const recipients = Array.from({ length: sent + failed }, (_, i) => `+2547120${String(daysAgo).padStart(2, '0')}${String(i).padStart(3, '0')}`);
  await run(herald.db, insertPendingLogs, {
    orgId: org.orgId, channel: 'sms', senderUserId: null, senderApiKeyId: null, campaignId: null, test: false,
    logs: jsonRows([{ id, recipients: pendingRecipientsJson(recipients.map((recipient) => ({ recipient }))), pending_count: recipients.length, failed_count: 0,
                      reserved: recipients.length, preview: 'Earlier', length: 7, unit_cost: 1 }], 'recipients'),
  });
  await herald.db('message_logs').where({ organization_id: org.orgId, id }).update({ created_at: new Date(midnight - daysAgo * DAY_MS + 3_600_000) });
  const outcomes = recipients.map((recipient, i) => (i < sent ? { recipient, status: 'success' as const } : { recipient, status: 'failed' as const, error: 'Refused' }));
  await run(herald.db, settleLogs, {
    orgId: org.orgId,
    logs: jsonRows([{ id, recipients: settledRecipientsJson(outcomes), success_count: sent, failed_count: failed, cost: sent, network: null, provider_ids: null, carriers: null }], 'recipients'),
  });
  // Most of them delivered, on the day they were sent.
  for (let position = 1; position <= Math.ceil(sent * 0.8); position++) await record(herald.db, org.orgId, { logId: id, position }, { kind: 'delivered', at: new Date() });
}

beforeAll(async () => {
  ({ herald, api, orgs: [org, quiet] } = await heraldWithOrgs(2));
  // Earlier days: within the week, and within the month only.
  for (const [daysAgo, sent, failed] of [[1, 12, 1], [2, 8, 0], [4, 15, 2], [6, 5, 0], [12, 20, 3], [25, 9, 1]] as const) await smsLogDaysAgo(daysAgo, sent, failed);
  // Today: an SMS send (one failing), emails opened and clicked, and a campaign over both channels.
  expect((await api.post('/notifications/send', { type: 'sms', to: ['0712345678', '0712345679', '+254712340000'], message: 'Hello' }, as(org))).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'email', to: ['jo@example.com', 'al@example.com', 'ed@example.com'], subject: 'Hi', message: 'Hello' }, as(org))).status).toBe(200);
  const created = await api.post(
    '/campaigns',
    { name: 'Harvest sale', type: 'broadcast', channels: ['sms', 'email'], messages: { sms: { content: 'Harvest sale today' }, email: { subject: 'Harvest sale', content: 'Harvest sale today' } },
      recipients: { manual: ['0712345611', '0712345612', '0712345613', 'c1@example.com', 'c2@example.com', 'c3@example.com', 'c4@example.com'] } },
    as(org),
  );
  campaignId = created.body._id;
  expect((await api.post(`/campaigns/${campaignId}/launch`, {}, as(org))).body.status).toBe('completed');
  const logs = (await api.get(`/message-logs?dateFrom=${new Date(midnight).toISOString()}`, as(org))).body as { _id: string; channel: string; campaignId: string | null; recipients: { recipient: string }[] }[];
  await reportSandboxReceipts(herald.db, { orgId: org.orgId, kind: 'delivered', logs: logs.filter((l) => l.channel === 'sms').map((l) => ({ logId: l._id })) });
  const position = (address: string) => {
    const log = logs.find((l) => l.recipients.some((r) => r.recipient === address))!;
    return { logId: log._id, position: log.recipients.findIndex((r) => r.recipient === address) + 1 };
  };
  for (const address of ['jo@example.com', 'al@example.com', 'c1@example.com', 'c2@example.com', 'c3@example.com']) await record(herald.db, org.orgId, position(address), { kind: 'opened', at: new Date() });
  for (const address of ['al@example.com', 'c2@example.com']) await record(herald.db, org.orgId, position(address), { kind: 'clicked', at: new Date() });
  await record(herald.db, org.orgId, position('c4@example.com'), { kind: 'bounced', bounceType: 'hard', error: '550 gone', at: new Date() });
}, 60_000);
afterAll(() => herald?.stop());

/** Bytes of scripts and stylesheets the page loaded, as transferred (gzip). */
const loadedBytes = (page: Page) =>
  page.evaluate(() =>
    ((globalThis as any).performance.getEntriesByType('resource') as { name: string; encodedBodySize: number }[])
      .filter((e) => /\.(js|css)$/.test(new URL(e.name).pathname))
      .reduce((sum, e) => sum + e.encodedBodySize, 0),
  );

const activity = (page: Page) => page.getByRole('region', { name: 'Sends over time' });
const tile = (page: Page, label: string) => activity(page).getByRole('group', { name: label });

/** The rows of a chart's table (opened): its cells' texts, the first the day. */
async function chartTable(page: Page, title: string): Promise<string[][]> {
  const figure = activity(page).getByRole('figure', { name: title });
  await figure.locator('summary').click();
  const rows = figure.getByRole('table').getByRole('row');
  await rows.nth(1).waitFor();
  const out: string[][] = [];
  for (const row of await rows.all()) out.push((await row.locator('th, td').allTextContents()).map((t) => t.trim()));
  return out.slice(1);
}

const fmt = (n: number) => new Intl.NumberFormat('en-US').format(n);

describeInBrowser('the dashboard’s charts and a campaign’s funnel', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('the last 7 days: totals, the figures per day drawn and tabled as the API counts them; an organization that sent nothing has no chart', async () => {
    const api7 = (await api.get('/stats/daily?days=7', as(org))).body;
    const page = await ui.open(herald.url, org.token, '/', { timezoneId: 'UTC' });
    // The drawing is uPlot's canvas, inside the figure named by its title.
    await activity(page).getByRole('figure', { name: 'Sent, delivered, failed, opened and clicked per day' }).locator('canvas').waitFor();
    await page.waitForLoadState('networkidle');
    const firstLoad = await loadedBytes(page);
    await tile(page, 'Sent').getByText(fmt(api7.totals.sent), { exact: true }).waitFor();
    await tile(page, 'Delivered').getByText(fmt(api7.totals.delivered), { exact: true }).waitFor();
    await tile(page, 'Failed').getByText(fmt(api7.totals.failed), { exact: true }).waitFor();
    await tile(page, 'Opened').getByText(fmt(api7.totals.opened), { exact: true }).waitFor();
    await tile(page, 'Clicked').getByText(fmt(api7.totals.clicked), { exact: true }).waitFor();
    await tile(page, 'Credits spent').getByText(String(api7.totals.credits), { exact: true }).waitFor();
    expect(api7.totals).toMatchObject({ sent: 8 + 15 + 5 + 12 + 2 + 3 + 3 + 4, opened: 5, clicked: 2, bounced: 1 });

    // Each chart has a name, a summary a screen reader reads, and the drawing (with its own keyboard layer).
    const figures = activity(page).getByRole('figure');
    expect(await figures.count()).toBe(3);
    const perDay = activity(page).getByRole('figure', { name: 'Sent, delivered, failed, opened and clicked per day' });
    expect(await perDay.getAttribute('aria-describedby')).toBeTruthy();
    await expect(perDay.locator(`[id="${await perDay.getAttribute('aria-describedby')}"]`).textContent()).resolves.toContain(`${fmt(api7.totals.sent)} sent`);
    // Drawn: one series per figure, named in the legend, which shows a day's values where the pointer is.
    expect(await perDay.locator('.u-legend .u-series .u-label').allTextContents()).toEqual(['When', 'Sent', 'Delivered', 'Failed', 'Opened', 'Clicked']);
    const over = perDay.locator('.u-over');
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
    const today = api7.daily.filter((d: any) => d.date === api7.to);
    const legendValue = (label: string) => perDay.locator('.u-legend .u-series', { has: page.locator('.u-label', { hasText: new RegExp(`^${label}$`) }) }).locator('.u-value');
    await legendValue('Sent').filter({ hasText: new RegExp(`^${fmt(today.reduce((n: number, d: any) => n + d.sent, 0))}$`) }).waitFor();
    expect(await legendValue('Clicked').textContent()).toBe(fmt(today.reduce((n: number, d: any) => n + d.clicked, 0)));

    // The table behind the drawing: every day of the range, summed over the channels as the API has them.
    const table = await chartTable(page, 'Sent, delivered, failed, opened and clicked per day');
    expect(table).toHaveLength(7);
    const days = [...new Set(api7.daily.map((d: any) => d.date))] as string[];
    const sum = (date: string, key: string) => api7.daily.filter((d: any) => d.date === date).reduce((n: number, d: any) => n + d[key], 0);
    expect(table.map((r) => r.slice(1))).toEqual(days.map((d) => ['sent', 'delivered', 'failed', 'opened', 'clicked'].map((k) => fmt(sum(d, k)))));
    const yesterday = table[5]!;
    expect(yesterday.slice(1, 4)).toEqual(['12', '10', '1']);
    await expectAccessible(page);
    console.log(`screenshot: ${await screenshot(page, 'dashboard-charts-7-days')}`);
    console.log(`dashboard with charts: ${(firstLoad / 1024).toFixed(1)} KB of scripts and stylesheets (gzip)`);
    expect(firstLoad).toBeLessThan(300 * 1024);

    const empty = await ui.open(herald.url, quiet.token, '/');
    await activity(empty).getByText('Nothing sent in the last 7 days').waitFor();
    expect(await activity(empty).getByRole('figure').count()).toBe(0);
    await empty.waitForLoadState('networkidle');
    const bytes = await loadedBytes(empty);
    console.log(`dashboard without charts: ${(bytes / 1024).toFixed(1)} KB of scripts and stylesheets (gzip)`);
    expect(bytes).toBeLessThan(300 * 1024);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('the range and channel switches ask again: 30 days reaches the month’s sends, one channel shows its own', async () => {
    const page = await ui.open(herald.url, org.token, '/', { timezoneId: 'UTC' });
    await tile(page, 'Sent').waitFor();
    await activity(page).getByRole('radiogroup', { name: 'Range' }).getByText('30 days', { exact: true }).click();
    const api30 = (await api.get('/stats/daily?days=30', as(org))).body;
    await activity(page).locator('p', { hasText: /^Over the last 30 days/ }).waitFor();
    await tile(page, 'Sent').getByText(fmt(api30.totals.sent), { exact: true }).waitFor();
    expect(api30.totals.sent).toBe((await api.get('/stats/daily?days=7', as(org))).body.totals.sent + 20 + 9);
    expect(await chartTable(page, 'Sent per day by channel')).toHaveLength(30);
    console.log(`screenshot: ${await screenshot(page, 'dashboard-charts-30-days')}`);

    await activity(page).getByRole('radiogroup', { name: 'Channel' }).getByText('Email', { exact: true }).click();
    const email = (await api.get('/stats/daily?days=30&channel=email', as(org))).body;
    await tile(page, 'Sent').getByText(fmt(email.totals.sent), { exact: true }).waitFor();
    await tile(page, 'Opened').getByText(fmt(email.totals.opened), { exact: true }).waitFor();
    expect(email.totals).toMatchObject({ sent: 7, opened: 5, clicked: 2 });
    const byChannel = await chartTable(page, 'Credits spent per day by channel');
    expect(byChannel[29]).toEqual([expect.any(String), String(email.totals.credits)]);

    await activity(page).getByRole('radiogroup', { name: 'Range' }).getByText('90 days', { exact: true }).click();
    await activity(page).locator('p', { hasText: /^Over the last 90 days/ }).waitFor();
    await expectAccessible(page);
    console.log(`screenshot: ${await screenshot(page, 'dashboard-charts-90-days-email')}`);
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('days are the browser’s own: a viewer in Kathmandu sees its days counted as the API counts them there', async () => {
    const page = await ui.open(herald.url, org.token, '/', { timezoneId: 'Asia/Kathmandu' });
    // The name the browser gives its zone (its ICU may use an older spelling, Asia/Katmandu).
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(zone).toMatch(/^Asia\/Kath?mandu$/);
    const there = (await api.get(`/stats/daily?days=7&timeZone=${zone}`, as(org))).body;
    await activity(page).locator('p', { hasText: new RegExp(`^Over the last 7 days .*, ${zone}\\)`) }).waitFor();
    await tile(page, 'Sent').getByText(fmt(there.totals.sent), { exact: true }).waitFor();
    const table = await chartTable(page, 'Sent, delivered, failed, opened and clicked per day');
    const days = [...new Set(there.daily.map((d: any) => d.date))] as string[];
    const sum = (date: string, key: string) => there.daily.filter((d: any) => d.date === date).reduce((n: number, d: any) => n + d[key], 0);
    expect(table.map((r) => r.slice(1))).toEqual(days.map((d) => ['sent', 'delivered', 'failed', 'opened', 'clicked'].map((k) => fmt(sum(d, k)))));
    expect(ui.problems()).toEqual([]);
  }, 60_000);

  test('a finished campaign shows its funnel, its split by channel and its sends over time', async () => {
    const funnel = (await api.get(`/campaigns/${campaignId}/funnel`, as(org))).body;
    expect(funnel).toMatchObject({ audience: 7, sent: 7, delivered: 3, opened: 3, clicked: 1, bounced: 1 });
    const page = await ui.open(herald.url, org.token, `/campaigns/${campaignId}`);
    const card = page.getByRole('region', { name: 'Funnel' });
    const step = (label: string) => card.getByRole('listitem', { name: label, exact: true });
    await step('Audience').waitFor();
    for (const [label, n, share] of [['Audience', 7, '100%'], ['Sent', 7, '100%'], ['Delivered', 3, '42.9%'], ['Opened', 3, '42.9%'], ['Clicked', 1, '14.3%'], ['Bounced', 1, '14.3%'], ['Unsubscribed', 0, '0%']] as const) {
      expect(await step(label).textContent()).toBe(`${label}${n} (${share} of the audience)`);
    }
    const rows = await card.getByRole('table', { name: 'Funnel by channel' }).getByRole('row').all();
    const cells = await Promise.all(rows.map(async (row) => (await row.locator('th, td').allTextContents()).map((t) => t.trim())));
    expect(cells).toEqual([
      ['Recipients', 'SMS', 'Email'],
      ['Audience', '3', '4'],
      ['Sent', '3', '4'],
      ['Failed', '0', '0'],
      ['Delivered', '3', '0'],
      ['Opened', '0', '3'],
      ['Clicked', '0', '1'],
      ['Bounced', '0', '1'],
      ['Reported as spam', '0', '0'],
      ['Unsubscribed', '0', '0'],
      ['Credits spent', '3', '2'],
    ]);
    await card.getByRole('figure', { name: /^Recipients settled per minute/ }).locator('canvas').first().waitFor();
    await expectAccessible(page);
    console.log(`screenshot: ${await screenshot(page, 'campaign-funnel')}`);
    expect(ui.problems()).toEqual([]);
  }, 60_000);
});
