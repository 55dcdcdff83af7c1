import type { Herald } from '../../src/server.js';
import { startSmsGatewayFakeProcess, type SmsGatewayFakeProcess } from '../fakes/sms-gateway-process.js';
import { startWhatsAppFake, type WhatsAppFake } from '../fakes/whatsapp-fake.js';
import { client, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';
import { waitFor } from '../helpers/time.js';

/*
 * The delivery engine's pace, as its users meet it at the provider fakes (live delivery, the
 * Herald's own workers, every campaign through the send queue):
 *
 * - a credential's rate (`sms_rate`): the gateway never gets more than the rate (and one slice)
 *   in any second, and the campaign says it is throttled, and when it should be done, while it runs;
 * - the providers' throttling answers (SMS gateway HTTP 429, WhatsApp 130429): the credential is
 *   slowed down and its recipients sent again, for as long as it takes, never failed for it;
 *   `send_pace` and `herald_provider_throttled_total` count them.
 *
 * Nothing is asserted by wall-clock time: the fakes record what they received, and the assertions
 * are about counts (per second of the gateway's arrival times, for the rate) and order.
 */
const TOKEN = 'metrics-token-sending-engine-0001';

// The SMS gateway fake runs in a process of its own (`sms-gateway-process.ts`): in this one, which
// also runs the Herald, it would read a request only when the event loop gets to it, and stamp
// messages sent 50 ms apart a millisecond apart.

let herald: Herald;
let api: Client;
let gateway: SmsGatewayFakeProcess;
let wa: WhatsAppFake;

beforeAll(async () => {
  [gateway, wa] = await Promise.all([startSmsGatewayFakeProcess(), startWhatsAppFake()]);
  herald = await startTestHerald({
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    WHATSAPP_API_URL: wa.url,
    WORKERS: 'true',
    CAMPAIGN_INLINE_LIMIT: '0',
    METRICS_TOKEN: TOKEN,
  });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), wa?.stop()]);
});

beforeEach(async () => {
  await gateway.reset();
  wa.reset();
});

/* ------------------------------------------------------------------------------------------ */

/** `GET /metrics`: the sum of the samples of `name` carrying `labels` (0 when there is none). */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${herald.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  let sum = 0;
  for (const line of (await res.text()).split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const own = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** The SMS of an account as the gateway received them, in arrival order, with their call's arrival time. */
const smsArrivals = async (partnerID: string) =>
  (await gateway.calls()).flatMap((c) =>
    (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body])
      .filter((m: any) => String(m?.partnerID) === partnerID)
      .map((m: any) => ({ mobile: String(m.mobile), at: c.at })),
  );

/** The most arrival times (ms) inside any window of `ms` (sliding over the arrivals themselves). */
function mostInWindow(times: number[], ms = 1000): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - ms) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** `count` contacts numbered +2547<code><6 digits> (inserted with SQL) and credits for them; their numbers as the providers write them. */
async function contacts(org: Org, code: string, count: number): Promise<string[]> {
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT ?, 'Contact ' || i, '+2547' || ? || lpad(i::text, 6, '0') FROM generate_series(1, ?) AS i`,
    [org.orgId, code, count],
  );
  return Array.from({ length: count }, (_, i) => `2547${code}${String(i + 1).padStart(6, '0')}`);
}

async function launch(org: Org, channel: 'sms' | 'whatsapp', content: string): Promise<string> {
  const created = await api.post('/campaigns', { name: content, type: 'broadcast', channels: [channel], messages: { [channel]: { content } } }, { token: org.token });
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token });
  expect(launched.body.status).toBe('active');
  return created.body._id;
}

/**
 * Reads `GET /campaigns/:id` every 250 ms until it completes (or `ms` pass): every reading, the
 * completed campaign last.
 */
async function watch(org: Org, campaignId: string, ms = 50_000) {
  const readings: { at: number; body: any }[] = [];
  const end = Date.now() + ms;
  for (;;) {
    const res = await api.get(`/campaigns/${campaignId}`, { token: org.token });
    expect(res.status).toBe(200);
    readings.push({ at: Date.now(), body: res.body });
    if (res.body.status === 'completed' || Date.now() > end) return readings;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Every recipient of the campaign is in exactly one of its logs. */
async function expectEachOnceLogged(org: Org, campaignId: string, count: number) {
  const entries = await herald.db.raw(
    `SELECT coalesce(r->>'recipient', r #>> '{}') AS recipient, count(*)::int AS n
     FROM message_logs, json_array_elements(recipients) AS r
     WHERE organization_id = ? AND campaign_id = ?
     GROUP BY 1`,
    [org.orgId, campaignId],
  );
  expect(entries.rows.length).toBe(count);
  expect(entries.rows.filter((r: { n: number }) => r.n !== 1)).toEqual([]);
}

/** The channel's pace as `send_pace` keeps it: its one provider's row (`<channel>:<provider id>`). */
const pace = async (org: Org, channel: string) => herald.db('send_pace').where({ organization_id: org.orgId }).andWhere('channel', 'like', `${channel}:%`).first();

/* ------------------------------------------------------------------------------------------ */

const RATE = 20;

test('sms_rate 20: never more than 22 messages in any second at the gateway; the campaign says it is throttled and when it should be done', async () => {
  const org = await liveOrg(api, {}, { sms_partnerID: '8101' });
  expect((await api.put('/organizations/current/credentials', { sms_rate: RATE }, { token: org.token })).body.credentials.sms_rate).toBe(RATE);
  const numbers = await contacts(org, '21', 200);
  const waitsBefore = await metric('herald_send_rate_waits_total', { channel: 'sms', lane: 'bulk' });
  const campaignId = await launch(org, 'sms', 'Paced news');

  // While it runs, its progress says it waits for the rate and when it should be done.
  const midway = waitFor(
    () => api.get(`/campaigns/${campaignId}/progress`, { token: org.token }),
    (r) => r.body.throttled === true && r.body.estimatedCompletionAt !== null,
    20_000,
  );
  const readings = await watch(org, campaignId);
  const done = readings.at(-1)!.body;
  expect(done).toMatchObject({ status: 'completed', analytics: { sent: 200, failed: 0 } });

  // At the gateway: everyone once, and never more than the rate, one slice (of one message, at 20 a
  // second) and one more in any second of arrivals: the engine spaces the sends it starts, but a
  // message held up on its way (a busy event loop, a slow connection) arrives beside the next one,
  // which the gateway counts in the same second. Unpaced, the 200 arrive within a fraction of a second.
  const arrived = await smsArrivals('8101');
  expect(arrived.map((a) => a.mobile).sort()).toEqual(numbers);
  expect(mostInWindow(arrived.map((a) => a.at))).toBeLessThanOrEqual(RATE + 2);
  await expectEachOnceLogged(org, campaignId, 200);

  // While it was active it said it waited for its rate, and when it should be done (a time to come).
  const active = readings.filter((r) => r.body.status === 'active');
  expect(active.some((r) => r.body.throttled === true)).toBe(true);
  const estimated = active.filter((r) => r.body.estimatedCompletionAt !== null);
  expect(estimated.length).toBeGreaterThan(0);
  for (const r of estimated) expect(Date.parse(r.body.estimatedCompletionAt)).toBeGreaterThan(r.at - 1000);
  // Once completed, it sends no more: none of the three.
  expect(done).toMatchObject({ throttled: false, sendRate: null, estimatedCompletionAt: null });

  const progress = (await midway).body;
  expect(progress).toMatchObject({ total: 200, canceled: 0, throttled: true, estimatedCompletionAt: expect.any(String) });
  expect(progress.sent + progress.failed + progress.pending).toBe(200);
  const final = (await api.get(`/campaigns/${campaignId}/progress`, { token: org.token })).body;
  expect(final).toEqual({ total: 200, sent: 200, failed: 0, pending: 0, waiting: 0, nextOpeningAt: null, canceled: 0, throttled: false, sendRate: null, estimatedCompletionAt: null });

  // Its bulk work waited for the rate, in the metrics.
  expect(await metric('herald_send_rate_waits_total', { channel: 'sms', lane: 'bulk' })).toBeGreaterThan(waitsBefore);
}, 60_000);

test('GraphQL Campaign and its progress show the pace of a running campaign', async () => {
  const org = await liveOrg(api, {}, { sms_partnerID: '8104' });
  const set = await api.gql('mutation { updateCredentials(input: { sms_rate: 10 }) { credentials { sms_rate } } }', undefined, { token: org.token });
  expect(set.body.errors).toBeUndefined();
  await contacts(org, '24', 40);
  const campaignId = await launch(org, 'sms', 'Paced over GraphQL');
  const query = `query($id: ID!) { campaign(id: $id) { status throttled sendRate estimatedCompletionAt
    progress { total sent failed pending canceled throttled sendRate estimatedCompletionAt } } }`;
  const read = () => api.gql(query, { id: campaignId }, { token: org.token });
  const running = await waitFor(read, (r) => r.body.data?.campaign?.throttled === true && r.body.data.campaign.estimatedCompletionAt !== null, 20_000);
  expect(running.body.errors).toBeUndefined();
  const c = running.body.data.campaign;
  expect(c).toMatchObject({ status: 'active', throttled: true, estimatedCompletionAt: expect.any(String) });
  expect(Date.parse(c.estimatedCompletionAt)).toBeGreaterThan(Date.now() - 1000);
  expect(c.progress).toMatchObject({ total: 40, canceled: 0, throttled: true, estimatedCompletionAt: expect.any(String) });
  const done = await waitFor(read, (r) => r.body.data?.campaign?.status === 'completed', 30_000);
  expect(done.body.data.campaign).toEqual({
    status: 'completed',
    throttled: false,
    sendRate: null,
    estimatedCompletionAt: null,
    progress: { total: 40, sent: 40, failed: 0, pending: 0, canceled: 0, throttled: false, sendRate: null, estimatedCompletionAt: null },
  });
}, 60_000);

test('the gateway answers HTTP 429 to its first 60 calls: the campaign slows down and completes, each recipient sent once, none failed', async () => {
  const org = await liveOrg(api, {}, { sms_partnerID: '8102' });
  const numbers = await contacts(org, '22', 200);
  const THROTTLED_CALLS = 60;
  await gateway.setBehaviour({ kind: 'first', calls: THROTTLED_CALLS, behaviour: { kind: 'http', status: 429, body: '{"error":"Too Many Requests"}' } });
  const countedBefore = await metric('herald_provider_throttled_total', { channel: 'sms', provider: 'sms-gateway' });
  const campaignId = await launch(org, 'sms', 'Sale, slowly');

  const readings = await watch(org, campaignId);
  const done = readings.at(-1)!.body;
  expect(done).toMatchObject({ status: 'completed', analytics: { sent: 200, failed: 0 } });
  expect(readings.some((r) => r.body.status === 'active' && r.body.throttled === true)).toBe(true);

  // The gateway accepted each recipient exactly once, after the 429s.
  const calls = (await gateway.calls()).filter((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body]).some((m: any) => String(m?.partnerID) === '8102'));
  const refused = calls.slice(0, THROTTLED_CALLS).flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body]).map((m: any) => String(m.mobile)));
  const accepted = (await gateway.answered()).filter((a) => a.mobile.startsWith('254722')).map((a) => a.mobile).sort();
  expect(accepted).toEqual(numbers);
  // Every recipient was refused at least once, and some three times or more: more tries than any
  // other retryable failure gets, and still sent.
  const refusals = new Map<string, number>();
  for (const m of refused) refusals.set(m, (refusals.get(m) ?? 0) + 1);
  expect(refusals.size).toBe(200);
  expect(Math.max(...refusals.values())).toBeGreaterThanOrEqual(3);
  await expectEachOnceLogged(org, campaignId, 200);

  // The credential was slowed down, and every refused message counted.
  const row = await pace(org, 'sms');
  expect(Number(row.throttles)).toBeGreaterThan(0);
  expect(row.throttled_at).toBeInstanceOf(Date);
  expect(row.slowed_rate).toBeGreaterThan(0);
  expect((await metric('herald_provider_throttled_total', { channel: 'sms', provider: 'sms-gateway' })) - countedBefore).toBe(refused.length);
}, 60_000);

test('WhatsApp answers 130429 (rate limit hit) to its first 90 calls: the campaign slows down and completes, each recipient sent once, none failed', async () => {
  const org = await liveOrg(api, { wa }, { sms_partnerID: '8103' });
  const numbers = await contacts(org, '23', 40);
  const THROTTLED_CALLS = 90;
  wa.setBehaviour({ kind: 'first', calls: THROTTLED_CALLS, behaviour: { kind: 'error', code: 130429 } });
  const countedBefore = await metric('herald_provider_throttled_total', { channel: 'whatsapp', provider: 'whatsapp-cloud' });
  const campaignId = await launch(org, 'whatsapp', 'WhatsApp sale, slowly');

  const readings = await watch(org, campaignId);
  const done = readings.at(-1)!.body;
  expect(done).toMatchObject({ status: 'completed', analytics: { sent: 40, failed: 0 } });
  expect(readings.some((r) => r.body.status === 'active' && r.body.throttled === true)).toBe(true);

  const mine = wa.calls.filter((c) => String(c.body?.to).startsWith('254723'));
  expect(mine.length).toBe(THROTTLED_CALLS + 40);
  const refusals = new Map<string, number>();
  for (const c of mine.slice(0, THROTTLED_CALLS)) refusals.set(String(c.body.to), (refusals.get(String(c.body.to)) ?? 0) + 1);
  expect(refusals.size).toBe(40);
  expect(Math.max(...refusals.values())).toBeGreaterThanOrEqual(3);
  expect(wa.issued.filter((m) => m.to.startsWith('254723')).map((m) => m.to).sort()).toEqual(numbers);
  await expectEachOnceLogged(org, campaignId, 40);

  const row = await pace(org, 'whatsapp');
  expect(Number(row.throttles)).toBeGreaterThan(0);
  expect(row.slowed_rate).toBeGreaterThan(0);
  // WhatsApp Cloud's default throughput is what was slowed down from.
  expect(row.configured).toBe(80);
  expect((await metric('herald_provider_throttled_total', { channel: 'whatsapp', provider: 'whatsapp-cloud' })) - countedBefore).toBe(THROTTLED_CALLS);
}, 60_000);
