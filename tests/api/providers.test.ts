import { randomBytes, randomUUID } from 'node:crypto';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import type { Herald } from '../../src/server.js';
import { startAfricasTalkingFake, type AfricasTalkingFake } from '../fakes/africastalking-fake.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio-fake.js';
import { addUser, client, createApiKey, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';
import { waitFor } from '../helpers/time.js';

/*
 * Providers as an organization's admin meets them (live delivery, each provider's fake): the
 * resource through both doors, the v1.0 credentials as a view of each channel's first provider of
 * the original type, sends carried by Africa's Talking and Twilio with their reports verified and
 * recorded, the order of a channel's providers, and one organization's providers and report URLs
 * out of another's reach.
 */

const PUBLIC_URL = 'http://herald.example.test';

let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;
let at: AfricasTalkingFake;
let tw: TwilioFake;

beforeAll(async () => {
  [gateway, at, tw] = await Promise.all([
    startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }),
    startAfricasTalkingFake({ username: 'herald-app', apiKey: 'at-key-1' }),
    startTwilioFake({ accountSid: `AC${'1'.repeat(32)}`, authToken: 'tw-token-1' }),
  ]);
  herald = await startTestHerald({
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    AFRICASTALKING_API_URL: at.url,
    TWILIO_API_URL: tw.url,
    PUBLIC_URL,
  });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), at?.stop(), tw?.stop()]);
});

beforeEach(() => {
  gateway.reset();
  at.reset();
  tw.reset();
});

let serial = 0;
const phone = () => `+25472${String(3_000_000 + serial++).padStart(7, '0')}`;
/** A report URL names the public URL; the test posts to the same path on Herald itself, as a proxy in front of it would. */
const local = (url: string) => herald.url + new URL(url).pathname;

const africasTalking = (extra: Record<string, unknown> = {}) => ({ type: 'africastalking', name: "Africa's Talking", settings: { username: 'herald-app', from: 'HERALD' }, secrets: { apiKey: 'at-key-1' }, ...extra });
const twilio = (extra: Record<string, unknown> = {}) => ({ type: 'twilio', name: 'Twilio', settings: { accountSid: tw.accountSid, from: '+15005550006' }, secrets: { authToken: tw.authToken }, ...extra });

async function addProvider(org: Org, body: Record<string, unknown>) {
  const res = await api.post('/providers', body, { token: org.token });
  expect(res.status).toBe(201);
  return res.body;
}

const logOf = async (org: Org, recipient: string) => {
  const logs = (await api.get('/message-logs', { token: org.token })).body as any[];
  const log = logs.find((l) => l.recipients.some((r: { recipient: string }) => r.recipient === recipient));
  return { log, recipient: log?.recipients.find((r: { recipient: string }) => r.recipient === recipient) };
};

describe('the resource', () => {
  test('an admin adds, reads, changes and removes a provider; secrets are write-only; every change is audited', async () => {
    const org = await signupOrg(api);
    const created = await addProvider(org, africasTalking());
    expect(created).toMatchObject({
      channel: 'sms',
      type: 'africastalking',
      name: "Africa's Talking",
      position: 1,
      enabled: true,
      rate: null,
      settings: { username: 'herald-app', from: 'HERALD' },
      secrets: { apiKey: 'set' },
      missing: [],
      health: { circuit: 'closed', circuitChangedAt: null, lastFailureAt: null, lastError: null },
      organization: org.orgId,
    });
    expect(created.reportUrl).toMatch(new RegExp(`^${PUBLIC_URL}/webhooks/providers/${org.orgId}/${created._id}/[A-Za-z0-9_-]{32}$`));
    expect(JSON.stringify(created)).not.toContain('at-key-1');

    const changed = await api.put(`/providers/${created._id}`, { name: 'AT Kenya', rate: 25, settings: { from: null }, secrets: { apiKey: 'at-key-2' } }, { token: org.token });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: 'AT Kenya', rate: 25, settings: { username: 'herald-app' }, secrets: { apiKey: 'set' } });
    expect(changed.body.settings).not.toHaveProperty('from');
    expect((await api.get(`/providers/${created._id}`, { token: org.token })).body).toMatchObject({ name: 'AT Kenya', rate: 25 });

    expect((await api.delete(`/providers/${created._id}`, { token: org.token })).body).toEqual({ message: 'Provider deleted successfully' });
    expect((await api.get(`/providers/${created._id}`, { token: org.token })).status).toBe(404);

    const audit = (await api.get('/audit-log', { token: org.token })).body as { action: string; details: Record<string, unknown> }[];
    const actions = audit.map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['provider.created', 'provider.updated', 'provider.deleted']));
    const updated = audit.find((e) => e.action === 'provider.updated')!;
    expect(updated.details.fields).toEqual(['name', 'rate', 'settings.from', 'secrets.apiKey']);
    expect(JSON.stringify(audit)).not.toContain('at-key-2');
  });

  test('bad input is a 400 naming each field: an unknown type, a setting the type lacks, a secret given as a setting, what the type requires', async () => {
    const org = await signupOrg(api);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ type: 'carrier-pigeon' }, ['type']],
      [{ type: 'twilio', settings: { accountSid: 'AC1', colour: 'red' }, secrets: { authToken: 't' } }, ['settings.colour']],
      [{ type: 'twilio', settings: { accountSid: 'AC1', authToken: 't' } }, ['settings.authToken']],
      [{ type: 'smpp', settings: { host: 'smsc.example.com' } }, ['settings.systemId', 'settings.sourceAddr', 'secrets.password']],
      [{ type: 'smpp', settings: { host: 'smsc.example.com', port: 'many', systemId: 'x', sourceAddr: 'HERALD' }, secrets: { password: 'p' } }, ['settings.port']],
      [{ type: 'africastalking', channel: 'email', settings: { username: 'u' }, secrets: { apiKey: 'k' } }, ['channel']],
    ];
    for (const [body, fields] of cases) {
      const res = await api.post('/providers', body, { token: org.token });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(fields);
    }
    expect((await api.get('/providers', { token: org.token })).body).toEqual([]);
  });

  test('members and API keys are refused; another organization’s provider is 403, an unknown id 404', async () => {
    const org = await signupOrg(api);
    const other = await signupOrg(api);
    const member = await addUser(api, org, 'user');
    const key = await createApiKey(api, org, 'admin');
    const created = await addProvider(org, africasTalking());
    expect((await api.get('/providers', { apiKey: key.key })).status).toBe(403);
    expect((await api.get('/providers', { token: member.token })).status).toBe(403);
    expect((await api.post('/providers', africasTalking(), { token: member.token })).status).toBe(403);
    expect((await api.get(`/providers/${created._id}`, { token: other.token })).status).toBe(403);
    expect((await api.put(`/providers/${created._id}`, { name: 'Mine now' }, { token: other.token })).status).toBe(403);
    expect((await api.delete(`/providers/${created._id}`, { token: other.token })).status).toBe(403);
    expect((await api.get(`/providers/${randomUUID()}`, { token: org.token })).status).toBe(404);
    expect((await api.get('/providers', { token: other.token })).body).toEqual([]);
  });

  test('the v1.0 credentials are a view of each channel’s first provider of the original type, both ways', async () => {
    const org = await liveOrg(api, {});
    const [gatewayProvider] = (await api.get('/providers?channel=sms', { token: org.token })).body;
    expect(gatewayProvider).toMatchObject({ type: 'sms-gateway', name: 'SMS gateway', position: 1, settings: { partnerID: '42', shortCode: 'HERALD' }, secrets: { apiKey: 'set' } });

    // A provider added before it does not change what the credentials show.
    const at1 = await addProvider(org, africasTalking());
    await api.put('/providers/order', { channel: 'sms', ids: [at1._id, gatewayProvider._id] }, { token: org.token });
    await api.put(`/providers/${gatewayProvider._id}`, { rate: 12, settings: { shortCode: 'NEWCODE' } }, { token: org.token });
    const { credentials } = (await api.get('/organizations/current', { token: org.token })).body;
    expect(credentials).toMatchObject({ sms_apiKey: '****', sms_partnerID: '42', sms_shortCode: 'NEWCODE', sms_rate: 12, email_host: null });

    // And the credentials change that provider, never the other.
    const put = await api.put('/organizations/current/credentials', { sms_shortCode: 'AGAIN', sms_rate: null }, { token: org.token });
    expect(put.body.credentials).toMatchObject({ sms_shortCode: 'AGAIN', sms_rate: null });
    const providers = (await api.get('/providers?channel=sms', { token: org.token })).body;
    expect(providers.map((p: any) => [p.type, p.position, p.settings.shortCode ?? null, p.rate])).toEqual([
      ['africastalking', 1, null, null],
      ['sms-gateway', 2, 'AGAIN', null],
    ]);
  });

  test('reordering names every provider of the channel once; GraphQL lists, reorders and shows the types', async () => {
    const org = await signupOrg(api);
    const first = await addProvider(org, africasTalking());
    const second = await addProvider(org, twilio());
    for (const ids of [[first._id], [first._id, first._id], [first._id, randomUUID()]]) {
      expect((await api.put('/providers/order', { channel: 'sms', ids }, { token: org.token })).status).toBe(400);
    }
    const gql = async (query: string, variables: Record<string, unknown> = {}) => (await api.post('/graphql', { query, variables }, { token: org.token })).body;
    const reordered = await gql('mutation($ids: [ID!]!) { reorderProviders(channel: sms, ids: $ids) { _id position type } }', { ids: [second._id, first._id] });
    expect(reordered.data.reorderProviders).toEqual([
      { _id: second._id, position: 1, type: 'twilio' },
      { _id: first._id, position: 2, type: 'africastalking' },
    ]);
    const listed = await gql('{ providers(channel: sms) { name secrets settings health { circuit } } providerTypes { type channel fields { name secret required } } }');
    expect(listed.data.providers).toEqual([
      { name: 'Twilio', secrets: { authToken: 'set' }, settings: { accountSid: tw.accountSid, from: '+15005550006' }, health: { circuit: 'closed' } },
      { name: "Africa's Talking", secrets: { apiKey: 'set' }, settings: { username: 'herald-app', from: 'HERALD' }, health: { circuit: 'closed' } },
    ]);
    expect(listed.data.providerTypes.map((t: { type: string }) => t.type)).toEqual(['sms-gateway', 'africastalking', 'twilio', 'smpp', 'smtp', 'whatsapp-cloud']);
    expect(listed.data.providerTypes.find((t: { type: string }) => t.type === 'smpp').fields).toContainEqual({ name: 'password', secret: true, required: true });

    // Removing the first closes the gap.
    expect((await api.delete(`/providers/${second._id}`, { token: org.token })).status).toBe(200);
    expect((await api.get('/providers', { token: org.token })).body.map((p: any) => [p.type, p.position])).toEqual([['africastalking', 1]]);

    const created = await gql('mutation($i: CreateProviderInput!) { createProvider(input: $i) { type position } }', { i: { type: 'africastalking', settings: { username: 'x' } } });
    expect(created.errors[0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
    expect(created.errors[0].message).toBe('secrets.apiKey is required for africastalking');
  });
});

describe('a test message', () => {
  test('goes through that provider alone, uncharged and unlogged; its refusal is the answer; a bad address is a 400', async () => {
    const org = await liveOrg(api, {});
    const provider = await addProvider(org, africasTalking());
    const credits = async () => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
    const before = await credits();
    const gatewayCalls = gateway.calls.length;
    const to = phone();
    const ok = await api.post(`/providers/${provider._id}/test`, { to, message: 'Checking the line' }, { token: org.token });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, error: null, providerMessageId: at.messages()[0]!.messageId, network: 'africastalking' });
    expect(at.calls()[0]!.form).toMatchObject({ to, message: 'Checking the line' });
    expect(gateway.calls).toHaveLength(gatewayCalls);
    expect(await credits()).toBe(before);
    expect((await api.get('/message-logs', { token: org.token })).body).toEqual([]);

    at.setBehaviour({ kind: 'http', status: 401 });
    const refused = await api.post(`/providers/${provider._id}/test`, { to }, { token: org.token });
    expect(refused.body).toMatchObject({ ok: false, error: expect.stringMatching(/^Africa's Talking: HTTP 401/), providerMessageId: null });
    expect(gateway.calls).toHaveLength(gatewayCalls);

    expect((await api.post(`/providers/${provider._id}/test`, { to: 'not a number' }, { token: org.token })).status).toBe(400);
    const audit = (await api.get('/audit-log?action=provider.tested', { token: org.token })).body;
    expect(audit.map((e: { details: { ok: boolean } }) => e.details.ok)).toEqual([false, true]);
  });
});

describe("Africa's Talking", () => {
  test('carries a send, the log names the provider, and its delivery report (token-checked) marks the recipient delivered', async () => {
    const org = await signupOrg(api);
    const provider = await addProvider(org, africasTalking());
    const to = phone();
    const sent = await api.post('/notifications/send', { type: 'sms', to, message: 'Your code is 4411' }, { token: org.token });
    expect(sent.status).toBe(200);
    expect(at.calls()).toHaveLength(1);
    expect(at.calls()[0]!.form).toMatchObject({ username: 'herald-app', to, message: 'Your code is 4411', from: 'HERALD' });
    const [message] = at.messages();
    const { recipient } = await logOf(org, to);
    expect(recipient).toMatchObject({ status: 'success', providerMessageId: message!.messageId, providerId: provider._id });

    // A wrong token is a path Herald does not have; another organization's id in the URL finds nothing.
    const url = local(provider.reportUrl);
    const wrong = url.replace(/[^/]+$/, 'x'.repeat(32));
    expect((await at.pushReport(wrong, { id: message!.messageId, status: 'Success', phoneNumber: to })).status).toBe(404);
    const other = await signupOrg(api);
    expect((await at.pushReport(url.replace(org.orgId, other.orgId), { id: message!.messageId, status: 'Success', phoneNumber: to })).status).toBe(404);
    expect((await logOf(org, to)).recipient.deliveredAt).toBeUndefined();

    const pushed = await at.pushReport(url, { id: message!.messageId, status: 'Success', phoneNumber: to, networkCode: '63902' });
    expect(pushed.status).toBe(200);
    await waitFor(() => logOf(org, to), (r) => r.recipient.deliveredAt !== undefined, 5_000);
    // A report for an id Herald never sent is acknowledged and changes nothing.
    expect((await at.pushReport(url, { id: 'ATXid_unknown', status: 'Failed', phoneNumber: to, failureReason: 'UserInBlacklist' })).status).toBe(200);
  });
});

describe('Twilio', () => {
  test('carries a send with its status callback URL; a status callback counts only with a valid X-Twilio-Signature', async () => {
    const org = await signupOrg(api);
    const provider = await addProvider(org, twilio());
    const to = phone();
    expect((await api.post('/notifications/send', { type: 'sms', to, message: 'Your parcel is out for delivery' }, { token: org.token })).status).toBe(200);
    const [message] = tw.messages();
    expect(message).toMatchObject({ to, from: '+15005550006', body: 'Your parcel is out for delivery' });
    expect(tw.calls()[0]!.form.StatusCallback).toBe(provider.reportUrl);
    expect((await logOf(org, to)).recipient).toMatchObject({ providerMessageId: message!.sid, providerId: provider._id });

    const params = { AccountSid: tw.accountSid, MessageSid: message!.sid, MessageStatus: 'undelivered', ErrorCode: '30003', To: to };
    const post = (signature: string | null, body = params) =>
      fetch(local(provider.reportUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature !== null && { 'x-twilio-signature': signature }) },
        body: new URLSearchParams(body).toString(),
      });
    // Signed by the twilio package over the URL Twilio posted to (the public one) and the form.
    const signature = getExpectedTwilioSignature(tw.authToken, provider.reportUrl, params);
    expect((await post(null)).status).toBe(401);
    expect((await post(getExpectedTwilioSignature('another-token', provider.reportUrl, params))).status).toBe(401);
    expect((await post(signature, { ...params, MessageStatus: 'delivered' })).status).toBe(401);
    expect((await logOf(org, to)).recipient.deliveryError).toBeUndefined();

    const ok = await post(signature);
    expect(ok.status).toBe(200);
    const { recipient } = await waitFor(() => logOf(org, to), (r) => r.recipient.deliveryError !== undefined, 5_000);
    expect(recipient.deliveryError).toBe('Twilio: 30003 Unreachable destination handset');
  });
});
