import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { createSmsGatewayAdapter } from '../../src/delivery/channels/sms-gateway.js';
import { createSmtpAdapter, htmlToText } from '../../src/delivery/channels/smtp.js';
import { isMarkup } from '../../src/delivery/html.js';
import { createWhatsAppCloudAdapter } from '../../src/delivery/channels/whatsapp-cloud.js';
import type { ChannelAdapter, DeliveryTarget, OutboundMessage } from '../../src/delivery/types.js';
import type { StoredCredentials } from '../../src/delivery/credentials.js';
import { startSmsGatewayFake, type SmsGatewayFake, type SmsGatewayFakeOptions } from '../fakes/sms-gateway-fake.js';
import { startSmtpSink, type SmtpSink } from '../fakes/smtp-sink.js';
import { startWhatsAppFake, type WhatsAppFake } from '../fakes/whatsapp-fake.js';

const phone = (i: number) => `+2547${String(10_000_000 + i).padStart(8, '0')}`;
const targets = (n: number, make: (i: number) => string = phone): DeliveryTarget[] =>
  Array.from({ length: n }, (_, i) => ({ recipient: make(i + 1), clientId: randomUUID() }));
const message = (channel: OutboundMessage['channel'], extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel,
  orgId: randomUUID(),
  fromName: 'Acme Ltd',
  body: 'Your order has shipped',
  ...extra,
});
const elapsed = async <T>(work: Promise<T>): Promise<[T, number]> => {
  const start = Date.now();
  const value = await work;
  return [value, Date.now() - start];
};

/**
 * The hooks around a describe's tests of an adapter on a fake provider (both made in its beforeAll):
 * every test starts with the fake back to success and no calls recorded; after the last, the adapter
 * closes, then the fake stops.
 */
function fakeProviderHooks(fake: () => SmsGatewayFake | WhatsAppFake, adapter: () => ChannelAdapter) {
  beforeEach(() => {
    fake().reset();
    fake().calls.length = 0;
  });
  afterAll(async () => {
    await adapter().close?.();
    await fake().stop();
  });
}

describe('SMS gateway adapter', () => {
  const creds: StoredCredentials = { sms_apiKey: 'key-1', sms_partnerID: '42', sms_shortCode: 'HERALD' };
  let gateway: SmsGatewayFake;
  let sms: ChannelAdapter;
  beforeAll(async () => {
    gateway = await startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' });
    sms = createSmsGatewayAdapter({ baseUrl: `${gateway.url}/`, timeoutMs: 500, callsInFlight: 4 });
  });
  fakeProviderHooks(() => gateway, () => sms);

  test('one target: sendsms with the documented fields, success carries message and network ids', async () => {
    const [target] = targets(1);
    const results = await sms.send(message('sms'), [target], creds);
    expect(gateway.calls).toHaveLength(1);
    expect(gateway.calls[0].path).toBe('/api/services/sendsms/');
    expect(gateway.calls[0].body).toEqual({ apikey: 'key-1', partnerID: '42', message: 'Your order has shipped', shortcode: 'HERALD', mobile: target.recipient.slice(1) });
    expect(results).toEqual([{ recipient: target.recipient, ok: true, network: '1', providerMessageId: expect.any(String) }]);
  });

  test('45 targets: sendbulk in calls of 20, 20 and 5 with exact payloads; at most callsInFlight calls at once per account, across sends', async () => {
    const list = targets(45);
    const results = await sms.send(message('sms'), list, creds);
    expect(gateway.calls.map((c) => [c.path, c.body.count, c.body.smslist.length])).toEqual([
      ['/api/services/sendbulk/', 20, 20],
      ['/api/services/sendbulk/', 20, 20],
      ['/api/services/sendbulk/', 5, 5],
    ]);
    const sent = gateway.calls.flatMap((c) => c.body.smslist);
    expect(sent).toEqual(
      list.map((t) => ({ partnerID: '42', apikey: 'key-1', pass_type: 'plain', clientsmsid: t.clientId, mobile: t.recipient.slice(1), message: 'Your order has shipped', shortcode: 'HERALD' })),
    );
    expect(results.map((r) => [r.recipient, r.ok])).toEqual(list.map((t) => [t.recipient, true]));
    expect(new Set(results.map((r) => r.providerMessageId)).size).toBe(45);

    // Two sends (say two campaign batches) side by side share the account's bound and fill it.
    gateway.setBehaviour({ kind: 'delay', ms: 50 });
    const [a, b] = await Promise.all([sms.send(message('sms'), targets(60), creds), sms.send(message('sms'), targets(60), creds)]);
    expect([...a, ...b].every((r) => r.ok)).toBe(true);
    expect(gateway.peakInFlight).toBe(4);
  });

  test.each([
    [1001, false], [1002, false], [1003, false], [1004, false], [1005, true], [1006, false],
    [1007, true], [4090, true], [4091, false], [4092, false], [4093, false],
  ])('response-code %i fails only its message, retryable=%s', async (code, retryable) => {
    const list = targets(3);
    gateway.setBehaviour({ kind: 'code', code }, list[1].recipient);
    const results = await sms.send(message('sms'), list, creds);
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ recipient: list[1].recipient, retryable, network: '1', error: expect.stringMatching(new RegExp(`^SMS gateway: .+ \\(${code}\\)$`)) });
  });

  test('error text names the reason and code; wrong credentials come back as 1006', async () => {
    const [target] = targets(1);
    gateway.setBehaviour({ kind: 'code', code: 1003 }, target.recipient);
    expect((await sms.send(message('sms'), [target], creds))[0].error).toBe('SMS gateway: Invalid mobile number (1003)');
    const [bad] = await sms.send(message('sms'), targets(1), { ...creds, sms_apiKey: 'wrong' });
    expect(bad).toMatchObject({ ok: false, retryable: false, error: 'SMS gateway: Invalid credentials (1006)' });
  });

  test.each([
    ['HTTP 500', { kind: 'http', status: 500 } as const, true, /^SMS gateway: HTTP 500/],
    ['HTTP 401', { kind: 'http', status: 401 } as const, false, /^SMS gateway: HTTP 401/],
    ['a malformed body', { kind: 'malformed' } as const, false, /^SMS gateway: unreadable answer/],
    ['a dropped connection', { kind: 'drop' } as const, true, /^SMS gateway: connection failed/],
  ])('%s fails every message of the call', async (_name, behaviour, retryable, error) => {
    gateway.setBehaviour(behaviour);
    const results = await sms.send(message('sms'), targets(3), creds);
    expect(results).toHaveLength(3);
    for (const r of results) expect(r).toMatchObject({ ok: false, retryable, error: expect.stringMatching(error) });
  });

  test('a gateway slower than timeoutMs fails, retryable, well before it answers', async () => {
    gateway.setBehaviour({ kind: 'delay', ms: 3000 });
    const [results, ms] = await elapsed(sms.send(message('sms'), targets(2), creds));
    expect(ms).toBeLessThan(1500);
    for (const r of results) expect(r).toMatchObject({ ok: false, retryable: true, error: 'SMS gateway: no answer within 500 ms' });
  });

  /** Sends `list` through an adapter on a gateway fake of its own, arranged by `arrange`; stops both after. */
  async function viaOwnGateway(options: SmsGatewayFakeOptions, list: DeliveryTarget[], arrange: (own: SmsGatewayFake) => void) {
    const own = await startSmsGatewayFake(options);
    const adapter = createSmsGatewayAdapter({ baseUrl: own.url, timeoutMs: 1000 });
    try {
      arrange(own);
      return { results: await adapter.send(message('sms'), list, creds), calls: own.calls, host: new URL(own.url).host };
    } finally {
      await adapter.close?.();
      await own.stop();
    }
  }

  test('answers out of order are matched to their messages by clientsmsid', async () => {
    const list = targets(5);
    const { results, calls } = await viaOwnGateway({ reverseAnswers: true }, list, (own) => own.setBehaviour({ kind: 'code', code: 1003 }, list[1].recipient));
    expect(results.map((r) => [r.recipient, r.ok])).toEqual(list.map((t, i) => [t.recipient, i !== 1]));
    expect(calls[0].body.smslist.map((s: { clientsmsid: string }) => s.clientsmsid)).toEqual(list.map((t) => t.clientId));
  });

  test('without clientsmsid or networkid in answers: matched by number, network is the gateway host', async () => {
    const list = targets(3);
    const { results, host } = await viaOwnGateway({ omitClientSmsId: true, networkId: null }, list, (own) =>
      own.setBehaviour({ kind: 'code', code: 1002 }, list[2].recipient),
    );
    expect(results.map((r) => r.ok)).toEqual([true, true, false]);
    expect(results[0].network).toBe(host);
  });
});

describe('WhatsApp Cloud adapter', () => {
  let wa: WhatsAppFake;
  let adapter: ChannelAdapter;
  let creds: StoredCredentials;
  beforeAll(async () => {
    wa = await startWhatsAppFake();
    adapter = createWhatsAppCloudAdapter({ baseUrl: wa.url, timeoutMs: 500, concurrency: 3 });
    creds = { whatsapp_access_token: wa.token, whatsapp_phone_number_id: wa.phoneNumberId };
  });
  fakeProviderHooks(() => wa, () => adapter);

  test('one call per target with the bearer token and the documented body', async () => {
    const list = targets(4);
    const results = await adapter.send(message('whatsapp'), list, creds);
    expect(wa.calls).toHaveLength(4);
    expect(wa.calls[0]).toEqual({
      phoneNumberId: wa.phoneNumberId,
      authorization: `Bearer ${wa.token}`,
      body: { messaging_product: 'whatsapp', recipient_type: 'individual', to: list[0].recipient.slice(1), type: 'text', text: { preview_url: false, body: 'Your order has shipped' }, biz_opaque_callback_data: list[0].clientId },
    });
    for (const [i, r] of results.entries()) {
      expect(r).toEqual({ recipient: list[i].recipient, ok: true, network: 'whatsapp-cloud', providerMessageId: expect.stringMatching(/^wamid\./) });
    }
  });

  test('an invalid token is 190, final', async () => {
    const [r] = await adapter.send(message('whatsapp'), targets(1), { ...creds, whatsapp_access_token: 'expired' });
    expect(r).toMatchObject({ ok: false, retryable: false, error: 'WhatsApp: invalid or expired access token (190)' });
  });

  test.each([
    [130429, true, /rate limited/],
    [131056, true, /rate limited/],
    [131047, false, /24-hour customer service window closed; a template message is required \(131047\)/],
    [131026, false, /undeliverable/],
    [131000, true, /Something went wrong \(131000\)/],
  ])('error %i: retryable=%s, clear reason', async (code, retryable, error) => {
    const list = targets(2);
    wa.setBehaviour({ kind: 'error', code }, list[0].recipient);
    const results = await adapter.send(message('whatsapp'), list, creds);
    expect(results[0]).toMatchObject({ ok: false, retryable, network: 'whatsapp-cloud', error: expect.stringMatching(error) });
    expect(results[1].ok).toBe(true);
  });

  test('other 4xx keep the provider message and are final', async () => {
    const [r] = await adapter.send(message('whatsapp'), targets(1), { ...creds, whatsapp_phone_number_id: '999' });
    expect(r).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^WhatsApp: Unsupported post request.*\(100\)$/) });
  });

  test.each([
    ['HTTP 500', { kind: 'http', status: 500 } as const, true, /^WhatsApp: HTTP 500$/],
    ['a malformed body', { kind: 'malformed' } as const, false, /^WhatsApp: unreadable answer/],
    ['a dropped connection', { kind: 'drop' } as const, true, /^WhatsApp: connection failed/],
  ])('%s fails the message', async (_name, behaviour, retryable, error) => {
    wa.setBehaviour(behaviour);
    const [r] = await adapter.send(message('whatsapp'), targets(1), creds);
    expect(r).toMatchObject({ ok: false, retryable, error: expect.stringMatching(error) });
  });

  test('a slow API fails, retryable, within the timeout', async () => {
    wa.setBehaviour({ kind: 'delay', ms: 3000 });
    const [[r], ms] = await elapsed(adapter.send(message('whatsapp'), targets(1), creds));
    expect(ms).toBeLessThan(1500);
    expect(r).toMatchObject({ ok: false, retryable: true, error: 'WhatsApp: no answer within 500 ms' });
  });
});

describe('SMTP adapter', () => {
  let sink: SmtpSink;
  let smtp: ChannelAdapter;
  let creds: StoredCredentials;
  const email = (i: number) => `person${i}@example.com`;
  beforeEach(async () => {
    sink = await startSmtpSink({ auth: { user: 'mailer', pass: 's3cret' } });
    smtp = createSmtpAdapter({ timeoutMs: 2000, maxConnections: 2, allowInsecure: true });
    creds = { email_host: sink.host, email_port: String(sink.port), email_from: 'noreply@herald.test' };
  });
  afterEach(async () => {
    await smtp.close?.();
    await sink.stop();
  });

  test('HTML body: From with display name, subject, html and a derived text part, one message per recipient', async () => {
    const body = '<h1>Welcome &amp; hello</h1><p>Your code is <b>1234</b>.</p>';
    const list = targets(2, email);
    const results = await smtp.send(message('email', { fromName: 'Acme, Inc.', subject: 'Hi there', body }), list, creds);
    expect(results.map((r) => [r.ok, r.network])).toEqual([[true, `smtp:${sink.host}`], [true, `smtp:${sink.host}`]]);
    expect(sink.messages.map((m) => m.envelopeTo).sort()).toEqual([[email(1)], [email(2)]]);
    const [m] = sink.messages;
    expect(m.headers.from).toBe('"Acme, Inc." <noreply@herald.test>');
    expect(m.headers.to).toBe(m.envelopeTo[0]);
    expect(m.envelopeFrom).toBe('noreply@herald.test');
    expect(m.subject).toBe('Hi there');
    expect(m.html).toBe(body);
    // html-to-text: a heading is followed by a blank line.
    expect(m.text?.trim()).toBe('Welcome & hello\n\nYour code is 1234.');
    expect(m.authUser).toBeUndefined();
  });

  test('plain body goes as text only; logs in only when a user is set', async () => {
    const body = 'Price: 5 < 7 & 9 > 8';
    await smtp.send(message('email', { subject: 'Plain', body }), targets(1, email), { ...creds, email_user: 'mailer', email_pass: 's3cret' });
    const [m] = sink.messages;
    expect(m.html).toBe(false);
    expect(m.text?.trim()).toBe(body);
    expect(m.headers.from).toMatch(/^"?Acme Ltd"? <noreply@herald\.test>$/);
    expect(m.authUser).toBe('mailer');
  });

  test('base64 attachment content round-trips byte for byte', async () => {
    const bytes = randomBytes(5000);
    const attachments = [{ filename: 'report.bin', content: bytes.toString('base64'), contentType: 'application/octet-stream' }];
    const [r] = await smtp.send(message('email', { subject: 'Report', attachments }), targets(1, email), creds);
    expect(r.ok).toBe(true);
    const [a] = sink.messages[0].attachments;
    expect(a).toMatchObject({ filename: 'report.bin', contentType: 'application/octet-stream' });
    expect(Buffer.compare(a.content, bytes)).toBe(0);
  });

  test('a 550-rejected recipient fails with the reply, final; 451 is retryable; the others go through', async () => {
    const list = targets(3, email);
    sink.setBehaviour({ reject: { [email(1)]: 550, [email(3)]: 451 } });
    const results = await smtp.send(message('email', { subject: 'S' }), list, creds);
    expect(results[0]).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^550 5\.1\.1 .*Recipient address rejected/) });
    expect(results[1]).toMatchObject({ ok: true });
    expect(results[2]).toMatchObject({ ok: false, retryable: true, error: expect.stringMatching(/^451 /) });
    expect(sink.messages.map((m) => m.envelopeTo)).toEqual([[email(2)]]);
  });

  test('authentication failure is final and carries the server reply', async () => {
    const [r] = await smtp.send(message('email', { subject: 'S' }), targets(1, email), { ...creds, email_user: 'mailer', email_pass: 'wrong' });
    expect(r).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^535 /) });
  });

  test('a refused connection is retryable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const [r] = await smtp.send(message('email', { subject: 'S' }), targets(1, email), { ...creds, email_port: String(port) });
    expect(r).toMatchObject({ ok: false, retryable: true, network: `smtp:${sink.host}`, error: expect.stringMatching(/^SMTP: /) });
  });

  test('a server that stalls after DATA fails the message at the hard deadline, final (it may have been delivered)', async () => {
    const quick = createSmtpAdapter({ timeoutMs: 250, maxConnections: 1, allowInsecure: true });
    sink.setBehaviour({ stallDataMs: 5000 });
    try {
      const [[r], ms] = await elapsed(quick.send(message('email', { subject: 'S' }), targets(1, email), creds));
      expect(ms).toBeLessThan(2000);
      expect(r).toMatchObject({ ok: false, retryable: false, error: 'SMTP: no answer within 500 ms; the message may have been delivered' });
    } finally {
      await quick.close?.();
    }
  });

  test('one pool per credential set, reused across sends; close() ends its connections', async () => {
    const first = await smtp.send(message('email', { subject: 'A' }), targets(6, email), creds);
    expect(first.every((r) => r.ok)).toBe(true);
    const afterFirst = sink.connections.total;
    expect(afterFirst).toBeGreaterThanOrEqual(1);
    expect(afterFirst).toBeLessThanOrEqual(2);
    await smtp.send(message('email', { subject: 'B' }), targets(4, email), creds);
    expect(sink.connections.total).toBe(afterFirst);
    await smtp.send(message('email', { subject: 'C' }), targets(1, email), { ...creds, email_user: 'mailer', email_pass: 's3cret' });
    expect(sink.connections.total).toBe(afterFirst + 1);
    expect(sink.messages).toHaveLength(11);

    expect(sink.connections.open).toBeGreaterThan(0);
    await smtp.close?.();
    const deadline = Date.now() + 2000;
    while (sink.connections.open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(sink.connections.open).toBe(0);
  });
});

describe('HTML detection and text alternative', () => {
  test('markup is recognised by its tags only', () => {
    expect(isMarkup('<p>Hi</p>')).toBe(true);
    expect(isMarkup('Line one<br/>two')).toBe(true);
    expect(isMarkup('5 < 7 and 9 > 8')).toBe(false);
  });

  test('tags stripped, entities decoded once, whitespace collapsed', () => {
    const html = '<style>p { color: red }</style><p>A  &lt;b&gt; is   bold &#39;x&#39; &#x263A;</p>\n\n\n<ul><li>one</li><li>two</li></ul>';
    expect(htmlToText(html)).toBe("A <b> is bold 'x' ☺\n\n- one\n- two");
  });
});
