import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { settleAbandoned } from '../../src/delivery/pipeline.js';
import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { startSmtpSink, type SinkBehaviour, type SmtpSink } from '../fakes/smtp-sink.js';
import { startWhatsAppFake, type WhatsAppFake } from '../fakes/whatsapp-fake.js';
import { liveOrg as liveOrgOf } from '../helpers/live-org.js';
import { client, isolatedDatabase, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';

/*
 * Provider faults over HTTP against a live-mode Herald: the SMS gateway, the WhatsApp Cloud API and
 * the SMTP server answer slowly, answer 5xx, answer garbage, hang up mid-request or refuse
 * recipients. What spec/providers.md promises: every send returns; retryable failures (timeouts,
 * dropped connections, 5xx, SMS 1005/1007/4090, WhatsApp rate limits, SMTP 4xx) are tried again
 * with backoff and jitter a bounded number of times; final ones are tried once; the log says why.
 * A campaign's recipients the provider throttles are sent again until it stops (sending-engine.test.ts);
 * here a campaign meets the other retryable failures.
 * (Adapter-level classification is in channels.test.ts; this file is about the whole service.)
 */
const TIMEOUT_MS = 300;
/** `transmit` in src/delivery/engine.ts: one call and two retries. */
const ATTEMPTS = 3;
/** Generous: the worst case here is about 3 x 600 ms plus 0.9 s of backoff. */
const CEILING_MS = 15_000;

let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;
let wa: WhatsAppFake;
let sink: SmtpSink;

beforeAll(async () => {
  [gateway, wa, sink] = await Promise.all([startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }), startWhatsAppFake(), startSmtpSink()]);
  // A database of its own: the in-process workers (campaigns go through the queue here) must not
  // take the sandbox-mode jobs of other test files, nor theirs ours.
  db = await isolatedDatabase(`faults_${randomBytes(3).toString('hex')}`);
  herald = await startTestHerald({
    DATABASE_URL: db.url,
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    WHATSAPP_API_URL: wa.url,
    PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS),
    CAMPAIGN_INLINE_LIMIT: '0',
    WORKERS: 'true',
  });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), wa?.stop(), sink?.stop()]);
  await db?.drop();
});

beforeEach(() => {
  gateway.reset();
  gateway.calls.length = 0;
  wa.reset();
  wa.calls.length = 0;
  sink.setBehaviour({});
  sink.rcptAttempts.length = 0;
});

const phone = (i: number) => `+254712${String(345_000 + i)}`;
const email = (i: number) => `person${i}@example.com`;

/** A fresh organization with every channel's credentials set through the API. */
const liveOrg = (overrides: Record<string, string> = {}) => liveOrgOf(api, { sink, wa }, overrides);

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
const logs = async (org: Org, query = '') => (await api.get(`/message-logs?limit=1000${query}`, { token: org.token })).body as any[];

/** Calls that carried this number to the SMS gateway (sendsms or inside a sendbulk list). */
const smsAttempts = (to: string) =>
  gateway.calls.flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body])).filter((m: any) => m?.mobile === to.slice(1)).length;
const waAttempts = (to: string) => wa.calls.filter((c) => c.body?.to === to.slice(1)).length;
const rcptAttempts = (to: string) => sink.rcptAttempts.filter((a) => a === to).length;

async function timed<T>(work: Promise<T>): Promise<T> {
  const start = Date.now();
  const value = await work;
  expect(Date.now() - start).toBeLessThan(CEILING_MS);
  return value;
}

function sendBody(channel: 'sms' | 'whatsapp' | 'email', to: string | string[]) {
  return channel === 'email' ? { type: 'email', to, subject: 'Your order', message: 'It has shipped' } : { type: channel, to, message: 'Your order has shipped' };
}

/** The text a person reads in a log: a provider, a reason, no stack or object dump. */
function expectReadable(error: unknown) {
  expect(typeof error).toBe('string');
  expect(error).not.toMatch(/undefined|null|\[object|NaN|\n|\s{2}|at .*\.ts:/);
  expect((error as string).length).toBeLessThan(300);
}

interface Fault {
  channel: 'sms' | 'whatsapp' | 'email';
  fault: string;
  /** Makes the provider misbehave for `to`. */
  arrange: (to: string) => void;
  /** Credentials set through the API instead of the working ones. */
  credentials?: Record<string, string>;
  /** How many times Herald reached the provider for `to`. */
  attempts: number;
  /** The fault strikes before RCPT TO: attempts are the SMTP connections opened. */
  perConnection?: true;
  error: string | RegExp;
}

const SMS = phone(1);
const EMAIL = email(1);
const smtp = (behaviour: SinkBehaviour) => () => sink.setBehaviour(behaviour);

const RETRYABLE: Fault[] = [
  { channel: 'sms', fault: 'answers after the timeout', arrange: () => gateway.setBehaviour({ kind: 'delay', ms: 5000 }), attempts: ATTEMPTS, error: `SMS gateway: no answer within ${TIMEOUT_MS} ms` },
  { channel: 'sms', fault: 'answers HTTP 503', arrange: () => gateway.setBehaviour({ kind: 'http', status: 503, body: 'Service Unavailable' }), attempts: ATTEMPTS, error: 'SMS gateway: HTTP 503: Service Unavailable' },
  { channel: 'sms', fault: 'drops the connection', arrange: () => gateway.setBehaviour({ kind: 'drop' }), attempts: ATTEMPTS, error: /^SMS gateway: connection failed \((ECONNRESET|socket hang up)\)$/ },
  { channel: 'sms', fault: 'answers 4090 (internal error)', arrange: (to) => gateway.setBehaviour({ kind: 'code', code: 4090 }, to), attempts: ATTEMPTS, error: 'SMS gateway: Internal Error. Try again after 5 minutes (4090)' },
  { channel: 'sms', fault: 'answers 1005 (system error)', arrange: (to) => gateway.setBehaviour({ kind: 'code', code: 1005 }, to), attempts: ATTEMPTS, error: 'SMS gateway: Failed. System error (1005)' },
  { channel: 'whatsapp', fault: 'answers after the timeout', arrange: () => wa.setBehaviour({ kind: 'delay', ms: 5000 }), attempts: ATTEMPTS, error: `WhatsApp: no answer within ${TIMEOUT_MS} ms` },
  { channel: 'whatsapp', fault: 'answers HTTP 500', arrange: () => wa.setBehaviour({ kind: 'http', status: 500 }), attempts: ATTEMPTS, error: 'WhatsApp: HTTP 500' },
  { channel: 'whatsapp', fault: 'answers a Graph 5xx error', arrange: () => wa.setBehaviour({ kind: 'error', code: 131000 }), attempts: ATTEMPTS, error: 'WhatsApp: (#131000) Something went wrong (131000)' },
  { channel: 'whatsapp', fault: 'drops the connection', arrange: () => wa.setBehaviour({ kind: 'drop' }), attempts: ATTEMPTS, error: /^WhatsApp: connection failed \((ECONNRESET|socket hang up)\)$/ },
  { channel: 'whatsapp', fault: 'rate limits (130429)', arrange: (to) => wa.setBehaviour({ kind: 'error', code: 130429 }, to), attempts: ATTEMPTS, error: 'WhatsApp: rate limited by WhatsApp (throughput) (130429)' },
  { channel: 'email', fault: 'never greets', arrange: smtp({ stallGreetingMs: 5000 }), perConnection: true, attempts: ATTEMPTS, error: 'SMTP: Greeting never received' },
  { channel: 'email', fault: 'drops the connection at RCPT TO', arrange: (to) => sink.setBehaviour({ drop: [to] }), attempts: ATTEMPTS, error: 'SMTP: Connection closed unexpectedly' },
  { channel: 'email', fault: 'answers 451 to the recipient', arrange: (to) => sink.setBehaviour({ reject: { [to]: 451 } }), attempts: ATTEMPTS, error: `451 4.2.1 <${EMAIL}>: Mailbox busy, try again later` },
];

const FINAL: Fault[] = [
  { channel: 'sms', fault: 'answers a malformed body', arrange: () => gateway.setBehaviour({ kind: 'malformed' }), attempts: 1, error: 'SMS gateway: unreadable answer: <html>Bad gateway</html>' },
  { channel: 'sms', fault: 'answers HTTP 401', arrange: () => gateway.setBehaviour({ kind: 'http', status: 401, body: 'Unauthorized' }), attempts: 1, error: 'SMS gateway: HTTP 401: Unauthorized' },
  { channel: 'sms', fault: 'rejects the number (1003)', arrange: (to) => gateway.setBehaviour({ kind: 'code', code: 1003 }, to), attempts: 1, error: 'SMS gateway: Invalid mobile number (1003)' },
  { channel: 'sms', fault: 'is out of bulk credits (1004)', arrange: (to) => gateway.setBehaviour({ kind: 'code', code: 1004 }, to), attempts: 1, error: 'SMS gateway: Low bulk credits (1004)' },
  { channel: 'sms', fault: 'refuses the API key set through the API (1006)', arrange: () => {}, credentials: { sms_apiKey: 'revoked-key' }, attempts: 1, error: 'SMS gateway: Invalid credentials (1006)' },
  { channel: 'whatsapp', fault: 'answers a malformed body', arrange: () => wa.setBehaviour({ kind: 'malformed' }), attempts: 1, error: 'WhatsApp: unreadable answer (HTTP 200)' },
  { channel: 'whatsapp', fault: 'refuses the token set through the API (190)', arrange: () => {}, credentials: { whatsapp_access_token: 'expired-token' }, attempts: 1, error: 'WhatsApp: invalid or expired access token (190)' },
  { channel: 'whatsapp', fault: 'says the 24-hour window is closed (131047)', arrange: (to) => wa.setBehaviour({ kind: 'error', code: 131047 }, to), attempts: 1, error: 'WhatsApp: 24-hour customer service window closed; a template message is required (131047)' },
  { channel: 'whatsapp', fault: 'cannot deliver to the number (131026)', arrange: (to) => wa.setBehaviour({ kind: 'error', code: 131026 }, to), attempts: 1, error: 'WhatsApp: message undeliverable to this number (131026)' },
  { channel: 'email', fault: 'answers 550 to the recipient', arrange: (to) => sink.setBehaviour({ reject: { [to]: 550 } }), attempts: 1, error: `550 5.1.1 <${EMAIL}>: Recipient address rejected` },
  { channel: 'email', fault: 'answers 554 to the recipient', arrange: (to) => sink.setBehaviour({ reject: { [to]: 554 } }), attempts: 1, error: `554 5.1.1 <${EMAIL}>: Recipient address rejected` },
  { channel: 'email', fault: 'greets with a line that is not SMTP', arrange: smtp({ garbageGreeting: true }), perConnection: true, attempts: 1, error: /^SMTP: Invalid greeting\. response=this is not an SMTP greeting/ },
  // The message may already be accepted: sending it again could deliver it twice.
  { channel: 'email', fault: 'stalls after DATA', arrange: smtp({ stallDataMs: 3000 }), attempts: 1, error: /^SMTP: no answer within \d+ ms; the message may have been delivered$/ },
];

async function sendOne(f: Fault) {
  const org = await liveOrg(f.credentials);
  const to = f.channel === 'email' ? EMAIL : SMS;
  f.arrange(to);
  const connectionsBefore = sink.connections.total;
  const before = await credits(org);
  const res = await timed(api.post('/notifications/send', sendBody(f.channel, to), { token: org.token }));
  const attempts = f.perConnection
    ? sink.connections.total - connectionsBefore
    : { sms: smsAttempts, whatsapp: waAttempts, email: rcptAttempts }[f.channel](to);
  return { org, to, res, attempts, before };
}

async function expectFailedAndLogged(f: Fault, { org, to, res, before }: Awaited<ReturnType<typeof sendOne>>) {
  expect(res.status).toBe(502);
  expect(res.body).toEqual({ statusCode: 502, message: expect.any(String), error: 'Bad Gateway' });
  if (typeof f.error === 'string') expect(res.body.message).toBe(f.error);
  else expect(res.body.message).toMatch(f.error);
  expectReadable(res.body.message);
  // One log, the recipient failed with the same reason the caller saw, nothing charged.
  const list = await logs(org);
  expect(list).toHaveLength(1);
  expect(list[0]).toMatchObject({ channel: f.channel, cost: 0, recipients: [{ recipient: to, status: 'failed', error: res.body.message }] });
  expect(await credits(org)).toBe(before);
}

describe('one recipient: POST /notifications/send answers 502 with the reason, logs it once, charges nothing', () => {
  test.each(RETRYABLE.map((f) => [f.channel, f.fault, f] as const))('%s provider %s: retryable, tried three times', async (_c, _f, f) => {
    const outcome = await sendOne(f);
    await expectFailedAndLogged(f, outcome);
    expect(outcome.attempts).toBe(f.attempts);
  });

  test.each(FINAL.map((f) => [f.channel, f.fault, f] as const))('%s provider %s: final, tried once', async (_c, _f, f) => {
    const outcome = await sendOne(f);
    await expectFailedAndLogged(f, outcome);
    expect(outcome.attempts).toBe(1);
  });

  test('a fault that clears before the last attempt ends in success, charged once', async () => {
    const org = await liveOrg();
    const before = await credits(org);
    // The first answer is a 503; the fault is gone by the time the retry arrives.
    gateway.setBehaviour({ kind: 'http', status: 503 });
    const first = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (gateway.calls.length >= 1) {
          gateway.reset();
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    const res = await timed(api.post('/notifications/send', sendBody('sms', SMS), { token: org.token }));
    await first;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ recipient: SMS, status: 'success' });
    expect(smsAttempts(SMS)).toBe(2);
    expect(await credits(org)).toBe(before - 1);
    expect((await logs(org))[0]).toMatchObject({ cost: 1, recipients: [{ recipient: SMS, status: 'success' }] });
  });
});

describe('retries wait with exponential backoff and jitter', () => {
  afterEach(() => jest.restoreAllMocks());

  /** Sends once against a gateway answering 503 with Math.random pinned; returns the retry waits. */
  async function backoffWith(random: number) {
    const org = await liveOrg();
    gateway.calls.length = 0;
    gateway.setBehaviour({ kind: 'http', status: 503 });
    jest.spyOn(Math, 'random').mockReturnValue(random);
    const timers = jest.spyOn(globalThis, 'setTimeout');
    const res = await timed(api.post('/notifications/send', sendBody('sms', SMS), { token: org.token }));
    const delays = timers.mock.calls.map((c) => c[1]);
    jest.restoreAllMocks();
    expect(res.status).toBe(502);
    const at = gateway.calls.map((c) => c.at);
    expect(at).toHaveLength(ATTEMPTS);
    return { delays, gaps: [at[1]! - at[0]!, at[2]! - at[1]!] };
  }

  test('the wait doubles per attempt and is scaled by a random factor in [0.5, 1.5)', async () => {
    // 200 ms * 2^(n-1) * (0.5 + random): the lowest and highest draws give different waits.
    const low = await backoffWith(0);
    expect(low.delays).toEqual(expect.arrayContaining([100, 200]));
    const high = await backoffWith(0.999);
    expect(high.delays).toEqual(expect.arrayContaining([expect.closeTo(299.8, 1), expect.closeTo(599.6, 1)]));
    expect(high.delays).not.toContain(100);
    // The gateway saw the waits (timers never fire early; 5 ms for clock rounding).
    expect(low.gaps[0]).toBeGreaterThanOrEqual(95);
    expect(low.gaps[1]).toBeGreaterThanOrEqual(195);
    expect(high.gaps[0]).toBeGreaterThanOrEqual(295);
    expect(high.gaps[1]).toBeGreaterThanOrEqual(595);
  });
});

describe('several recipients: 200 with one item each, retries only for the retryable ones', () => {
  test('SMS bulk: a final code is sent once, a transient one three times, only the success is charged', async () => {
    const org = await liveOrg();
    const [ok, invalid, busy] = [phone(11), phone(12), phone(13)];
    gateway.setBehaviour({ kind: 'code', code: 1003 }, invalid);
    gateway.setBehaviour({ kind: 'code', code: 4090 }, busy);
    const before = await credits(org);
    const res = await timed(api.post('/notifications/send', sendBody('sms', [ok, invalid, busy]), { token: org.token }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { recipient: ok, status: 'success' },
      { recipient: invalid, status: 'failed', error: 'SMS gateway: Invalid mobile number (1003)' },
      { recipient: busy, status: 'failed', error: 'SMS gateway: Internal Error. Try again after 5 minutes (4090)' },
    ]);
    expect([smsAttempts(ok), smsAttempts(invalid), smsAttempts(busy)]).toEqual([1, 1, ATTEMPTS]);
    expect(gateway.calls.map((c) => c.path)).toEqual(['/api/services/sendbulk/', '/api/services/sendsms/', '/api/services/sendsms/']);
    expect(await credits(org)).toBe(before - 1);
    const list = await logs(org);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ cost: 1, recipients: res.body });
  });

  test('a gateway down for the whole call: every recipient retried together, then failed', async () => {
    const org = await liveOrg();
    const numbers = [phone(21), phone(22), phone(23)];
    gateway.setBehaviour({ kind: 'http', status: 502, body: 'Bad Gateway' });
    const res = await timed(api.post('/notifications/send', sendBody('sms', numbers), { token: org.token }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(numbers.map((recipient) => ({ recipient, status: 'failed', error: 'SMS gateway: HTTP 502: Bad Gateway' })));
    expect(gateway.calls).toHaveLength(ATTEMPTS);
    for (const n of numbers) expect(smsAttempts(n)).toBe(ATTEMPTS);
    // Each message keeps its clientsmsid on every attempt (the gateway can drop a repeat), and no two share one.
    const ids = gateway.calls.map((c) => c.body.smslist.map((m: { clientsmsid: string }) => m.clientsmsid));
    expect(new Set(ids[0]).size).toBe(numbers.length);
    expect(ids).toEqual([ids[0], ids[0], ids[0]]);
  });
});

describe('a send in flight and one its process abandoned', () => {
  test('while the provider is answering, the log shows every recipient pending, in both doors; then their outcomes', async () => {
    const org = await liveOrg();
    const numbers = [phone(31), phone(32), phone(33)];
    // Slower than a read of the logs, within the timeout.
    gateway.setBehaviour({ kind: 'delay', ms: TIMEOUT_MS - 50 });
    const sending = api.post('/notifications/send', sendBody('sms', numbers), { token: org.token });
    let inFlight: any[] = [];
    for (let i = 0; i < 100 && !inFlight.length; i++) {
      inFlight = await logs(org);
      if (!inFlight.length) await new Promise((r) => setTimeout(r, 5));
    }
    expect(inFlight).toHaveLength(1);
    expect(inFlight[0].recipients).toEqual(numbers.map((recipient) => ({ recipient, status: 'pending' })));
    const viaGraphql = await api.gql('{ messageLogs { edges { node { recipients { recipient status error } } } } }', {}, { token: org.token });
    expect(viaGraphql.body.data.messageLogs.edges[0].node.recipients).toEqual(numbers.map((recipient) => ({ recipient, status: 'pending', error: null })));
    expect((await sending).status).toBe(200);
    // Each delivered recipient keeps the gateway's message id (platform.md, "Receipts and engagement").
    expect((await logs(org))[0].recipients).toEqual(numbers.map((recipient) => ({ recipient, status: 'success', providerMessageId: expect.any(String), providerId: expect.any(String) })));
  });

  test('the sweeper fails and refunds the pending recipients of an abandoned log, in either stored form', async () => {
    const org = await liveOrg();
    const before = await credits(org);
    // What a process that died after reserving leaves: 2 credits held, two recipients pending (one
    // as a bare address, one as a pending object, as older logs have it), one invalid.
    await herald.db('organization_credits').where({ organization_id: org.orgId }).decrement('credits', 2);
    await herald.db('message_logs').insert({
      organization_id: org.orgId, channel: 'sms', message_preview: 'x', message_length: 1, unit_cost: 1, reserved: 2,
      pending_count: 2, failed_count: 1, created_at: new Date(Date.now() - 3_600_000), updated_at: new Date(Date.now() - 3_600_000),
      recipients: JSON.stringify([phone(41), { recipient: phone(42), status: 'pending' }, { recipient: '12', status: 'failed', error: 'Invalid phone number' }]),
    });
    expect(await settleAbandoned(herald.db, 60)).toBe(1);
    const [log] = await logs(org);
    expect(log).toMatchObject({ cost: 0, recipients: [
      { recipient: phone(41), status: 'failed', error: 'Delivery interrupted' },
      { recipient: phone(42), status: 'failed', error: 'Delivery interrupted' },
      { recipient: '12', status: 'failed', error: 'Invalid phone number' },
    ] });
    expect(await credits(org)).toBe(before);
  });

  test('several abandoned logs of one organization are all refunded, and so are other organizations\'', async () => {
    const [a, b] = [await liveOrg(), await liveOrg()];
    const before = [await credits(a), await credits(b)];
    const abandon = async (org: typeof a, n: number) => {
      await herald.db('organization_credits').where({ organization_id: org.orgId }).decrement('credits', n);
      for (let i = 0; i < n; i++) {
        await herald.db('message_logs').insert({
          organization_id: org.orgId, channel: 'sms', message_preview: 'x', message_length: 1, unit_cost: 1, reserved: 1,
          pending_count: 1, failed_count: 0, created_at: new Date(Date.now() - 3_600_000), updated_at: new Date(Date.now() - 3_600_000),
          recipients: JSON.stringify([phone(60 + i)]),
        });
      }
    };
    await abandon(a, 3);
    await abandon(b, 2);
    expect(await settleAbandoned(herald.db, 60)).toBe(5);
    expect([await credits(a), await credits(b)]).toEqual(before);
  });
});

describe('campaigns through the queue', () => {
  test('every recipient ends sent or failed with a clear reason, in exactly one log entry, charged only for successes', async () => {
    const org = await liveOrg();
    const p = Array.from({ length: 8 }, (_, i) => phone(101 + i));
    const e = Array.from({ length: 3 }, (_, i) => email(101 + i));
    for (const [i, number] of p.entries()) {
      const res = await api.post('/contacts', { name: `Contact ${i}`, phone: number, ...(e[i] ? { email: e[i] } : {}) }, { token: org.token });
      expect(res.status).toBe(201);
    }
    // WhatsApp: one fault per number. SMS: per-number answer codes. Email: per-recipient RCPT answers.
    const waExpected: [number, string | RegExp][] = [
      [1, 'success'],
      [ATTEMPTS, `WhatsApp: no answer within ${TIMEOUT_MS} ms`],
      [ATTEMPTS, 'WhatsApp: HTTP 503'],
      [ATTEMPTS, /^WhatsApp: connection failed \((ECONNRESET|socket hang up)\)$/],
      [1, 'WhatsApp: message undeliverable to this number (131026)'],
      [1, 'WhatsApp: 24-hour customer service window closed; a template message is required (131047)'],
      [1, 'WhatsApp: unreadable answer (HTTP 200)'],
      [ATTEMPTS, 'WhatsApp: (#131000) Something went wrong (131000)'],
    ];
    wa.setBehaviour({ kind: 'delay', ms: 5000 }, p[1]);
    wa.setBehaviour({ kind: 'http', status: 503 }, p[2]);
    wa.setBehaviour({ kind: 'drop' }, p[3]);
    wa.setBehaviour({ kind: 'error', code: 131026 }, p[4]);
    wa.setBehaviour({ kind: 'error', code: 131047 }, p[5]);
    wa.setBehaviour({ kind: 'malformed' }, p[6]);
    wa.setBehaviour({ kind: 'error', code: 131000 }, p[7]);
    const smsExpected: [number, string][] = [
      [1, 'success'],
      [1, 'SMS gateway: Invalid mobile number (1003)'],
      [ATTEMPTS, 'SMS gateway: Failed. System error (1005)'],
      [ATTEMPTS, 'SMS gateway: Failed. System error (1007)'],
      [1, 'SMS gateway: Network not allowed (1002)'],
      [1, 'success'],
      [1, 'success'],
      [1, 'success'],
    ];
    gateway.setBehaviour({ kind: 'code', code: 1003 }, p[1]);
    gateway.setBehaviour({ kind: 'code', code: 1005 }, p[2]);
    gateway.setBehaviour({ kind: 'code', code: 1007 }, p[3]);
    gateway.setBehaviour({ kind: 'code', code: 1002 }, p[4]);
    const emailExpected: [number, string][] = [
      [1, 'success'],
      [1, `550 5.1.1 <${e[1]}>: Recipient address rejected`],
      [ATTEMPTS, `455 4.2.1 <${e[2]}>: Mailbox busy, try again later`],
    ];
    sink.setBehaviour({ reject: { [e[1]!]: 550, [e[2]!]: 455 } });

    const created = await api.post(
      '/campaigns',
      {
        name: 'Faulty providers',
        type: 'broadcast',
        channels: ['sms', 'email', 'whatsapp'],
        messages: { sms: { content: 'Sale today' }, whatsapp: { content: 'Sale today' }, email: { subject: 'Sale', content: 'Sale today' } },
      },
      { token: org.token },
    );
    expect(created.status).toBe(201);
    const before = await credits(org);
    const launched = await timed(api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: org.token }));
    expect(launched.body).toMatchObject({ status: 'active' });
    const done = await waitFor(() => api.get(`/campaigns/${created.body._id}`, { token: org.token }), (r) => r.body.status !== 'active');
    expect(done.body.status).toBe('completed');

    const campaignLogs = await logs(org, `&campaignId=${created.body._id}`);
    expect(campaignLogs.map((l) => l.channel).sort()).toEqual(['email', 'sms', 'whatsapp']);
    const check = (channel: string, addresses: string[], expected: [number, string | RegExp][], attempts: (to: string) => number, unit: number) => {
      const log = campaignLogs.find((l) => l.channel === channel);
      // Exactly one entry per recipient, none left pending.
      expect(log.recipients.map((r: any) => r.recipient).sort()).toEqual([...addresses].sort());
      for (const [i, to] of addresses.entries()) {
        // Who carried it (the channel's one provider) is checked apart from the outcome.
        // A recipient the mail server refused is also a bounce (see tests/api/bounces), apart from its outcome.
        const { providerId, bouncedAt: _at, bounceType: _type, bounceReason: _reason, ...entry } = log.recipients.find((r: any) => r.recipient === to);
        const [tries, outcome] = expected[i]!;
        expect({ to, tries: attempts(to) }).toEqual({ to, tries });
        if (outcome === 'success') {
          expect(providerId).toMatch(/^[0-9a-f-]{36}$/);
          expect(entry).toEqual({ recipient: to, status: 'success', providerMessageId: expect.any(String) });
        } else {
          expect(entry).toEqual({ recipient: to, status: 'failed', error: typeof outcome === 'string' ? outcome : expect.stringMatching(outcome) });
          if (/^550 5\.1\.1/.test(entry.error)) expect(_type).toBe('hard');
          expectReadable(entry.error);
        }
      }
      const successes = expected.filter(([, o]) => o === 'success').length;
      expect(log.cost).toBe(successes * unit);
      return log.cost as number;
    };
    const spent = check('whatsapp', p, waExpected, waAttempts, 1) + check('sms', p, smsExpected, smsAttempts, 1) + check('email', e, emailExpected, rcptAttempts, 0.5);
    expect(spent).toBe(1 + 4 + 0.5);
    expect(done.body.analytics).toMatchObject({ sent: 1 + 4 + 1, failed: 7 + 4 + 2 });
    expect(await credits(org)).toBe(before - spent);
  });
});

describe('nothing hangs, nothing crashes', () => {
  test('a burst of sends into slow, dropping and stalled providers all return; the service then still answers and sends', async () => {
    const org = await liveOrg();
    const before = await credits(org);
    wa.setBehaviour({ kind: 'delay', ms: 5000 });
    gateway.setBehaviour({ kind: 'drop' });
    sink.setBehaviour({ stallGreetingMs: 5000 });
    const many = Array.from({ length: 20 }, (_, i) => phone(201 + i));
    const sends = [
      api.post('/notifications/send', sendBody('whatsapp', many), { token: org.token }),
      ...Array.from({ length: 4 }, (_, i) => api.post('/notifications/send', sendBody('sms', phone(301 + i)), { token: org.token })),
      ...Array.from({ length: 3 }, (_, i) => api.post('/notifications/send', sendBody('email', email(301 + i)), { token: org.token })),
    ];
    const [waRes, ...singles] = await timed(Promise.all(sends));
    expect(waRes.status).toBe(200);
    expect(waRes.body).toHaveLength(20);
    for (const item of waRes.body) expect(item).toEqual({ recipient: expect.any(String), status: 'failed', error: `WhatsApp: no answer within ${TIMEOUT_MS} ms` });
    expect(wa.calls).toHaveLength(20 * ATTEMPTS);
    expect(singles.map((r) => r.status)).toEqual(Array(7).fill(502));
    expect(await credits(org)).toBe(before);
    const all = await logs(org);
    expect(all).toHaveLength(8);
    expect(all.flatMap((l) => l.recipients).every((r: any) => r.status === 'failed')).toBe(true);

    expect((await api.get('/health')).status).toBe(200);
    expect((await api.get('/ready')).status).toBe(200);

    // Providers back to normal: the same organization sends on every channel at once.
    wa.reset();
    gateway.reset();
    sink.setBehaviour({});
    const recovered = await timed(
      Promise.all([
        api.post('/notifications/send', sendBody('whatsapp', phone(401)), { token: org.token }),
        api.post('/notifications/send', sendBody('sms', phone(402)), { token: org.token }),
        api.post('/notifications/send', sendBody('email', email(403)), { token: org.token }),
      ]),
    );
    expect(recovered.map((r) => [r.status, r.body.status])).toEqual([
      [200, 'success'],
      [200, 'success'],
      [200, 'success'],
    ]);
    expect(await credits(org)).toBe(before - 2.5);
  });
});
