import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { consoleBrowser, describeInBrowser, expectAccessible, screenshot, type ConsoleBrowser } from '../helpers/console.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * Resend to the failed, from a completed campaign's page (live delivery to the SMS gateway's fake):
 * three of five recipients fail, two of them for a reason worth another try (the gateway's system
 * error) and one for good (an invalid number). The admin opens the resend dialog, reads whom it
 * reaches and what it costs, resends, and the campaign's analytics count the two as sent. Screenshots
 * go to CONSOLE_SCREENSHOTS (else herald-console-screenshots in the temp directory).
 */

let herald: Herald, api: Client, org: Org;
let gateway: SmsGatewayFake;
let ui: ConsoleBrowser;
beforeAll(async () => {
  gateway = await startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' });
  ({ herald, api, org } = await heraldWithOrg({ env: { DELIVERY_MODE: 'live', SMS_API_URL: gateway.url } }));
  const creds = await api.put('/organizations/current/credentials', { sms_apiKey: 'key-1', sms_partnerID: '42', sms_shortCode: 'HERALD' }, { token: org.token });
  if (creds.status !== 200) throw new Error(`${creds.status} ${JSON.stringify(creds.body)}`);
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await gateway?.stop();
});

describeInBrowser('the console’s resend to the failed', () => {
  beforeAll(async () => (ui = await consoleBrowser()), 60_000);
  afterAll(() => ui?.close());

  test('a completed campaign with failed recipients is resent to those worth another try, and its analytics count them once', async () => {
    const cred = { token: org.token };
    const phones = [1, 2, 3, 4, 5].map((i) => `+25471900000${i}`);
    gateway.setBehaviour({ kind: 'code', code: 1005 }, phones[0]!.slice(1));
    gateway.setBehaviour({ kind: 'code', code: 1005 }, phones[1]!.slice(1));
    gateway.setBehaviour({ kind: 'code', code: 1003 }, phones[2]!.slice(1));
    const created = await api.post(
      '/campaigns',
      { name: 'Market day', type: 'broadcast', channels: ['sms'], recipients: { manual: phones }, messages: { sms: { content: 'Market day is Saturday.' } } },
      cred,
    );
    const id = created.body._id as string;
    expect((await api.post(`/campaigns/${id}/launch`, undefined, cred)).body).toMatchObject({ status: 'completed', analytics: { sent: 2, failed: 3 } });
    gateway.reset();

    const page = await ui.open(herald.url, org.token, `/campaigns/${id}`);
    await page.getByRole('status', { name: 'Campaign status' }).getByText('completed').waitFor();
    await page.getByRole('group', { name: 'Failed' }).getByText('3', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Resend to failed' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resend Market day to its failed recipients?' });
    await dialog.getByText(/^2 recipients \(2 by SMS\) get the campaign again, costing 2 credits of your [\d,.]+\./).waitFor();
    await screenshot(page, 'campaign-resend-dialog', { fullPage: false });
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Resend now' }).click();
    await dialog.waitFor({ state: 'detached' });

    // The campaign's analytics, as the page now shows them: the two moved from failed to sent.
    await page.getByRole('group', { name: 'Sent' }).getByText('4', { exact: true }).waitFor();
    await page.getByRole('group', { name: 'Failed' }).getByText('1', { exact: true }).waitFor();
    await screenshot(page, 'campaign-resent');
    expect((await api.get(`/campaigns/${id}`, cred)).body.analytics).toMatchObject({ sent: 4, failed: 1 });
    expect(gateway.answered.map((m) => `+${m.mobile}`).filter((p) => phones.slice(0, 2).includes(p)).sort()).toEqual(phones.slice(0, 2));
    expect(ui.problems()).toEqual([]);
  }, 90_000);
});
