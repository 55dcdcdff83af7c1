import { randomUUID } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSmppAdapter, smsSegments, type SmppAdapter, type SmppOptions } from '../../src/delivery/channels/smpp.js';
import type { DeliveryTarget, OutboundMessage, ProviderAccount, ProviderReport } from '../../src/delivery/types.js';
import { startSmppServer, type SmppServerFake } from '../fakes/smpp-server.js';

/**
 * The SMPP 3.4 adapter against a fake SMSC (the `smpp` package's server): one transceiver session
 * per account, the window, long texts in concatenated segments, the command statuses' meaning,
 * reconnecting, enquire_link, and delivery receipts. No Herald and no database.
 */

let smsc: SmppServerFake;
const adapters: SmppAdapter[] = [];
const extraServers: SmppServerFake[] = [];
const reports: { account: ProviderAccount; report: ProviderReport }[] = [];

function adapter(options: Partial<SmppOptions> = {}): SmppAdapter {
  const created = createSmppAdapter({
    timeoutMs: 2000,
    onReport: (account, report) => void reports.push({ account, report }),
    reconnect: { initialMs: 50, maxMs: 200 },
    ...options,
  });
  adapters.push(created);
  return created;
}

let accounts = 0;
function account(settings: Record<string, string | number> = {}, password = 'secret1', id = `smpp-${++accounts}`): ProviderAccount {
  return {
    id,
    orgId: 'org-1',
    type: 'smpp',
    settings: { host: '127.0.0.1', port: smsc.port, systemId: 'herald', sourceAddr: 'Herald', window: 5, ...settings },
    secrets: { password },
  };
}

const message = (body: string): OutboundMessage => ({ channel: 'sms', orgId: 'org-1', fromName: 'Herald', body });
let phones = 0;
const target = (recipient = `+2547${String(10_000_000 + phones++).padStart(8, '0')}`): DeliveryTarget => ({ recipient, clientId: randomUUID() });
const targets = (n: number) => Array.from({ length: n }, () => target());

async function until(check: () => boolean, ms = 3000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}

beforeAll(async () => {
  smsc = await startSmppServer({ systemId: 'herald', password: 'secret1' });
});

afterEach(async () => {
  await Promise.all(adapters.splice(0).map((a) => a.close()));
  await Promise.all(extraServers.splice(0).map((s) => s.stop()));
  await until(() => smsc.sessions() === 0);
  smsc.reset();
  reports.length = 0;
});

afterAll(async () => {
  await smsc?.stop();
});

describe('sessions', () => {
  it('binds once as an SMPP 3.4 transceiver and submits with a receipt requested', async () => {
    const smpp = adapter();
    const acct = account({ systemType: 'herald-app' });
    const to = target('+254712000001');
    const [result] = await smpp.send(message('Hello from Herald @ 10:00'), [to], acct);

    expect(smsc.binds()).toEqual([{ command: 'bind_transceiver', systemId: 'herald', systemType: 'herald-app', interfaceVersion: 0x34, status: 0 }]);
    const [submit] = smsc.submits();
    expect(submit).toMatchObject({
      destination: '254712000001',
      destTon: 1,
      destNpi: 1,
      source: 'Herald',
      sourceTon: 5,
      sourceNpi: 0,
      text: 'Hello from Herald @ 10:00',
      dataCoding: 0,
      segments: 1,
      registeredDelivery: 1,
    });
    expect(result).toEqual({ recipient: '+254712000001', ok: true, network: 'smpp:127.0.0.1', providerMessageId: submit!.messageId });
    expect(smpp.sessions()).toEqual([{ accountId: acct.id, state: 'bound', outstanding: 0 }]);
  });

  it('numeric senders: an international number TON 1 NPI 1 without its +, a short code TON 3 NPI 0, explicit values win', async () => {
    const smpp = adapter();
    await smpp.send(message('a'), [target()], account({ sourceAddr: '+254700111222' }));
    await smpp.send(message('b'), [target()], account({ sourceAddr: '22141' }));
    await smpp.send(message('c'), [target()], account({ sourceAddr: '22141', sourceAddrTon: 0, sourceAddrNpi: 1 }));
    expect(smsc.submits().map((s) => [s.source, s.sourceTon, s.sourceNpi])).toEqual([
      ['254700111222', 1, 1],
      ['22141', 3, 0],
      ['22141', 0, 1],
    ]);
  });

  it('shares one bind among concurrent first sends and every later send of the account', async () => {
    const smpp = adapter();
    const acct = account();
    const singles = Array.from({ length: 20 }, () => smpp.send(message('one each'), [target()], acct));
    const batch = smpp.send(message('a batch'), targets(10), acct);
    const results = [...(await Promise.all(singles)).flat(), ...(await batch)];

    expect(results.every((r) => r.ok)).toBe(true);
    expect(new Set(results.map((r) => r.providerMessageId)).size).toBe(30);
    expect(smsc.binds()).toHaveLength(1);
    expect(smsc.sessions()).toBe(1);
    expect(smsc.submits()).toHaveLength(30);
    expect(smpp.sessions()).toHaveLength(1);
  });

  it('never has more than `window` submit_sm unanswered, and fills it', async () => {
    const smpp = adapter();
    smsc.delay(40);
    const results = await smpp.send(message('windowed'), targets(25), account({ window: 4 }));
    expect(results.filter((r) => r.ok)).toHaveLength(25);
    expect(smsc.maxOutstandingSeen()).toBe(4);
  });

  it('puts transactional sends before queued bulk ones', async () => {
    const smpp = adapter();
    const acct = account({ window: 1 });
    await smpp.send(message('warm up'), [target()], acct);
    smsc.reset();
    smsc.delay(30);
    const bulk = smpp.send(message('bulk'), targets(5), acct, { lane: 'bulk' });
    await until(() => smsc.received() === 1);
    const urgent = smpp.send(message('your code is 123456'), [target()], acct, { lane: 'transactional' });
    await Promise.all([bulk, urgent]);
    expect(smsc.submits().map((s) => s.text)).toEqual(['bulk', 'your code is 123456', 'bulk', 'bulk', 'bulk', 'bulk']);
  });

  it('a changed password binds a new session and closes the old one; a changed window does not', async () => {
    const smpp = adapter();
    const first = account({}, 'secret1', 'smpp-changing');
    await smpp.send(message('before'), [target()], first);
    await smpp.send(message('wider'), [target()], { ...first, settings: { ...first.settings, window: 20 } });
    expect(smsc.binds()).toHaveLength(1);

    const [result] = await smpp.send(message('after'), [target()], { ...first, secrets: { password: 'rotated' } });
    expect(result).toMatchObject({ ok: false, retryable: true, providerFault: true, error: 'SMPP: bind refused: ESME_RINVPASWD (0x0E)' });
    expect(smsc.binds().map((b) => b.status)).toEqual([0, 0x0e]);
    await until(() => smsc.sessions() === 0);
    expect(smpp.sessions()).toEqual([{ accountId: 'smpp-changing', state: 'closed', outstanding: 0 }]);
  });

  it('close() unbinds every session', async () => {
    const smpp = adapter();
    await smpp.send(message('x'), [target()], account());
    await smpp.send(message('y'), [target()], account());
    expect(smsc.sessions()).toBe(2);
    await smpp.close();
    await until(() => smsc.sessions() === 0);
    expect(smpp.sessions()).toEqual([]);
  });
});

describe('texts', () => {
  it('counts GSM-7 septets (extension characters twice) and UCS-2 units', () => {
    expect(smsSegments('a'.repeat(160))).toEqual({ encoding: 'GSM7', segments: 1 });
    expect(smsSegments('a'.repeat(161))).toEqual({ encoding: 'GSM7', segments: 2 });
    expect(smsSegments('a'.repeat(306))).toEqual({ encoding: 'GSM7', segments: 2 });
    expect(smsSegments('a'.repeat(307))).toEqual({ encoding: 'GSM7', segments: 3 });
    expect(smsSegments('€'.repeat(80))).toEqual({ encoding: 'GSM7', segments: 1 });
    expect(smsSegments('€'.repeat(81))).toEqual({ encoding: 'GSM7', segments: 2 });
    expect(smsSegments('a'.repeat(159) + ']')).toEqual({ encoding: 'GSM7', segments: 2 });
    expect(smsSegments('ا'.repeat(70))).toEqual({ encoding: 'UCS2', segments: 1 });
    expect(smsSegments('ا'.repeat(71))).toEqual({ encoding: 'UCS2', segments: 2 });
    expect(smsSegments('a'.repeat(69) + '🎉')).toEqual({ encoding: 'UCS2', segments: 2 });
    // Not in GSM 03.38: a Latin-1 letter, a curly quote, a raw escape.
    for (const text of ['fête', 'it’s', 'a\x1bb']) expect(smsSegments(text).encoding).toBe('UCS2');
  });

  it('sends a long GSM-7 text as concatenated segments the SMSC reassembles exactly', async () => {
    const smpp = adapter();
    const text = 'Habari! Your order #4411 of KSh 2,500 is ready @ Sarit Centre; collect by 18:00 (ID needed). '.repeat(4).trim();
    expect(smsSegments(text)).toEqual({ encoding: 'GSM7', segments: 3 });
    const [result] = await smpp.send(message(text), [target()], account());
    const [submit] = smsc.submits();
    expect(submit).toMatchObject({ text, dataCoding: 0, segments: 3 });
    expect(smsc.received()).toBe(3);
    expect(result!.providerMessageId).toBe(submit!.messageIds[0]);
  });

  it('sends GSM-7 extension characters as two septets, never cutting one across segments', async () => {
    const smpp = adapter();
    const edge = 'a'.repeat(152) + '€' + '[done]';
    const prices = 'Bei: 10€ [punguzo] {leo} ~ 5|6 ^ \\ '.repeat(6);
    const results = await smpp.send(message(edge), [target()], account());
    await smpp.send(message(prices), [target()], account());
    expect(results[0]!.ok).toBe(true);
    expect(smsc.submits().map(({ text, dataCoding, segments }) => ({ text, dataCoding, segments }))).toEqual([
      { text: edge, dataCoding: 0, segments: 2 },
      { text: prices, dataCoding: 0, segments: smsSegments(prices).segments },
    ]);
    expect(smsSegments(prices).segments).toBe(2);
  });

  it('sends a long text outside GSM-7 as UCS-2 segments, emoji kept whole', async () => {
    const smpp = adapter();
    const text = 'Karibu sana 🎉 مرحبا بكم في هيرالد، ';
    const long = text.repeat(6);
    expect(smsSegments(long)).toEqual({ encoding: 'UCS2', segments: 4 });
    const [result] = await smpp.send(message(long), [target()], account());
    const [submit] = smsc.submits();
    expect(submit).toMatchObject({ text: long, dataCoding: 8, segments: 4 });
    expect(result!.providerMessageId).toBe(submit!.messageId);

    await smpp.send(message(text), [target()], account());
    expect(smsc.submits()[1]).toMatchObject({ text, dataCoding: 8, segments: 1 });

    // 66 units, then an emoji that would straddle the 67-unit cut: it opens the second segment.
    const straddling = 'a'.repeat(66) + '🎉' + 'b'.repeat(10);
    expect(smsSegments(straddling)).toEqual({ encoding: 'UCS2', segments: 2 });
    await smpp.send(message(straddling), [target()], account());
    expect(smsc.submits()[2]).toMatchObject({ text: straddling, parts: ['a'.repeat(66), '🎉' + 'b'.repeat(10)], dataCoding: 8, segments: 2 });
  });
});

describe('failures', () => {
  it('a refused bind fails retryable for the provider, fails the next sends at once, then binds again', async () => {
    const smpp = adapter({ reconnect: { initialMs: 150, maxMs: 1000 } });
    const acct = account();
    smsc.refuseBinds(true);
    const [refused] = await smpp.send(message('x'), [target()], acct);
    expect(refused).toMatchObject({ ok: false, retryable: true, providerFault: true, error: 'SMPP: bind refused: ESME_RBINDFAIL (0x0D)', network: 'smpp:127.0.0.1' });
    const [again] = await smpp.send(message('x'), [target()], acct);
    expect(again!.error).toBe('SMPP: bind refused: ESME_RBINDFAIL (0x0D)');
    expect(smsc.binds()).toHaveLength(1);

    smsc.refuseBinds(false);
    await sleep(200);
    const [ok] = await smpp.send(message('x'), [target()], acct);
    expect(ok!.ok).toBe(true);
    expect(smsc.binds().map((b) => b.status)).toEqual([0x0d, 0]);
  });

  it('a wrong password and a refused connection are bind failures', async () => {
    const smpp = adapter();
    const [password] = await smpp.send(message('x'), [target()], account({}, 'wrong'));
    expect(password).toMatchObject({ ok: false, retryable: true, providerFault: true, error: 'SMPP: bind refused: ESME_RINVPASWD (0x0E)' });

    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const [connection] = await smpp.send(message('x'), [target()], account({ port }));
    expect(connection).toMatchObject({ ok: false, retryable: true, providerFault: true, error: 'SMPP: bind failed: connection refused (ECONNREFUSED)' });
  });

  it('reads each submit_sm_resp status: throttling, transient, account and final', async () => {
    const smpp = adapter();
    const acct = account();
    const sendWith = async (status: number) => {
      smsc.failNext(1, status);
      return (await smpp.send(message('x'), [target()], acct))[0];
    };
    smsc.throttleNext(1);
    const [throttled] = await smpp.send(message('x'), [target()], acct);
    expect(throttled).toMatchObject({ ok: false, retryable: true, throttled: true, error: 'SMPP: ESME_RTHROTTLED (0x58)' });
    expect(await sendWith(0x14)).toMatchObject({ ok: false, retryable: true, throttled: true, error: 'SMPP: ESME_RMSGQFUL (0x14)' });
    expect(await sendWith(0x08)).toMatchObject({ ok: false, retryable: true, throttled: false, error: 'SMPP: ESME_RSYSERR (0x08)' });
    expect(await sendWith(0x0a)).toMatchObject({ ok: false, retryable: false, providerFault: true, error: 'SMPP: ESME_RINVSRCADR (0x0A)' });
    const invalid = await sendWith(0x0b);
    expect(invalid).toMatchObject({ ok: false, retryable: false, throttled: false, error: 'SMPP: ESME_RINVDSTADR (0x0B)' });
    expect(invalid!.providerFault).toBeUndefined();
    expect(smsc.submits()).toHaveLength(0);
  });

  it("stops a long text at its first refused segment, and keeps every target's result in order", async () => {
    const smpp = adapter();
    smsc.failNext(1, 0x58);
    const [long] = await smpp.send(message('x'.repeat(400)), [target()], account());
    expect(long).toMatchObject({ ok: false, throttled: true });
    expect(smsc.received()).toBe(1);

    const batch = [target(), target('+12'), target()];
    const results = await smpp.send(message('hi'), batch, account());
    expect(results.map((r) => [r.recipient, r.ok, r.retryable])).toEqual([
      [batch[0]!.recipient, true, undefined],
      ['+12', false, false],
      [batch[2]!.recipient, true, undefined],
    ]);
    expect(results[1]!.error).toBe('SMPP: invalid destination +12');
  });

  it('fails an unanswered submit_sm retryable after the timeout, and frees its place', async () => {
    const smpp = adapter({ timeoutMs: 300 });
    const acct = account({ window: 1 });
    smsc.delay(600);
    const [late] = await smpp.send(message('x'), [target()], acct);
    expect(late).toMatchObject({ ok: false, retryable: true, error: 'SMPP: no submit_sm_resp within 300 ms' });
    smsc.delay(0);
    const [next] = await smpp.send(message('y'), [target()], acct);
    expect(next!.ok).toBe(true);
  });

  it('a dropped connection fails what was unanswered, binds again, and sends made meanwhile go out', async () => {
    const smpp = adapter();
    const acct = account();
    smsc.delay(500);
    const pending = smpp.send(message('in flight'), [target()], acct);
    await until(() => smsc.received() === 1);
    smsc.dropConnections();
    const [lost] = await pending;
    expect(lost).toMatchObject({ ok: false, retryable: true });
    expect(lost!.error).toMatch(/^SMPP: connection lost before submit_sm_resp/);
    expect(lost!.providerFault).toBeUndefined();

    smsc.delay(0);
    const [meanwhile] = await smpp.send(message('while reconnecting'), [target()], acct);
    expect(meanwhile!.ok).toBe(true);
    expect(smsc.binds()).toHaveLength(2);
    expect(smpp.sessions()[0]!.state).toBe('bound');
  });

  it('a send made while binding again fails retryable once its timeout passes first', async () => {
    const smpp = adapter({ timeoutMs: 300, reconnect: { initialMs: 1500, maxMs: 1500 } });
    const acct = account();
    await smpp.send(message('bound'), [target()], acct);
    smsc.dropConnections();
    await until(() => smpp.sessions()[0]!.state === 'connecting');
    const started = Date.now();
    const [waited] = await smpp.send(message('x'), [target()], acct);
    expect(waited).toMatchObject({ ok: false, retryable: true, error: 'SMPP: not bound within 300 ms' });
    expect(waited!.providerFault).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(smsc.received()).toBe(1);
  });

  it('reports missing settings as the account’s fault, without connecting', async () => {
    const smpp = adapter();
    const results = await smpp.send(message('x'), [target()], { ...account(), settings: { port: 2775, sourceAddr: 'Herald' }, secrets: {} });
    expect(results[0]).toMatchObject({ ok: false, retryable: false, providerFault: true, error: 'SMPP: missing host, systemId, password', network: 'smpp' });
    expect(smsc.binds()).toHaveLength(0);
  });
});

describe('enquire_link', () => {
  it('keeps a session the SMSC would drop for silence, and answers the SMSC’s own', async () => {
    const strict = await startSmppServer({ systemId: 'herald', password: 'secret1', idleTimeoutMs: 200 });
    extraServers.push(strict);
    const smpp = adapter({ enquireLinkMs: 50 });
    const acct = { ...account(), settings: { ...account().settings, port: strict.port } };
    await smpp.send(message('x'), [target()], acct);
    await sleep(600);
    expect(strict.enquireLinks()).toBeGreaterThanOrEqual(5);
    expect(await strict.enquireLink()).toBe(1);
    const [later] = await smpp.send(message('y'), [target()], acct);
    expect(later!.ok).toBe(true);
    expect(strict.binds()).toHaveLength(1);
  });

  it('without it, the same SMSC drops the session and the adapter binds again', async () => {
    const strict = await startSmppServer({ systemId: 'herald', password: 'secret1', idleTimeoutMs: 200 });
    extraServers.push(strict);
    const smpp = adapter({ enquireLinkMs: 60_000 });
    const acct = { ...account(), settings: { ...account().settings, port: strict.port } };
    await smpp.send(message('x'), [target()], acct);
    await until(() => strict.binds().length >= 2);
    expect(strict.enquireLinks()).toBe(0);
  });
});

describe('receipts', () => {
  it('reports DELIVRD and UNDELIV for the ids the sends answered, by TLV or by the receipt text', async () => {
    const smpp = adapter();
    const acct = account();
    const [a, b, c] = await smpp.send(message('receipted'), targets(3), acct);

    expect(await smsc.deliverReceipt(a!.providerMessageId!, 'DELIVRD')).toBe(0);
    expect(await smsc.deliverReceipt(b!.providerMessageId!, 'UNDELIV', { err: '011' })).toBe(0);
    expect(await smsc.deliverReceipt(c!.providerMessageId!, 'EXPIRED', { withoutTlvs: true })).toBe(0);
    expect(reports.map((r) => r.account.id)).toEqual([acct.id, acct.id, acct.id]);
    expect(reports.map(({ report: { at, ...rest } }) => rest)).toEqual([
      { providerMessageId: a!.providerMessageId, delivered: true, status: 'DELIVRD' },
      { providerMessageId: b!.providerMessageId, delivered: false, status: 'UNDELIV', error: 'SMPP: UNDELIV (err 011)' },
      { providerMessageId: c!.providerMessageId, delivered: false, status: 'EXPIRED', error: 'SMPP: EXPIRED (err 001)' },
    ]);
    expect(reports[0]!.report.at).toBeInstanceOf(Date);
  });

  it('answers intermediate receipts and messages from handsets without reporting them', async () => {
    const smpp = adapter();
    const [sent] = await smpp.send(message('x'), [target()], account());
    expect(await smsc.deliverReceipt(sent!.providerMessageId!, 'ENROUTE')).toBe(0);
    expect(await smsc.deliverReceipt(sent!.providerMessageId!, 'ACCEPTD')).toBe(0);
    expect(await smsc.deliverMessage('254712000009', 'STOP')).toBe(0);
    expect(reports).toEqual([]);
  });

  it('a long text is reported by its first segment’s id', async () => {
    const smpp = adapter();
    const [sent] = await smpp.send(message('y'.repeat(200)), [target()], account());
    await smsc.deliverReceipt(smsc.submits()[0]!.messageIds[0]!, 'DELIVRD');
    expect(reports.map((r) => r.report.providerMessageId)).toEqual([sent!.providerMessageId]);
  });

  it('answers a temporary error when the report could not be taken, so the SMSC sends it again', async () => {
    const smpp = adapter({
      onReport: () => {
        throw new Error('database unavailable');
      },
    });
    const [sent] = await smpp.send(message('x'), [target()], account());
    expect(await smsc.deliverReceipt(sent!.providerMessageId!, 'DELIVRD')).toBe(0x64);
  });
});
