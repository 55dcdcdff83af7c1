import type { Herald } from '../../src/server.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * A running campaign's pace on its page. An organization whose SMS credential is paced at 2
 * messages a second (email unpaced) sends a campaign by SMS and email to 20 contacts (sandbox
 * delivery, by the Herald's own workers: `CAMPAIGN_INLINE_LIMIT=0`): the emails settle at once, the
 * SMS take about 10 seconds, throttled all along. (Counters move a batch of up to 100 recipients at
 * a time: the emails give the campaign a measured pace while its SMS batch is still going out.)
 * The page shows, live over the `campaignProgress` subscription, its pace, a Throttled badge and the
 * estimated finish, and none of it before launch nor once the campaign completed. Screenshots go to
 * CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

const CONTACTS = 20;

let herald: Herald, api: Client, org: Org;
let ui: ConsoleBrowser;
let groupId: string;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg({ workers: true, env: { CAMPAIGN_INLINE_LIMIT: '0', DELIVERY_MODE: 'sandbox' } }));
  const cred = { token: org.token };
  const rate = await api.put('/organizations/current/credentials', { sms_rate: 2 }, cred);
  if (rate.status !== 200 || rate.body.credentials.sms_rate !== 2) throw new Error(`${rate.status} ${JSON.stringify(rate.body)}`);
  const group = await api.post('/groups', { name: 'Mombasa customers', color: 'bg-blue-500' }, cred);
  groupId = group.body._id;
  for (let i = 1; i <= CONTACTS; i++) {
    const contact = { name: `Customer ${i}`, phone: `+2547110${String(i).padStart(5, '0')}`, email: `customer${i}@example.com`, groups: [groupId] };
    const res = await api.post('/contacts', contact, cred);
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  }
}, 60_000);
afterAll(() => herald?.stop());

describeInBrowser('the console’s campaign page while a campaign sends', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a throttled campaign shows its pace, a Throttled badge and its estimated finish, live, until it completes', async () => {
    const cred = { token: org.token };
    const created = await api.post(
      '/campaigns',
      {
        name: 'Harbour festival',
        type: 'targeted',
        channels: ['sms', 'email'],
        recipients: { groups: [groupId] },
        messages: { sms: { content: 'The harbour festival starts on Friday.' }, email: { subject: 'Harbour festival', content: '<p>The harbour festival starts on Friday.</p>' } },
      },
      cred,
    );
    expect(created.status).toBe(201);
    const id = created.body._id as string;

    // Before launch: nothing of the pace.
    const page = await ui.open(herald.url, org.token, `/campaigns/${id}`);
    const status = page.getByRole('status', { name: 'Campaign status' });
    await status.getByText('draft').waitFor();
    expect(await page.getByRole('group', { name: 'Sending pace' }).count()).toBe(0);
    expect(await page.getByText('Throttled', { exact: true }).count()).toBe(0);

    const launched = await api.post(`/campaigns/${id}/launch`, undefined, cred);
    expect(launched.status).toBe(200);
    expect(launched.body.status).toBe('active');
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.reload();

    await status.getByText('active').waitFor();
    await status.getByText('Throttled', { exact: true }).waitFor();
    const pace = page.getByRole('group', { name: 'Sending pace' });
    // The emails settled (live, if they had not yet when the page opened): a measured pace.
    await pace.getByText(/^Pace: \d+(\.\d)? messages? a second$/).waitFor();
    await pace.getByText(/^Estimated finish: .+ \((in \d+ seconds?|any moment now)\)$/).waitFor();
    await pace.getByText(/^Waiting for the channel’s rate: /).waitFor();
    await page.getByText(`${CONTACTS} of ${2 * CONTACTS} recipients done (50%)`).waitFor();
    const rate = Number((await pace.getByText(/^Pace: \d/).textContent())!.match(/[\d.]+/)![0]);
    expect(rate).toBeGreaterThan(0);

    // The same, as the API has it: throttled, a pace, and a finish in the next half minute.
    const read = await api.gql(`query ($id: ID!) { campaign(id: $id) { status throttled sendRate estimatedCompletionAt progress { throttled } } }`, { id }, cred);
    const campaign = read.body.data!.campaign;
    expect(campaign).toMatchObject({ status: 'active', throttled: true, progress: { throttled: true } });
    expect(campaign.sendRate).toBeGreaterThan(0);
    const finish = new Date(campaign.estimatedCompletionAt).getTime() - Date.now();
    expect(finish).toBeGreaterThan(0);
    expect(finish).toBeLessThan(30_000);

    // Its funnel draws its sends over time while it runs.
    await page.getByRole('region', { name: 'Funnel' }).getByRole('figure', { name: /^Recipients settled per minute/ }).locator('canvas').first().waitFor();
    await page.mouse.move(900, 10);
    await screenshot(page, 'campaign-throttled');
    await expectAccessible(page);

    // Hovering the badge says why.
    await status.getByText('Throttled', { exact: true }).hover();
    await page.getByRole('tooltip').getByText('Waiting for the channel’s rate').waitFor();
    await screenshot(page, 'campaign-throttled-tooltip', { fullPage: false });

    // Completed, live (no reload: over the subscription): nothing of the pace any more.
    await status.getByText('completed').waitFor({ timeout: 40_000 });
    await page.getByRole('group', { name: 'Sent' }).getByText(String(2 * CONTACTS), { exact: true }).waitFor();
    expect(sockets.some((url) => url.endsWith('/graphql'))).toBe(true);
    expect(await page.getByRole('group', { name: 'Sending pace' }).count()).toBe(0);
    expect(await page.getByText('Throttled', { exact: true }).count()).toBe(0);
    expect(await page.getByText(/Estimated finish/).count()).toBe(0);
    await screenshot(page, 'campaign-completed');
    const final = (await api.gql(`query ($id: ID!) { campaign(id: $id) { throttled sendRate estimatedCompletionAt } }`, { id }, cred)).body.data!.campaign;
    expect(final).toEqual({ throttled: false, sendRate: null, estimatedCompletionAt: null });
    expect(ui.problems()).toEqual([]);
  }, 90_000);
});
