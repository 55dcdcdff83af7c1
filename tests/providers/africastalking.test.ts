import net from 'node:net';
import {
  AFRICASTALKING_RECIPIENT_LIMIT,
  createAfricasTalkingAdapter,
  parseAfricasTalkingReport,
} from '../../src/delivery/channels/africastalking.js';
import type { DeliveryResult, DeliveryTarget, OutboundMessage, ProviderAccount, ProviderAdapter } from '../../src/delivery/types.js';
import { AFRICASTALKING_BAD_AUTH, startAfricasTalkingFake, type AfricasTalkingFake } from '../fakes/africastalking-fake.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';

/**
 * The Africa's Talking adapter against the fake (spec: Africa's Talking's published SMS API): the
 * calls it makes, how each documented answer becomes a delivery result, its bound on calls in
 * flight, and the delivery report parser. No Herald and no database.
 */

let fake: AfricasTalkingFake;
let adapter: ProviderAdapter;

const account = (over: Partial<{ username: string; apiKey: string; from: string }> = {}): ProviderAccount => ({
  id: 'prov-1',
  orgId: 'org-1',
  type: 'africastalking',
  settings: { username: over.username ?? fake.username, ...(over.from === undefined ? {} : { from: over.from }) },
  secrets: { apiKey: over.apiKey ?? fake.apiKey },
});

const message = (body = 'Your code is 1234'): OutboundMessage => ({ channel: 'sms', orgId: 'org-1', fromName: 'Acme', body });

let nextClientId = 1;
const target = (recipient: string, body?: string): DeliveryTarget => ({
  recipient,
  clientId: `00000000-0000-4000-8000-${(nextClientId++).toString(16).padStart(12, '0')}`,
  ...(body === undefined ? {} : { content: { body } }),
});
/** A distinct valid number for each `n` below 10 000 (none ends in 0003, which the fake refuses). */
const phone = (n: number) => `+2547${String(n).padStart(4, '0')}5555`;

beforeAll(async () => {
  fake = await startAfricasTalkingFake({ username: 'acme', apiKey: 'at-key-1' });
  adapter = createAfricasTalkingAdapter({ baseUrl: fake.url, timeoutMs: 2_000, callsInFlight: 4 });
});

afterAll(async () => {
  await adapter.close?.();
  await fake.stop();
});

beforeEach(() => fake.reset());

describe('sending', () => {
  test('one text to many recipients is one form call, each recipient answered with its message id', async () => {
    const targets = [target('+254711000001'), target('+254711000002'), target('+254722000004')];
    const results = await adapter.send(message('Hello all'), targets, account({ from: 'ACME' }));

    const calls = fake.calls();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.method).toBe('POST');
    expect(calls[0]!.path).toBe('/version1/messaging');
    expect(calls[0]!.headers.apikey).toBe('at-key-1');
    expect(calls[0]!.headers.accept).toContain('application/json');
    expect(calls[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(calls[0]!.form).toEqual({ username: 'acme', to: '+254711000001,+254711000002,+254722000004', message: 'Hello all', from: 'ACME' });

    const ids = fake.messages().map((m) => [m.number, m.messageId]);
    expect(ids).toHaveLength(3);
    expect(results).toEqual(
      ids.map(([recipient, id]) => ({ recipient, ok: true, network: 'africastalking', providerMessageId: id })),
    );
    expect(results.every((r) => /^ATXid_[0-9a-f]{32}$/.test(r.providerMessageId!))).toBe(true);
  });

  test('without a sender the form has no from', async () => {
    await adapter.send(message(), [target('+254711000001')], account());
    expect(Object.keys(fake.calls()[0]!.form).sort()).toEqual(['message', 'to', 'username']);
  });

  test(`more than ${AFRICASTALKING_RECIPIENT_LIMIT} recipients are split into calls of at most that many`, async () => {
    const targets = Array.from({ length: 250 }, (_, i) => target(phone(i)));
    const results = await adapter.send(message(), targets, account());
    const sizes = fake.calls().map((c) => c.form.to!.split(',').length).sort((a, b) => b - a);
    expect(sizes).toEqual([100, 100, 50]);
    expect(results.map((r) => r.recipient)).toEqual(targets.map((t) => t.recipient));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(new Set(results.map((r) => r.providerMessageId)).size).toBe(250);
  });

  test('personalised texts each go in their own call; targets sharing a text share one', async () => {
    const targets = [
      target('+254711000001', 'Hi Amina'),
      target('+254711000002'),
      target('+254711000005', 'Hi Baraka'),
      target('+254711000004'),
    ];
    const results = await adapter.send(message('Hello'), targets, account());
    const byText = Object.fromEntries(fake.calls().map((c) => [c.form.message, c.form.to]));
    expect(fake.calls()).toHaveLength(3);
    expect(byText).toEqual({ 'Hi Amina': '+254711000001', Hello: '+254711000002,+254711000004', 'Hi Baraka': '+254711000005' });
    // Results stay in the targets' order, each with the id of its own message.
    const idOf = new Map(fake.messages().map((m) => [m.number, m]));
    expect(results.map((r) => r.recipient)).toEqual(targets.map((t) => t.recipient));
    for (const r of results) expect(r.providerMessageId).toBe(idOf.get(r.recipient)!.messageId);
    expect(idOf.get('+254711000005')!.message).toBe('Hi Baraka');
  });

  test('a number sent to twice goes in a second call, and both get an answer', async () => {
    const targets = [target('+254711000001'), target('+254711000002'), target('+254711000001')];
    const results = await adapter.send(message(), targets, account());
    expect(fake.calls().map((c) => c.form.to)).toEqual(['+254711000001,+254711000002', '+254711000001']);
    expect(results.map((r) => r.ok)).toEqual([true, true, true]);
    expect(results[0]!.providerMessageId).not.toBe(results[2]!.providerMessageId);
  });

  test('answers in another order are matched by number; a number left out fails, not retryable', async () => {
    fake.queue({ kind: 'reordered', omit: ['+254711000002'] });
    fake.setStatus('+254711000006', 406);
    const targets = [target('+254711000001'), target('+254711000002'), target('+254711000006'), target('+254711000004')];
    const results = await adapter.send(message(), targets, account());
    const idOf = new Map(fake.messages().map((m) => [m.number, m.messageId]));

    expect(results[0]).toEqual({ recipient: '+254711000001', ok: true, network: 'africastalking', providerMessageId: idOf.get('+254711000001') });
    expect(results[1]).toMatchObject({ recipient: '+254711000002', ok: false, retryable: false, error: "Africa's Talking: no answer for this number" });
    expect(results[1]!.providerFault).toBeUndefined();
    expect(results[2]).toMatchObject({ recipient: '+254711000006', ok: false, retryable: false, error: "Africa's Talking: UserInBlacklist (406)" });
    expect(results[3]).toEqual({ recipient: '+254711000004', ok: true, network: 'africastalking', providerMessageId: idOf.get('+254711000004') });
  });

  test('missing credentials fail every target as the account’s fault, without a call', async () => {
    const results = await adapter.send(message(), [target('+254711000001')], { ...account(), secrets: {} });
    expect(results).toEqual([
      { recipient: '+254711000001', ok: false, error: "Africa's Talking: missing username or apiKey", retryable: false, throttled: false, providerFault: true, network: 'africastalking' },
    ]);
    expect(fake.calls()).toHaveLength(0);
  });

  test('no targets, no call', async () => {
    expect(await adapter.send(message(), [], account())).toEqual([]);
    expect(fake.calls()).toHaveLength(0);
  });
});

describe('per-recipient status codes', () => {
  const classOf = (r: DeliveryResult) => (r.ok ? 'sent' : r.providerFault ? 'providerFault' : r.retryable ? 'retryable' : 'final');

  test.each([
    [100, 'sent'],
    [101, 'sent'],
    [102, 'sent'],
    [401, 'providerFault'],
    [402, 'providerFault'],
    [405, 'providerFault'],
    [407, 'providerFault'],
    [403, 'final'],
    [404, 'final'],
    [406, 'final'],
    [409, 'final'],
    [500, 'retryable'],
    [501, 'retryable'],
    [502, 'retryable'],
  ])('status %i is %s', async (code, expected) => {
    fake.setStatus('+254711000009', code);
    const [result] = await adapter.send(message(), [target('+254711000009')], account());
    expect(classOf(result!)).toBe(expected);
    expect(result!.throttled ?? false).toBe(false);
    expect(result!.network).toBe('africastalking');
    if (expected === 'sent') expect(result!.providerMessageId).toBe(fake.messages()[0]!.messageId);
    else {
      expect(result!.providerMessageId).toBeUndefined();
      expect(result!.error).toMatch(new RegExp(`^Africa's Talking: [A-Za-z]+ \\(${code}\\)$`));
    }
  });

  test('a number ending in 0003 is answered 403 InvalidPhoneNumber, the others of its call still sent', async () => {
    const results = await adapter.send(message(), [target('+254711000001'), target('+254711000003')], account());
    expect(results[0]).toMatchObject({ ok: true });
    expect(results[1]).toEqual({
      recipient: '+254711000003',
      ok: false,
      error: "Africa's Talking: InvalidPhoneNumber (403)",
      retryable: false,
      throttled: false,
      network: 'africastalking',
    });
  });

  test('a call refused as a whole for an invalid sender id is the account’s fault for every target', async () => {
    fake.queue({ kind: 'refused', message: 'InvalidSenderId' });
    const results = await adapter.send(message(), [target('+254711000001'), target('+254711000002')], account({ from: 'NOTMINE' }));
    for (const r of results) expect(r).toMatchObject({ ok: false, providerFault: true, retryable: false, error: "Africa's Talking: InvalidSenderId" });
  });
});

describe('whole-call failures', () => {
  const two = () => [target('+254711000001'), target('+254711000002')];

  test('a wrong api key is HTTP 401, the account’s fault for every target', async () => {
    const results = await adapter.send(message(), two(), account({ apiKey: 'wrong' }));
    expect(results).toHaveLength(2);
    for (const r of results) {
      expect(r).toEqual({
        recipient: r.recipient,
        ok: false,
        error: `Africa's Talking: HTTP 401: ${AFRICASTALKING_BAD_AUTH}`,
        retryable: false,
        throttled: false,
        providerFault: true,
        network: 'africastalking',
      });
    }
  });

  test('a wrong username is HTTP 401 too', async () => {
    const [r] = await adapter.send(message(), [target('+254711000001')], account({ username: 'someone-else' }));
    expect(r).toMatchObject({ ok: false, providerFault: true, error: `Africa's Talking: HTTP 401: ${AFRICASTALKING_BAD_AUTH}` });
  });

  test('HTTP 429 is retryable and throttled', async () => {
    fake.queue({ kind: 'http', status: 429, body: 'Too Many Requests' });
    const results = await adapter.send(message(), two(), account());
    for (const r of results) expect(r).toMatchObject({ ok: false, retryable: true, throttled: true, error: "Africa's Talking: HTTP 429: Too Many Requests" });
    expect(results[0]!.providerFault).toBeUndefined();
  });

  test('HTTP 500 is retryable, not throttled', async () => {
    fake.queue({ kind: 'http', status: 500, body: 'Internal Server Error' });
    const results = await adapter.send(message(), two(), account());
    for (const r of results) expect(r).toMatchObject({ ok: false, retryable: true, throttled: false, error: "Africa's Talking: HTTP 500: Internal Server Error" });
    // The next call succeeds: nothing of the failure sticks.
    expect((await adapter.send(message(), two(), account())).every((r) => r.ok)).toBe(true);
  });

  test('HTTP 400 is final', async () => {
    fake.queue({ kind: 'http', status: 400, body: 'Bad Request' });
    const [r] = await adapter.send(message(), [target('+254711000001')], account());
    expect(r).toMatchObject({ ok: false, retryable: false, throttled: false, error: "Africa's Talking: HTTP 400: Bad Request" });
    expect(r!.providerFault).toBeUndefined();
  });

  test('an unreadable answer fails, not retryable (it may have been sent)', async () => {
    fake.queue({ kind: 'malformed' });
    const results = await adapter.send(message(), two(), account());
    for (const r of results) {
      expect(r).toMatchObject({ ok: false, retryable: false });
      expect(r.error).toMatch(/^Africa's Talking: unreadable answer \(HTTP 201\)/);
    }
  });

  test('no answer within the time limit is retryable', async () => {
    const slow = createAfricasTalkingAdapter({ baseUrl: fake.url, timeoutMs: 200 });
    try {
      fake.queue({ kind: 'hang' });
      const started = Date.now();
      const results = await slow.send(message(), two(), account());
      expect(Date.now() - started).toBeLessThan(1_500);
      for (const r of results) expect(r).toMatchObject({ ok: false, retryable: true, throttled: false, error: "Africa's Talking: no answer within 200 ms" });
    } finally {
      await slow.close?.();
    }
  });

  test('a dropped connection is retryable', async () => {
    fake.queue({ kind: 'drop' });
    const [r] = await adapter.send(message(), [target('+254711000001')], account());
    expect(r).toMatchObject({ ok: false, retryable: true });
    expect(r!.error).toMatch(/^Africa's Talking: connection failed/);
  });

  test('a refused connection is retryable', async () => {
    const port = await closedPort();
    const nowhere = createAfricasTalkingAdapter({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2_000 });
    try {
      const results = await nowhere.send(message(), two(), account());
      for (const r of results) expect(r).toMatchObject({ ok: false, retryable: true, error: "Africa's Talking: connection failed (ECONNREFUSED)" });
    } finally {
      await nowhere.close?.();
    }
  });
});

describe('calls in flight', () => {
  test('an account’s bulk calls never exceed the bound; a transactional send does not wait behind them', async () => {
    const bounded = createAfricasTalkingAdapter({ baseUrl: fake.url, timeoutMs: 5_000, callsInFlight: 2 });
    try {
      fake.setBehaviour({ kind: 'delay', ms: 150 });
      // Ten personalised texts: ten calls.
      const bulkTargets = Array.from({ length: 10 }, (_, i) => target(phone(i), `Hello ${i}`));
      const bulk = bounded.send(message(), bulkTargets, account(), { lane: 'bulk' }).then((r) => ({ r, at: Date.now() }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(fake.peakInFlight()).toBe(2);
      const code = await bounded.send(message('Code 9999'), [target('+254799000001')], account(), { lane: 'transactional' });
      const codeAt = Date.now();
      const { r: bulkResults, at: bulkAt } = await bulk;

      expect(code[0]!.ok).toBe(true);
      expect(bulkResults.every((r) => r.ok)).toBe(true);
      // Two bulk calls and the transactional one: the reserved quarter, never more.
      expect(fake.peakInFlight()).toBe(3);
      // Five rounds of bulk calls take 750 ms; the code went out in its first rounds.
      expect(codeAt).toBeLessThan(bulkAt - 300);
    } finally {
      await bounded.close?.();
    }
  });

  test('another account has a bound of its own', async () => {
    const bounded = createAfricasTalkingAdapter({ baseUrl: fake.url, timeoutMs: 5_000, callsInFlight: 1 });
    try {
      fake.setBehaviour({ kind: 'delay', ms: 100 });
      const targets = Array.from({ length: 4 }, (_, i) => target(phone(i), `Hi ${i}`));
      fake.addAccount('globex', 'at-key-2');
      const [first, second] = await Promise.all([
        bounded.send(message(), targets, account()),
        bounded.send(message(), targets, account({ username: 'globex', apiKey: 'at-key-2' })),
      ]);
      expect([...first, ...second].every((r) => r.ok)).toBe(true);
      expect(fake.peakInFlight()).toBe(2);
      expect(fake.calls()).toHaveLength(8);
    } finally {
      await bounded.close?.();
    }
  });
});

describe('delivery reports', () => {
  const form = (fields: Record<string, string>) => new URLSearchParams(fields);

  test('the fake posts a report as Africa’s Talking does, and it parses as delivered', async () => {
    const receiver = await startWebhookReceiver();
    try {
      await adapter.send(message(), [target('+254711000001')], account());
      const sent = fake.messages()[0]!;
      const reply = await fake.pushReport(`${receiver.url}/v1/reports/africastalking/token123`, { id: sent.messageId, status: 'Success', phoneNumber: sent.number });
      expect(reply.status).toBe(200);
      const [request] = await receiver.waitForRequests(1);
      expect(request!.headers['content-type']).toBe('application/x-www-form-urlencoded');
      const posted = new URLSearchParams(request!.rawBody);
      expect(Object.fromEntries(posted)).toEqual({ id: sent.messageId, status: 'Success', phoneNumber: '+254711000001', networkCode: '63902', retryCount: '0' });

      const before = Date.now();
      const report = parseAfricasTalkingReport(posted);
      expect(report).toEqual({ providerMessageId: sent.messageId, delivered: true, at: expect.any(Date), status: 'Success' });
      expect(Math.abs(report!.at.getTime() - before)).toBeLessThan(1_000);
    } finally {
      await receiver.stop();
    }
  });

  test.each([
    ['Rejected', 'UserInBlackList', "Africa's Talking: UserInBlackList"],
    ['Failed', 'DeliveryFailure', "Africa's Talking: DeliveryFailure"],
    ['AbsentSubscriber', undefined, "Africa's Talking: AbsentSubscriber"],
    ['Expired', undefined, "Africa's Talking: Expired"],
    ['Failed', '', "Africa's Talking: Failed"],
  ])('%s (failureReason %p) is not delivered', (status, failureReason, error) => {
    const fields: Record<string, string> = { id: 'ATXid_1', status, phoneNumber: '+254711000001', networkCode: '63902', retryCount: '1' };
    if (failureReason !== undefined) fields.failureReason = failureReason;
    expect(parseAfricasTalkingReport(form(fields))).toEqual({ providerMessageId: 'ATXid_1', delivered: false, at: expect.any(Date), error, status });
  });

  test.each(['Sent', 'Submitted', 'Buffered', 'SomethingNew'])('%s records nothing', (status) => {
    expect(parseAfricasTalkingReport(form({ id: 'ATXid_1', status, phoneNumber: '+254711000001' }))).toBeNull();
  });

  test('a report without an id or a status records nothing', () => {
    expect(parseAfricasTalkingReport(form({ status: 'Success', phoneNumber: '+254711000001' }))).toBeNull();
    expect(parseAfricasTalkingReport(form({ id: 'ATXid_1', phoneNumber: '+254711000001' }))).toBeNull();
    expect(parseAfricasTalkingReport(form({ id: ' ', status: 'Success' }))).toBeNull();
  });
});

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
