// The Twilio adapter against the Twilio fake: what it posts, how it reads each answer, how many
// calls it keeps in flight; and Twilio's status callbacks, signed by the fake with the twilio
// package, as a receiver would verify and read them. No Herald and no database.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTwilioAdapter, TWILIO_FIELDS, twilioStatusReport, verifyTwilioSignature } from '../../src/delivery/channels/twilio.js';
import type { DeliveryTarget, OutboundMessage, ProviderAccount, ProviderAdapter } from '../../src/delivery/types.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio-fake.js';

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'f0e1d2c3b4a5968778695a4b3c2d1e0f';
const SERVICE_SID = 'MG00112233445566778899aabbccddeeff';

const message: OutboundMessage = { channel: 'sms', orgId: 'org-1', fromName: 'Acme', body: 'Your code is 4821' };
const target = (recipient: string, body?: string): DeliveryTarget => ({
  recipient,
  clientId: `00000000-0000-4000-8000-${recipient.replace(/\D/g, '').padStart(12, '0').slice(-12)}`,
  ...(body === undefined ? {} : { content: { body } }),
});
const account = (settings: Record<string, string> = { accountSid: ACCOUNT_SID, from: '+15005550006' }, secrets: Record<string, string> = { authToken: AUTH_TOKEN }): ProviderAccount => ({
  id: 'prov-1',
  orgId: 'org-1',
  type: 'twilio',
  settings,
  secrets,
});

/** A receiver of status callbacks: what arrived, with the URL it arrived at as Twilio was given it. */
interface Received {
  url: string;
  signature: string | undefined;
  contentType: string | undefined;
  params: Record<string, string>;
}
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
/** The URL the adapter hands Twilio, query string included (it is part of what is signed). */
let callbackUrl: string;

let fake: TwilioFake;
let adapter: ProviderAdapter;
const adapters: ProviderAdapter[] = [];
const makeAdapter = (options: { timeoutMs?: number; callsInFlight?: number; baseUrl?: string } = {}) => {
  const made = createTwilioAdapter({
    baseUrl: options.baseUrl ?? fake.url,
    timeoutMs: options.timeoutMs ?? 2_000,
    callsInFlight: options.callsInFlight,
    statusCallbackUrl: (a) => (a.id === 'no-callback' ? undefined : callbackUrl),
  });
  adapters.push(made);
  return made;
};

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        url: `${receiverUrl}${req.url}`,
        signature: req.headers['x-twilio-signature'] as string | undefined,
        contentType: req.headers['content-type'],
        params: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  callbackUrl = `${receiverUrl}/webhooks/providers/org-1/prov-1/tok3n?source=twilio`;
  fake = await startTwilioFake({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
  adapter = makeAdapter();
});
beforeEach(() => {
  fake.reset();
  received.length = 0;
});
afterAll(async () => {
  await Promise.all(adapters.map((a) => a.close?.()));
  await fake.stop();
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('sending', () => {
  test('posts one form per target to the account\'s Messages resource with Basic auth, and reads the message sid', async () => {
    const results = await adapter.send(message, [target('+254712000001'), target('+254712000002', 'Hi Amina, é ü & more')], account());

    const calls = fake.calls();
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.method).toBe('POST');
      expect(call.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
      expect(call.headers.authorization).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`);
      expect(call.headers['content-type']).toBe('application/x-www-form-urlencoded');
    }
    const byTo = new Map(calls.map((c) => [c.form.To, c.form]));
    expect(byTo.get('+254712000001')).toEqual({ To: '+254712000001', From: '+15005550006', Body: 'Your code is 4821', StatusCallback: callbackUrl });
    expect(byTo.get('+254712000002')).toEqual({ To: '+254712000002', From: '+15005550006', Body: 'Hi Amina, é ü & more', StatusCallback: callbackUrl });

    const sids = new Map(fake.messages().map((m) => [m.to, m.sid]));
    expect(results).toEqual([
      { recipient: '+254712000001', ok: true, network: 'twilio', providerMessageId: sids.get('+254712000001') },
      { recipient: '+254712000002', ok: true, network: 'twilio', providerMessageId: sids.get('+254712000002') },
    ]);
    expect(results[0]!.providerMessageId).toMatch(/^SM[0-9a-f]{32}$/);
    expect(results[0]!.providerMessageId).not.toBe(results[1]!.providerMessageId);
  });

  test('a Messaging Service is sent instead of From, and no StatusCallback when there is no URL for the account', async () => {
    const [result] = await adapter.send(message, [target('+254712000001')], {
      ...account({ accountSid: ACCOUNT_SID, from: '+15005550006', messagingServiceSid: SERVICE_SID }),
      id: 'no-callback',
    });
    expect(result).toMatchObject({ ok: true, network: 'twilio' });
    expect(fake.calls()[0]!.form).toEqual({ To: '+254712000001', MessagingServiceSid: SERVICE_SID, Body: 'Your code is 4821' });
  });

  test('an account without a sender, or without credentials, fails every target as the provider\'s fault without a call', async () => {
    const targets = [target('+254712000001'), target('+254712000002')];
    const noSender = await adapter.send(message, targets, account({ accountSid: ACCOUNT_SID }));
    expect(noSender).toEqual(
      targets.map((t) => ({ recipient: t.recipient, ok: false, error: 'Twilio: neither from nor messagingServiceSid is set', retryable: false, providerFault: true, network: 'twilio' })),
    );
    const noToken = await adapter.send(message, targets, account(undefined, {}));
    expect(noToken.map((r) => [r.ok, r.providerFault, r.error])).toEqual([
      [false, true, 'Twilio: missing accountSid or authToken'],
      [false, true, 'Twilio: missing accountSid or authToken'],
    ]);
    expect(fake.calls()).toHaveLength(0);
    expect(await adapter.send(message, [], account())).toEqual([]);
  });

  test('a wrong auth token is refused by Twilio (20003): the provider\'s fault, not retried', async () => {
    const [result] = await adapter.send(message, [target('+254712000001')], account(undefined, { authToken: 'not-the-token' }));
    expect(fake.calls()).toHaveLength(1);
    expect(result).toEqual({ recipient: '+254712000001', ok: false, error: 'Twilio: Authenticate (20003)', retryable: false, throttled: false, providerFault: true, network: 'twilio' });
  });

  test('every target gets its own answer, in order: an invalid number (21211) fails alone', async () => {
    const results = await adapter.send(message, [target('+254712000001'), target('+254712000003'), target('+254712000005')], account());
    expect(results.map((r) => r.recipient)).toEqual(['+254712000001', '+254712000003', '+254712000005']);
    expect(results[0]).toMatchObject({ ok: true });
    expect(results[1]).toEqual({
      recipient: '+254712000003',
      ok: false,
      error: "Twilio: The 'To' number +254712000003 is not a valid phone number. (21211)",
      retryable: false,
      throttled: false,
      network: 'twilio',
    });
    expect(results[2]).toMatchObject({ ok: true });
  });

  // Final answers about the recipient: neither retried nor handed to another provider.
  test.each([21211, 21614, 21610, 21408])('code %i is final and the recipient\'s', async (code) => {
    fake.queue({ kind: 'error', code });
    const [result] = await adapter.send(message, [target('+254712000001')], account());
    expect(result).toMatchObject({ ok: false, retryable: false, network: 'twilio' });
    expect(result!.providerFault).toBeUndefined();
    expect(result!.error).toMatch(new RegExp(`^Twilio: .+ \\(${code}\\)$`));
  });

  // The account or its sender: another provider of the channel may carry it.
  test.each([20003, 20404, 21606, 21212, 21611])('code %i is the provider\'s fault', async (code) => {
    fake.queue({ kind: 'error', code });
    const [result] = await adapter.send(message, [target('+254712000001')], account());
    expect(result).toMatchObject({ ok: false, retryable: false, providerFault: true, throttled: false });
    expect(result!.error).toContain(`(${code})`);
  });

  test('an error Twilio answers that is about neither (a body too long, 21617) is final', async () => {
    fake.queue({ kind: 'error', code: 21617 });
    const [result] = await adapter.send(message, [target('+254712000001')], account());
    expect(result).toEqual({
      recipient: '+254712000001',
      ok: false,
      error: 'Twilio: The concatenated message body exceeds the 1600 character limit. (21617)',
      retryable: false,
      throttled: false,
      network: 'twilio',
    });
  });

  test('429 with 20429 is throttling: retryable and throttled; a bare 429 too', async () => {
    fake.queue({ kind: 'error', code: 20429 });
    fake.queue({ kind: 'http', status: 429, body: '' });
    const [first] = await adapter.send(message, [target('+254712000001')], account());
    const [second] = await adapter.send(message, [target('+254712000001')], account());
    expect(first).toEqual({ recipient: '+254712000001', ok: false, error: 'Twilio: Too Many Requests (20429)', retryable: true, throttled: true, network: 'twilio' });
    expect(second).toMatchObject({ ok: false, error: 'Twilio: HTTP 429', retryable: true, throttled: true });
  });

  test('5xx is retryable and not throttling; the next call goes through', async () => {
    fake.queue({ kind: 'http', status: 503, body: '<html>Service Unavailable</html>' });
    const [failed] = await adapter.send(message, [target('+254712000001')], account());
    expect(failed).toEqual({
      recipient: '+254712000001',
      ok: false,
      error: 'Twilio: HTTP 503: <html>Service Unavailable</html>',
      retryable: true,
      throttled: false,
      network: 'twilio',
    });
    const [next] = await adapter.send(message, [target('+254712000001')], account());
    expect(next!.ok).toBe(true);
  });

  test('an unreadable 201 is a failure that is not retried (the message may exist)', async () => {
    fake.queue({ kind: 'malformed' });
    const [result] = await adapter.send(message, [target('+254712000001')], account());
    expect(result).toMatchObject({ ok: false, retryable: false, error: 'Twilio: unreadable answer (HTTP 201): {"account_sid":' });
    expect(result!.providerFault).toBeUndefined();
  });

  test('no answer within the timeout is retryable, and the send returns at the timeout', async () => {
    const quick = makeAdapter({ timeoutMs: 300 });
    fake.queue({ kind: 'hang' });
    const start = Date.now();
    const [result] = await quick.send(message, [target('+254712000001')], account());
    const elapsed = Date.now() - start;
    expect(result).toEqual({ recipient: '+254712000001', ok: false, error: 'Twilio: no answer within 300 ms', retryable: true, throttled: false, network: 'twilio' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2_000);
  });

  test('a refused connection is retryable', async () => {
    const gone = await startTwilioFake({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
    await gone.stop();
    const [result] = await makeAdapter({ baseUrl: gone.url }).send(message, [target('+254712000001')], account());
    expect(result).toEqual({ recipient: '+254712000001', ok: false, error: 'Twilio: connection failed (ECONNREFUSED)', retryable: true, throttled: false, network: 'twilio' });
  });
});

describe('calls in flight', () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => target(`+2547120001${String(i).padStart(2, '0')}`));

  test('the targets of one send go side by side', async () => {
    fake.setBehaviour({ kind: 'delay', ms: 200 });
    const results = await makeAdapter({ callsInFlight: 16 }).send(message, many(6), account());
    expect(results.every((r) => r.ok)).toBe(true);
    expect(fake.peakInFlight()).toBe(6);
  });

  test('an account never has more than callsInFlight bulk calls open, across sends', async () => {
    const bounded = makeAdapter({ callsInFlight: 2 });
    fake.setBehaviour({ kind: 'delay', ms: 100 });
    const start = Date.now();
    const [a, b] = await Promise.all([bounded.send(message, many(3), account()), bounded.send(message, many(3), account())]);
    expect([...a!, ...b!].every((r) => r.ok)).toBe(true);
    expect(fake.calls()).toHaveLength(6);
    expect(fake.peakInFlight()).toBe(2);
    // Six calls two at a time: three rounds of 100 ms.
    expect(Date.now() - start).toBeGreaterThanOrEqual(290);
    expect(a!.map((r) => r.recipient)).toEqual(many(3).map((t) => t.recipient));
  });

  test('the transactional lane has a quarter more of its own', async () => {
    const bounded = makeAdapter({ callsInFlight: 4 });
    fake.setBehaviour({ kind: 'delay', ms: 150 });
    await Promise.all([bounded.send(message, many(8), account()), bounded.send(message, many(4), account(), { lane: 'transactional' })]);
    // The bound (four), and the transactional lane's own one more: never a sixth.
    expect(fake.peakInFlight()).toBe(5);
  });
});

describe('status callbacks', () => {
  /** Sends one message and returns its sid. */
  const sendOne = async (to = '+254712000001') => {
    const [result] = await adapter.send(message, [target(to)], account());
    expect(result!.ok).toBe(true);
    return result!.providerMessageId!;
  };

  test('a callback from the fake is verified with the exact URL, and read as delivered', async () => {
    const sid = await sendOne();
    const reply = await fake.sendStatus(sid, 'delivered');
    expect(reply.status).toBe(204);
    expect(received).toHaveLength(1);
    const [callback] = received;
    expect(callback!.url).toBe(callbackUrl);
    expect(callback!.contentType).toBe('application/x-www-form-urlencoded');
    expect(callback!.params).toMatchObject({ MessageSid: sid, MessageStatus: 'delivered', To: '+254712000001', AccountSid: ACCOUNT_SID });
    expect(callback!.signature).toBe(reply.signature);

    expect(verifyTwilioSignature(AUTH_TOKEN, callback!.signature, callbackUrl, callback!.params)).toBe(true);
    const report = twilioStatusReport(callback!.params);
    expect(report).toEqual({ providerMessageId: sid, delivered: true, at: expect.any(Date), status: 'delivered' });
    expect(Math.abs(report!.at.getTime() - Date.now())).toBeLessThan(5_000);
  });

  test('a callback is refused when a field, the URL or the token differs, or it has no signature', async () => {
    const sid = await sendOne();
    await fake.sendStatus(sid, 'undelivered', { ErrorCode: '30005' });
    const { signature, params } = received[0]!;
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, callbackUrl, params)).toBe(true);

    expect(verifyTwilioSignature(AUTH_TOKEN, signature, callbackUrl, { ...params, MessageStatus: 'delivered' })).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, callbackUrl, { ...params, ErrorCode: '30006' })).toBe(false);
    const { ErrorCode: _dropped, ...withoutCode } = params;
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, callbackUrl, withoutCode)).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, callbackUrl, { ...params, Extra: 'x' })).toBe(false);

    expect(verifyTwilioSignature(AUTH_TOKEN, signature, `${receiverUrl}/webhooks/providers/org-1/prov-2/tok3n?source=twilio`, params)).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, `${receiverUrl}/webhooks/providers/org-1/prov-1/tok3n`, params)).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, signature, 'not a url', params)).toBe(false);

    expect(verifyTwilioSignature('another-token-0123456789abcdef', signature, callbackUrl, params)).toBe(false);
    expect(verifyTwilioSignature('', signature, callbackUrl, params)).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, undefined, callbackUrl, params)).toBe(false);
    expect(verifyTwilioSignature(AUTH_TOKEN, '', callbackUrl, params)).toBe(false);
  });

  test('an undelivered callback from the fake reads as not delivered, with its code and meaning', async () => {
    const sid = await sendOne();
    await fake.sendStatus(sid, 'sent');
    await fake.sendStatus(sid, 'undelivered', { ErrorCode: '30005' });
    expect(received.map((r) => r.params.MessageStatus)).toEqual(['sent', 'undelivered']);
    expect(received.every((r) => verifyTwilioSignature(AUTH_TOKEN, r.signature, callbackUrl, r.params))).toBe(true);
    expect(twilioStatusReport(received[0]!.params)).toBeNull();
    expect(twilioStatusReport(received[1]!.params)).toEqual({
      providerMessageId: sid,
      delivered: false,
      at: expect.any(Date),
      error: 'Twilio: 30005 Unknown destination handset',
      status: 'undelivered',
    });
  });
});

describe('twilioStatusReport', () => {
  const params = (MessageStatus: string, extra: Record<string, string> = {}) => ({
    MessageSid: 'SM0123456789abcdef0123456789abcdef',
    SmsSid: 'SM0123456789abcdef0123456789abcdef',
    MessageStatus,
    SmsStatus: MessageStatus,
    To: '+254712000001',
    From: '+15005550006',
    AccountSid: ACCOUNT_SID,
    ApiVersion: '2010-04-01',
    ...extra,
  });

  test.each(['queued', 'accepted', 'sending', 'sent', 'scheduled'])('%s is a state on the way: no report', (status) => {
    expect(twilioStatusReport(params(status))).toBeNull();
  });

  test.each(['delivered', 'read'])('%s is delivered', (status) => {
    expect(twilioStatusReport(params(status))).toEqual({ providerMessageId: 'SM0123456789abcdef0123456789abcdef', delivered: true, at: expect.any(Date), status });
  });

  test.each([
    ['undelivered', '30003', 'Twilio: 30003 Unreachable destination handset'],
    ['undelivered', '30005', 'Twilio: 30005 Unknown destination handset'],
    ['undelivered', '30006', 'Twilio: 30006 Landline or unreachable carrier'],
    ['failed', '30007', 'Twilio: 30007 Carrier violation/filtered'],
    ['undelivered', '30008', 'Twilio: 30008 Unknown error'],
  ])('%s with %s is not delivered', (status, ErrorCode, error) => {
    expect(twilioStatusReport(params(status, { ErrorCode }))).toEqual({
      providerMessageId: 'SM0123456789abcdef0123456789abcdef',
      delivered: false,
      at: expect.any(Date),
      error,
      status,
    });
  });

  test('an unknown code keeps the ErrorMessage Twilio sent; no code at all keeps the status', () => {
    expect(twilioStatusReport(params('failed', { ErrorCode: '30450', ErrorMessage: 'Message delivery blocked' }))!.error).toBe('Twilio: 30450 Message delivery blocked');
    expect(twilioStatusReport(params('failed', { ErrorCode: '30450' }))!.error).toBe('Twilio: 30450');
    expect(twilioStatusReport(params('failed'))!.error).toBe('Twilio: failed');
  });

  test('a callback without a message sid or status is no report', () => {
    const { MessageSid: _m, SmsSid: _s, ...noSid } = params('delivered');
    expect(twilioStatusReport(noSid)).toBeNull();
    const { MessageStatus: _ms, SmsStatus: _ss, ...noStatus } = params('delivered');
    expect(twilioStatusReport(noStatus)).toBeNull();
  });
});

test('the fields: the account SID and the secret auth token are required, and a sender is one of two', () => {
  const byName = new Map(TWILIO_FIELDS.map((f) => [f.name, f]));
  expect([...byName.keys()].sort()).toEqual(['accountSid', 'apiUrl', 'authToken', 'from', 'messagingServiceSid']);
  expect(byName.get('accountSid')).toMatchObject({ required: true });
  expect(byName.get('accountSid')!.secret).toBeFalsy();
  expect(byName.get('authToken')).toMatchObject({ required: true, secret: true });
  for (const name of ['from', 'messagingServiceSid']) {
    expect(byName.get(name)!.required).toBeFalsy();
    expect(byName.get(name)!.secret).toBeFalsy();
  }
  expect(byName.get('from')!.description).toMatch(/messagingServiceSid/);
  expect(byName.get('messagingServiceSid')!.description).toMatch(/\bfrom\b/);
});
