import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { client, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';

/*
 * Resend to the failed, as an admin meets it (live delivery to the SMS gateway's fake, campaigns
 * sent inside their launch): the recipients whose last attempt failed for a reason worth another
 * try, and only those, are estimated, priced and sent again as a run of the campaign, and the
 * campaign's analytics count each recipient once.
 */

let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;

beforeAll(async () => {
  gateway = await startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' });
  herald = await startTestHerald({ DELIVERY_MODE: 'live', SMS_API_URL: gateway.url });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await gateway?.stop();
});

let serial = 0;
const phone = () => `+25474${String(1_000_000 + serial++).padStart(7, '0')}`;
const mobile = (p: string) => p.slice(1);
const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;

async function launched(org: Org, to: string[]) {
  const created = await api.post(
    '/campaigns',
    { name: 'Kettle news', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Back in stock: the blue kettle' } }, recipients: { manual: to } },
    { token: org.token },
  );
  expect(created.status).toBe(201);
  const done = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
  expect(done.body.status).toBe('completed');
  return created.body._id as string;
}

test('only the failures worth another try are estimated, resent as a run, charged, and counted once', async () => {
  const org = await liveOrg(api, {});
  const [invalid, down1, down2, ok, left] = [phone(), phone(), phone(), phone(), phone()];
  // `left` is a contact who unsubscribes from SMS before the resend.
  const contact = (await api.post('/contacts', { name: 'Left', phone: left }, { token: org.token })).body;
  gateway.setBehaviour({ kind: 'code', code: 1003 }, mobile(invalid)); // invalid mobile number: final
  for (const p of [down1, down2, left]) gateway.setBehaviour({ kind: 'code', code: 1005 }, mobile(p)); // system error: transient
  const id = await launched(org, [invalid, down1, down2, ok, left]);
  expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics).toMatchObject({ sent: 1, failed: 4 });

  await api.put(`/contacts/${contact._id}`, { subscriptions: { sms: 'unsubscribed' } }, { token: org.token });
  const estimate = await api.get(`/campaigns/${id}/resend-failed`, { token: org.token });
  expect(estimate.status).toBe(200);
  expect(estimate.body).toMatchObject({
    channels: [{ channel: 'sms', recipients: 2, suppressed: { unsubscribed: 1 }, unitCost: 1, cost: 2 }],
    recipients: 2,
    suppressed: 1,
    cost: 2,
  });

  gateway.reset();
  const before = await credits(org);
  const calls = gateway.calls.length;
  const resent = await api.post(`/campaigns/${id}/resend-failed`, {}, { token: org.token });
  expect(resent.status).toBe(201);
  expect(resent.body.runs).toEqual([expect.objectContaining({ status: 'completed', recipients: 2, analytics: expect.objectContaining({ sent: 2, failed: 0 }) })]);
  const resentTo = gateway.calls.slice(calls).flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body]).map((m: { mobile: string }) => `+${m.mobile}`));
  expect(resentTo.sort()).toEqual([down1, down2].sort());
  expect(await credits(org)).toBe(before - 2);

  // Each recipient once: the two resent moved from failed to sent; the total is the campaign's.
  const campaign = (await api.get(`/campaigns/${id}`, { token: org.token })).body;
  expect(campaign.analytics).toMatchObject({ sent: 3, failed: 2 });
  expect((await api.get('/campaigns', { token: org.token })).body.find((c: { _id: string }) => c._id === id).analytics).toMatchObject({ sent: 3, failed: 2 });
  expect((await api.get(`/campaigns/${id}/progress`, { token: org.token })).body).toMatchObject({ total: 5, sent: 3, failed: 2, pending: 0, canceled: 0 });
  const runs = (await api.get(`/campaigns/${id}/runs`, { token: org.token })).body;
  expect(runs).toEqual([expect.objectContaining({ _id: resent.body.runs[0]._id, recipients: 2 })]);
  const logs = (await api.get(`/message-logs?campaignId=${resent.body.runs[0]._id}`, { token: org.token })).body;
  expect(logs.flatMap((l: any) => l.recipients.map((r: any) => [r.recipient, r.status])).sort()).toEqual([[down1, 'success'], [down2, 'success']].sort());

  // Nothing left worth another try (the invalid number is final, the other left SMS).
  const again = await api.post(`/campaigns/${id}/resend-failed`, {}, { token: org.token });
  expect(again.status).toBe(400);
  expect(again.body.message).toBe('No recipient of this campaign failed for a reason worth another try');

  const audit = (await api.get('/audit-log?action=campaign.resent', { token: org.token })).body;
  expect(audit).toEqual([expect.objectContaining({ action: 'campaign.resent', resourceId: id, details: { name: 'Kettle news', recipients: 2, cost: 2 } })]);
});

test('a second resend reaches those the first could not; credits short is 402 with nothing written; the wrong campaigns are refused', async () => {
  const org = await liveOrg(api, {});
  const [a, b] = [phone(), phone()];
  for (const p of [a, b]) gateway.setBehaviour({ kind: 'code', code: 1007 }, mobile(p));
  const id = await launched(org, [a, b]);
  gateway.reset();
  gateway.setBehaviour({ kind: 'code', code: 1007 }, mobile(b));
  const first = await api.post(`/campaigns/${id}/resend-failed`, {}, { token: org.token });
  expect(first.body.runs[0].analytics).toMatchObject({ sent: 1, failed: 1 });
  expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics).toMatchObject({ sent: 1, failed: 1 });

  // The balance does not cover the next one: 402, and no run is made.
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 0 });
  gateway.reset();
  const short = await api.post(`/campaigns/${id}/resend-failed`, {}, { token: org.token });
  expect(short.status).toBe(402);
  expect((await api.get(`/campaigns/${id}/runs`, { token: org.token })).body).toHaveLength(1);

  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 10 });
  const gql = await api.post('/graphql', { query: 'query($id: ID!) { campaignResendEstimate(id: $id) { recipients cost } }', variables: { id } }, { token: org.token });
  expect(gql.body.data.campaignResendEstimate).toEqual({ recipients: 1, cost: 1 });
  const second = await api.post(
    '/graphql',
    { query: 'mutation($id: ID!) { resendFailedCampaign(id: $id) { runs { status recipients analytics { sent } } campaign { analytics { sent failed } } } }', variables: { id } },
    { token: org.token },
  );
  expect(second.body.data.resendFailedCampaign).toEqual({ runs: [{ status: 'completed', recipients: 1, analytics: { sent: 1 } }], campaign: { analytics: { sent: 2, failed: 0 } } });
  expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics).toMatchObject({ sent: 2, failed: 0 });

  const draft = (await api.post('/campaigns', { name: 'Draft', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'x' } }, recipients: { manual: [a] } }, { token: org.token })).body;
  expect((await api.post(`/campaigns/${draft._id}/resend-failed`, {}, { token: org.token })).status).toBe(409);
  const other = await liveOrg(api, {});
  expect((await api.get(`/campaigns/${id}/resend-failed`, { token: other.token })).status).toBe(403);
});
