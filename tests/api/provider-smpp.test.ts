import type { Herald } from '../../src/server.js';
import { startSmppServer, type SmppServerFake } from '../fakes/smpp-server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { client, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';

/*
 * An SMPP provider as an organization meets it (live delivery; an SMSC made with the `smpp`
 * package's server): sends and campaigns submitted on one bound transceiver session, a long text
 * reassembled exactly at the SMSC with the coding its characters need, receipts on the session
 * marking recipients delivered or not, and a refused bind carried by the channel's next provider.
 */

let herald: Herald;
let api: Client;
let smsc: SmppServerFake;
let gateway: SmsGatewayFake;

beforeAll(async () => {
  [smsc, gateway] = await Promise.all([startSmppServer({ systemId: 'herald', password: 'secret1' }), startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' })]);
  herald = await startTestHerald({ DELIVERY_MODE: 'live', SMS_API_URL: gateway.url, PROVIDER_TIMEOUT_MS: '2000' });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([smsc?.stop(), gateway?.stop()]);
});

let serial = 0;
const phone = () => `+25475${String(1_000_000 + serial++).padStart(7, '0')}`;

async function smppOrg(password = 'secret1'): Promise<Org & { smpp: string; gateway: string }> {
  const org = await liveOrg(api, {});
  const [gw] = (await api.get('/providers?channel=sms', { token: org.token })).body;
  const created = await api.post(
    '/providers',
    { type: 'smpp', name: 'Operator SMSC', settings: { host: '127.0.0.1', port: smsc.port, systemId: 'herald', sourceAddr: 'ACME', window: 4 }, secrets: { password } },
    { token: org.token },
  );
  expect(created.status).toBe(201);
  await api.put('/providers/order', { channel: 'sms', ids: [created.body._id, gw._id] }, { token: org.token });
  return { ...org, smpp: created.body._id, gateway: gw._id };
}

const logRecipient = async (org: Org, recipient: string) => {
  const logs = (await api.get('/message-logs', { token: org.token })).body as any[];
  return logs.flatMap((l) => l.recipients).find((r: { recipient: string }) => r.recipient === recipient);
};

test('a long Swahili text with an emoji goes as UCS-2 segments on one transceiver session, and its receipt marks it delivered', async () => {
  const org = await smppOrg();
  const text = `Habari! Oda yako imefika 📦. ${'Asante kwa kununua nasi, karibu tena. '.repeat(3)}`;
  const to = phone();
  const sent = await api.post('/notifications/send', { type: 'sms', to, message: text }, { token: org.token });
  expect(sent.status).toBe(200);
  const [submit] = smsc.submits().filter((s) => s.destination === to.slice(1));
  expect(submit).toMatchObject({ text, dataCoding: 8, segments: 3, source: 'ACME', registeredDelivery: 1 });
  expect(smsc.binds().filter((b) => b.status === 0)).toEqual([expect.objectContaining({ command: 'bind_transceiver', systemId: 'herald', interfaceVersion: 0x34 })]);
  const recipient = await logRecipient(org, to);
  expect(recipient).toMatchObject({ status: 'success', providerMessageId: submit!.messageId, providerId: org.smpp });

  expect(await smsc.deliverReceipt(submit!.messageId, 'DELIVRD')).toBe(0);
  await waitFor(() => logRecipient(org, to), (r) => r.deliveredAt !== undefined, 5_000);
});

test('a campaign shares the session (never more outstanding than the window); an undelivered receipt is the recipient’s delivery error', async () => {
  const org = await smppOrg();
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 1_000 });
  smsc.delay(20);
  const to = Array.from({ length: 40 }, phone);
  const created = await api.post('/campaigns', { name: 'SMSC news', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'The spring sale is on' } }, recipients: { manual: to } }, { token: org.token });
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
  smsc.delay(0);
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 40, failed: 0 } });
  expect(smsc.maxOutstandingSeen()).toBeLessThanOrEqual(4);
  const submit = smsc.submits().find((s) => s.destination === to[0]!.slice(1))!;
  expect(submit).toMatchObject({ dataCoding: 0, segments: 1 });
  await smsc.deliverReceipt(submit.messageId, 'UNDELIV', { err: '001' });
  const r = await waitFor(() => logRecipient(org, to[0]!), (x) => x.deliveryError !== undefined, 5_000);
  expect(r.deliveryError).toMatch(/^SMPP: UNDELIV/);
});

test('a refused bind is the provider’s fault: the next provider carries the message', async () => {
  const org = await smppOrg('wrong-password');
  const to = phone();
  const before = gateway.answered.length;
  expect((await api.post('/notifications/send', { type: 'sms', to, message: 'Your code is 991204' }, { token: org.token })).status).toBe(200);
  expect(gateway.answered.slice(before).map((m) => `+${m.mobile}`)).toEqual([to]);
  expect(await logRecipient(org, to)).toMatchObject({ status: 'success', providerId: org.gateway });
  expect(smsc.binds().some((b) => b.systemId === 'herald' && b.status !== 0)).toBe(true);
});
