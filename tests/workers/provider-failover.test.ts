import type { Herald } from '../../src/server.js';
import { startAfricasTalkingFake, type AfricasTalkingFake } from '../fakes/africastalking-fake.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { client, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';
import { waitFor } from '../helpers/time.js';

/*
 * Failover as an organization meets it (live delivery, the Herald's own workers, campaigns through
 * the send queue): its SMS goes through Africa's Talking first and the SMS gateway second. What the
 * first cannot carry for its own reasons (down, slow, flapping) the second carries, each recipient
 * once; a final answer about a recipient stays with it. The first's circuit opens on its failures
 * (the API, `/metrics`), sends nothing there while open, and a probe closes it once it recovers.
 */

const TOKEN = 'metrics-token-provider-failover-01';

let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;
let at: AfricasTalkingFake;

beforeAll(async () => {
  [gateway, at] = await Promise.all([startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }), startAfricasTalkingFake({ username: 'herald-app', apiKey: 'at-key-1' })]);
  herald = await startTestHerald({
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    AFRICASTALKING_API_URL: at.url,
    WORKERS: 'true',
    CAMPAIGN_INLINE_LIMIT: '0',
    PROVIDER_TIMEOUT_MS: '400',
    PROVIDER_CIRCUIT_RESET_MS: '3000',
    PROVIDER_CIRCUIT_VOLUME: '1',
    METRICS_TOKEN: TOKEN,
  });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), at?.stop()]);
});

/** Both fakes back to success, with nothing received. */
function clearFakes() {
  gateway.reset();
  gateway.calls.length = 0;
  gateway.answered.length = 0;
  at.reset();
}

beforeEach(clearFakes);

let serial = 0;
const phones = (n: number) => Array.from({ length: n }, () => `+25473${String(1_000_000 + serial++).padStart(7, '0')}`);

/** An organization whose SMS goes through Africa's Talking, then the SMS gateway. */
async function twoProviders(): Promise<Org & { first: string; second: string }> {
  const org = await liveOrg(api, {});
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  const [second] = (await api.get('/providers?channel=sms', { token: org.token })).body;
  const first = (await api.post('/providers', { type: 'africastalking', settings: { username: 'herald-app' }, secrets: { apiKey: 'at-key-1' } }, { token: org.token })).body;
  await api.put('/providers/order', { channel: 'sms', ids: [first._id, second._id] }, { token: org.token });
  return { ...org, first: first._id, second: second._id };
}

async function campaign(org: Org, to: string[]) {
  const created = await api.post(
    '/campaigns',
    { name: 'Failover news', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'The spring sale is on' } }, recipients: { manual: to } },
    { token: org.token },
  );
  expect(created.status).toBe(201);
  await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
  const done = await waitFor(() => api.get(`/campaigns/${created.body._id}`, { token: org.token }), (r) => r.body.status === 'completed', 30_000);
  return { id: created.body._id as string, analytics: done.body.analytics };
}

/** Each recipient of the campaign's logs: who carried it, and how it ended. */
async function carried(org: Org, campaignId: string) {
  const logs = (await api.get(`/message-logs?campaignId=${campaignId}&limit=100`, { token: org.token })).body as any[];
  return new Map<string, { providerId?: string; status: string; error?: string }>(logs.flatMap((l) => l.recipients.map((r: any) => [r.recipient, r])));
}

const atNumbers = () => at.messages().map((m) => m.number);
const gatewayNumbers = () => gateway.answered.map((m) => `+${m.mobile}`);
const health = async (org: Org, id: string) => (await api.get(`/providers/${id}`, { token: org.token })).body.health;

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${herald.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const own = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

test('the first provider down: the second carries every recipient once, the logs say so, and the first’s circuit opens, then closes once it recovers', async () => {
  const org = await twoProviders();
  at.setBehaviour({ kind: 'http', status: 503 });
  const to = phones(120);
  const { id, analytics } = await campaign(org, to);
  expect(analytics).toMatchObject({ sent: 120, failed: 0 });
  expect(gatewayNumbers().sort()).toEqual([...to].sort());
  expect(atNumbers()).toEqual([]);
  const logged = await carried(org, id);
  expect([...logged.values()].every((r) => r.status === 'success' && r.providerId === org.second)).toBe(true);

  // Its circuit opened (every try of the turn's call failed): the API and /metrics say so.
  expect((await waitFor(() => health(org, org.first), (h) => h.circuit === 'open', 5_000)).circuit).toBe('open');
  expect(await metric('herald_provider_circuits_open', { channel: 'sms', provider: 'africastalking', state: 'open' })).toBeGreaterThanOrEqual(1);
  expect(await metric('herald_provider_failovers_total', { channel: 'sms', provider: 'africastalking' })).toBeGreaterThanOrEqual(120);

  // While it is open it is sent nothing: the next campaign goes to the second at once.
  const askedWhileDown = at.calls().length;
  const meanwhile = phones(40);
  expect((await campaign(org, meanwhile)).analytics).toMatchObject({ sent: 40, failed: 0 });
  expect(at.calls()).toHaveLength(askedWhileDown);

  // Recovered: once the circuit half-opens, a send probes it and closes it; the next campaign is its own.
  at.setBehaviour({ kind: 'success' });
  await waitFor(() => health(org, org.first), (h) => h.circuit === 'half-open', 10_000);
  clearFakes();
  const again = phones(30);
  const second = await campaign(org, again);
  expect(second.analytics).toMatchObject({ sent: 30, failed: 0 });
  expect(atNumbers().sort()).toEqual([...again].sort());
  expect(gatewayNumbers()).toEqual([]);
  expect(await health(org, org.first)).toMatchObject({ circuit: 'closed', lastError: expect.stringMatching(/^Africa's Talking: HTTP 503/) });
});

test('a slow first provider (no answer within the timeout) and a flapping one: every recipient carried once, by one or the other', async () => {
  const org = await twoProviders();
  at.setBehaviour({ kind: 'delay', ms: 2_000 });
  const slow = phones(10);
  const { analytics } = await campaign(org, slow);
  expect(analytics).toMatchObject({ sent: 10, failed: 0 });
  expect(gatewayNumbers().sort()).toEqual([...slow].sort());

  // Flapping: every other call fails. Nothing lost, nothing twice (the gateway dedupes nothing: a
  // recipient carried by both would show in both lists).
  await waitFor(() => health(org, org.first), (h) => h.circuit !== 'open', 10_000);
  clearFakes();
  for (let i = 0; i < 20; i++) at.queue(i % 2 ? { kind: 'success' } : { kind: 'http', status: 500 });
  const flapping = phones(80);
  const result = await campaign(org, flapping);
  expect(result.analytics).toMatchObject({ sent: 80, failed: 0 });
  const both = [...atNumbers(), ...gatewayNumbers()];
  expect(both.sort()).toEqual([...flapping].sort());
  const logged = await carried(org, result.id);
  for (const n of flapping) expect(logged.get(n)!.providerId).toBe(atNumbers().includes(n) ? org.first : org.second);
});

test('a final answer about a recipient (an invalid number) is never failed over', async () => {
  const org = await twoProviders();
  const to = phones(5);
  at.setStatus(to[2]!, 403);
  const { id, analytics } = await campaign(org, to);
  expect(analytics).toMatchObject({ sent: 4, failed: 1 });
  expect(gatewayNumbers()).toEqual([]);
  const logged = await carried(org, id);
  expect(logged.get(to[2]!)).toMatchObject({ status: 'failed', providerId: org.first, error: expect.stringMatching(/^Africa's Talking: InvalidPhoneNumber/) });
  expect((await health(org, org.first)).circuit).toBe('closed');
});

test('a disabled provider is skipped; with none that can send the campaign fails naming the v1.0 credentials missing', async () => {
  const org = await twoProviders();
  await api.put(`/providers/${org.first}`, { enabled: false }, { token: org.token });
  const to = phones(3);
  await campaign(org, to);
  expect(atNumbers()).toEqual([]);
  expect(gatewayNumbers().sort()).toEqual([...to].sort());

  await api.put(`/providers/${org.second}`, { enabled: false }, { token: org.token });
  const sent = await api.post('/notifications/send', { type: 'sms', to: phones(1)[0], message: 'hello' }, { token: org.token });
  expect(sent.status).toBe(400);
  expect(sent.body.message).toBe('Missing sms credentials: sms_apiKey, sms_partnerID, sms_shortCode');
});
