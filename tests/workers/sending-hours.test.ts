import type { Herald } from '../../src/server.js';
import { enqueueCampaign } from '../../src/modules/campaigns/start.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

/**
 * Sending hours and local send times over a fake clock: recipients in three zones across a day
 * boundary and a daylight-saving change, windows crossing midnight, waiting counts and the next
 * opening in a campaign's progress, transactional messages never held, restarts while recipients
 * wait, and the credits the waiting recipients hold.
 *
 * The fake clock lies in the past of the real one: a launch starts at once, and the engine reads
 * who is due on the campaigns' clock.
 */

let herald: Herald;
let api: Client;
let database: Awaited<ReturnType<typeof isolatedDatabase>>;
const ENV = { CAMPAIGN_INLINE_LIMIT: '2', CAMPAIGN_LEASE_SECONDS: '2', SIGNUP_CREDITS: '1000' };

beforeAll(async () => {
  database = await isolatedDatabase('sending_hours');
  herald = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
  api = client(herald.url);
});
afterAll(async () => {
  await herald?.stop();
  await database?.drop();
});
afterEach(() => {
  delete herald.deps.clock;
});

const auth = (org: Org): Credential => ({ token: org.token });
const setClock = (at: string) => {
  herald.deps.clock = () => new Date(at);
};

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const contact = (org: Org, body: Record<string, unknown>) => ok(api.post('/contacts', body, auth(org)), 201);
const progressOf = (org: Org, id: string) => ok(api.get(`/campaigns/${id}/progress`, auth(org)));
const credits = async (org: Org) => (await ok(api.get('/organizations/current', auth(org)))).credits as number;

/** The recipients its logs hold as sent, sorted. */
async function sentTo(org: Org, id: string): Promise<string[]> {
  const logs = (await ok(api.get(`/message-logs?campaignId=${id}&limit=1000`, auth(org)))) as any[];
  return logs.flatMap((l) => l.recipients.filter((r: any) => r.status === 'success').map((r: any) => r.recipient)).sort();
}

/** The clock moves on to `at`, and the send queue looks again (its row waits on the wall clock for as long as the clock stood still). */
async function moveTo(org: Org, id: string, at: string) {
  setClock(at);
  await enqueueCampaign(herald.deps, { organization_id: org.orgId, id, type: 'broadcast' });
}

async function launched(org: Org, body: Record<string, unknown>) {
  const c = await ok(api.post('/campaigns', { name: 'Hours', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello {{ contact.name }}' } }, ...body }, auth(org)), 201);
  await ok(api.post(`/campaigns/${c._id}/launch`, undefined, auth(org)));
  return c;
}

describe('settings', () => {
  test('sending hours are HH:MM-HH:MM through both doors, null for any time, audited', async () => {
    const org = await signupOrg(api);
    expect((await ok(api.get('/organizations/current', auth(org)))).sendingHours).toBeNull();
    for (const bad of ['8-20', '08:00-08:00', '24:00-06:00', '08:00 - 20:00', '08:60-20:00']) {
      const res = await api.put('/organizations/current', { sendingHours: bad }, auth(org));
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([{ field: 'sendingHours', message: expect.stringMatching(/must be a daily window HH:MM-HH:MM/) }]);
    }
    expect((await ok(api.put('/organizations/current', { sendingHours: '21:00-07:00' }, auth(org)))).sendingHours).toBe('21:00-07:00');
    const gql = await api.post('/graphql', { query: 'mutation { updateOrganization(input: { sendingHours: "08:00-20:00" }) { sendingHours } }' }, auth(org));
    expect(gql.body.data.updateOrganization.sendingHours).toBe('08:00-20:00');
    expect((await api.post('/graphql', { query: '{ organization { sendingHours timezone } }' }, auth(org))).body.data.organization).toEqual({
      sendingHours: '08:00-20:00',
      timezone: 'Africa/Nairobi',
    });
    const audit = (await ok(api.get('/audit-log?action=organization.updated', auth(org)))) as any[];
    expect(audit.map((e) => e.details.changes.sendingHours).filter(Boolean)[0]).toEqual({ from: '21:00-07:00', to: '08:00-20:00' });
    expect((await ok(api.put('/organizations/current', { sendingHours: null }, auth(org)))).sendingHours).toBeNull();
  });

  test('a campaign takes its own sending hours and a local send time, checked', async () => {
    const org = await signupOrg(api);
    const post = (body: Record<string, unknown>) =>
      api.post('/campaigns', { name: 'C', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } }, ...body }, auth(org));
    setClock('2026-03-01T00:00:00.000Z');
    expect((await post({ localSendAt: '2026-03-08 09:00' })).body.details).toEqual([{ field: 'localSendAt', message: expect.stringMatching(/without an offset/) }]);
    expect((await post({ localSendAt: '2026-02-30T09:00' })).status).toBe(400);
    expect((await post({ localSendAt: '2026-02-27T09:00' })).body.details).toEqual([{ field: 'localSendAt', message: 'localSendAt has passed in every time zone' }]);
    expect((await post({ localSendAt: '2026-03-08T09:00', scheduleDate: '2026-03-08T06:00:00Z' })).status).toBe(400);
    expect((await post({ type: 'recurring', recurrence: { rule: 'FREQ=DAILY', timezone: 'UTC' }, localSendAt: '2026-03-08T09:00' })).body.details).toEqual([
      { field: 'localSendAt', message: 'localSendAt is only for broadcast and targeted campaigns' },
    ]);
    expect((await post({ sendingHours: '9-5' })).body.details).toEqual([{ field: 'sendingHours', message: expect.stringMatching(/daily window/) }]);
    const c = await ok(post({ localSendAt: '2026-03-08T09:00', sendingHours: '08:00-21:00' }), 201);
    // It starts when 09:00 first comes anywhere: UTC+14.
    expect(c).toMatchObject({ localSendAt: '2026-03-08T09:00:00', sendingHours: '08:00-21:00', scheduleDate: '2026-03-07T19:00:00.000Z' });
    const moved = await ok(api.put(`/campaigns/${c._id}`, { scheduleDate: '2026-03-09T10:00:00Z' }, auth(org)));
    expect(moved).toMatchObject({ localSendAt: null, scheduleDate: '2026-03-09T10:00:00.000Z' });
    const gql = await api.post(
      '/graphql',
      { query: `mutation { updateCampaign(id: "${c._id}", input: { localSendAt: "2026-03-10T08:30", sendingHours: null }) { localSendAt sendingHours scheduleDate } }` },
      auth(org),
    );
    expect(gql.body.data.updateCampaign).toEqual({ localSendAt: '2026-03-10T08:30:00', sendingHours: null, scheduleDate: '2026-03-09T18:30:00.000Z' });
  });
});

describe('sending', () => {
  test('at 09:00 local in three zones, across a day boundary and a daylight-saving change, each once', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Aroha', phone: '+64211234567', timezone: 'Pacific/Auckland' });
    await contact(org, { name: 'Wanjiru', phone: '0712345601' });
    await contact(org, { name: 'Nate', phone: '+12025550143', timezone: 'America/New_York' });
    const before = await credits(org);
    // On 8 March 2026 New York's clocks go forward: 09:00 there is 13:00Z, not 14:00Z. Auckland's
    // 09:00 on the 8th is 20:00Z on the 7th.
    setClock('2026-03-07T19:00:00.000Z');
    const c = await ok(api.post('/campaigns', { name: 'Nine', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi {{ contact.name }}' } }, localSendAt: '2026-03-08T09:00' }, auth(org)), 201);
    // The estimate and the preview tell it beforehand, zone by zone.
    const estimate = await ok(api.get(`/campaigns/${c._id}/estimate`, auth(org)));
    expect(estimate).toMatchObject({ recipients: 3, waiting: 3, nextOpeningAt: '2026-03-07T20:00:00.000Z' });
    expect(estimate.channels[0].zones).toEqual([
      { timezone: 'Pacific/Auckland', recipients: 1, sendsAt: '2026-03-07T20:00:00.000Z' },
      { timezone: 'Africa/Nairobi', recipients: 1, sendsAt: '2026-03-08T06:00:00.000Z' },
      { timezone: 'America/New_York', recipients: 1, sendsAt: '2026-03-08T13:00:00.000Z' },
    ]);
    const [nate] = (await ok(api.get('/contacts?search=Nate', auth(org)))) as any[];
    const preview = await ok(api.post(`/campaigns/${c._id}/preview`, { contactId: nate._id }, auth(org)));
    expect(preview.messages[0]).toMatchObject({ recipient: '+12025550143', text: 'Hi Nate', sendsAt: '2026-03-08T13:00:00.000Z' });
    await ok(api.post(`/campaigns/${c._id}/launch`, undefined, auth(org)));
    let p = await waitFor(() => progressOf(org, c._id), (x) => x.waiting === 3);
    expect(p).toMatchObject({ total: 3, pending: 3, waiting: 3, sent: 0, nextOpeningAt: '2026-03-07T20:00:00.000Z' });
    expect((await ok(api.get(`/campaigns/${c._id}`, auth(org)))).status).toBe('active');
    // The credits stay reserved while they wait: launch took them.
    expect(await credits(org)).toBeLessThan(before);

    await moveTo(org, c._id, '2026-03-07T20:00:00.000Z');
    p = await waitFor(() => progressOf(org, c._id), (x) => x.sent === 1);
    expect(p).toMatchObject({ sent: 1, waiting: 2, nextOpeningAt: '2026-03-08T06:00:00.000Z' });
    expect(await sentTo(org, c._id)).toEqual(['+64211234567']);

    await moveTo(org, c._id, '2026-03-08T06:00:00.000Z');
    p = await waitFor(() => progressOf(org, c._id), (x) => x.sent === 2);
    expect(p).toMatchObject({ waiting: 1, nextOpeningAt: '2026-03-08T13:00:00.000Z' });

    await moveTo(org, c._id, '2026-03-08T13:00:00.000Z');
    await waitFor(() => ok(api.get(`/campaigns/${c._id}`, auth(org))), (x) => x.status === 'completed');
    expect(await sentTo(org, c._id)).toEqual(['+12025550143', '+254712345601', '+64211234567']);
    const done = await ok(api.get(`/campaigns/${c._id}`, auth(org)));
    expect(done.analytics).toMatchObject({ sent: 3, failed: 0 });
    expect(await progressOf(org, c._id)).toMatchObject({ total: 3, sent: 3, pending: 0, waiting: 0, nextOpeningAt: null });
  });

  test('sending hours crossing midnight hold recipients outside them until the next opening, and only those', async () => {
    const org = await signupOrg(api);
    await ok(api.put('/organizations/current', { sendingHours: '08:00-20:00' }, auth(org)));
    const phones = ['0712345701', '0712345702', '0712345703'];
    for (const [i, phone] of phones.entries()) await contact(org, { name: `K${i}`, phone });
    await contact(org, { name: 'Layla', phone: '+971501234501' });
    await contact(org, { name: 'Tokyo', phone: '+81312345678', timezone: 'Asia/Tokyo' });
    // 16:30Z: Nairobi 19:30 (open), Dubai 20:30 (closed until 08:00, 04:00Z), Tokyo 01:30 (until 08:00, 23:00Z).
    setClock('2026-06-10T16:30:00.000Z');
    const c = await launched(org, {});
    const p = await waitFor(() => progressOf(org, c._id), (x) => x.sent === 3);
    expect(p).toMatchObject({ total: 5, sent: 3, waiting: 2, nextOpeningAt: '2026-06-10T23:00:00.000Z' });

    // Its own hours, crossing midnight (21:00-07:00 in the recipient's zone), replace the organization's.
    const night = await launched(org, { sendingHours: '21:00-07:00' });
    // Nairobi 19:30 and Dubai 20:30 wait for 21:00 (18:00Z, 17:00Z); Tokyo 01:30 is inside.
    const q = await waitFor(() => progressOf(org, night._id), (x) => x.sent === 1);
    expect(q).toMatchObject({ total: 5, waiting: 4, nextOpeningAt: '2026-06-10T17:00:00.000Z' });
    expect(await sentTo(org, night._id)).toEqual(['+81312345678']);

    await moveTo(org, c._id, '2026-06-10T23:00:00.000Z');
    await waitFor(() => progressOf(org, c._id), (x) => x.sent === 4);
    await moveTo(org, c._id, '2026-06-11T04:00:00.000Z');
    await waitFor(() => ok(api.get(`/campaigns/${c._id}`, auth(org))), (x) => x.status === 'completed');
    expect(await sentTo(org, c._id)).toEqual(['+254712345701', '+254712345702', '+254712345703', '+81312345678', '+971501234501']);
  });

  test('waiting recipients hold their credits: a cancel gives them back, and no recipient is lost or sent twice over a restart', async () => {
    const org = await signupOrg(api);
    await ok(api.put('/organizations/current', { sendingHours: '09:00-17:00' }, auth(org)));
    for (let i = 0; i < 6; i++) await contact(org, { name: `R${i}`, phone: `07123458${String(i).padStart(2, '0')}` });
    const before = await credits(org);
    setClock('2026-06-10T18:00:00.000Z'); // 21:00 in Nairobi: everyone waits until 06:00Z.
    const c = await launched(org, {});
    await waitFor(() => progressOf(org, c._id), (x) => x.waiting === 6);
    const held = before - (await credits(org));
    expect(held).toBeGreaterThan(0);
    const other = await launched(org, {});
    await waitFor(() => progressOf(org, other._id), (x) => x.waiting === 6);
    expect(await credits(org)).toBeCloseTo(before - 2 * held, 2);

    // Canceled while waiting: nothing is sent, and every credit it held comes back.
    await ok(api.post(`/campaigns/${other._id}/cancel`, undefined, auth(org)));
    expect(await credits(org)).toBeCloseTo(before - held, 2);

    // A restart while they wait: the new process sends each once when they are due.
    await herald.stop();
    herald = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
    api = client(herald.url);
    await moveTo(org, c._id, '2026-06-11T06:00:00.000Z');
    await waitFor(() => ok(api.get(`/campaigns/${c._id}`, auth(org))), (x) => x.status === 'completed');
    expect(await sentTo(org, c._id)).toHaveLength(6);
    expect(new Set(await sentTo(org, c._id)).size).toBe(6);
    expect(await credits(org)).toBeCloseTo(before - held, 2);
  });
});
