import { randomBytes, randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { startWhatsAppFake, type WhatsAppFake, type WhatsAppIssued } from '../fakes/whatsapp-fake.js';
import { liveOrg } from '../helpers/live-org.js';
import { client, isolatedDatabase, startTestHerald, type Client, type Org } from '../helpers/herald.js';

/**
 * platform.md, "Receipts and engagement", and providers.md, "Receipts from providers": WhatsApp
 * Cloud API webhooks (verification, signed statuses, STOP/START replies) and the SMS gateway's
 * delivery reports, pushed by the fakes to a real Herald that sent through them.
 */

let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;
let wa: WhatsAppFake;

interface Tenant extends Org {
  secret: string;
  verify: string;
  credentials: { whatsapp_webhookUrl: string; sms_reportUrl: string };
}

let a: Tenant, b: Tenant;

async function tenant(): Promise<Tenant> {
  const secret = `app-secret-${randomBytes(8).toString('hex')}`;
  const verify = `verify-${randomBytes(8).toString('hex')}`;
  const org = await liveOrg(api, { wa }, { whatsapp_app_secret: secret, whatsapp_verify_token: verify });
  const credentials = (await api.get('/organizations/current', { token: org.token })).body.credentials;
  return { ...org, secret, verify, credentials };
}

beforeAll(async () => {
  [gateway, wa] = await Promise.all([startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }), startWhatsAppFake()]);
  db = await isolatedDatabase(`receipts_${randomBytes(3).toString('hex')}`);
  herald = await startTestHerald({
    DATABASE_URL: db.url,
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    WHATSAPP_API_URL: wa.url,
    CAMPAIGN_INLINE_LIMIT: '1000',
    PUBLIC_URL: 'http://placeholder.invalid',
  });
  api = client(herald.url);
  [a, b] = await Promise.all([tenant(), tenant()]);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), wa?.stop()]);
  await db?.drop();
});

let serial = 0;
const phone = () => `+25471${String(2_000_000 + serial++).padStart(7, '0')}`;
/** The credentials' URLs name the public URL; the test reaches the same path on Herald itself. */
const local = (url: string) => herald.url + new URL(url).pathname;
const waUrl = (t: Tenant) => local(t.credentials.whatsapp_webhookUrl);
const smsUrl = (t: Tenant) => local(t.credentials.sms_reportUrl);

/** A completed campaign on one channel to these phones, its log, and what the provider fake issued for each phone. */
async function sentCampaign(t: Tenant, channel: 'whatsapp' | 'sms', phones: string[]) {
  const created = await api.post(
    '/campaigns',
    { name: `Receipts ${channel}`, type: 'broadcast', channels: [channel], messages: { [channel]: { content: 'Your order shipped' } }, recipients: { manual: phones } },
    { token: t.token },
  );
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: t.token });
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: phones.length, delivered: 0, opened: 0 } });
  const logs = await api.get(`/message-logs?campaignId=${created.body._id}`, { token: t.token });
  expect(logs.body).toHaveLength(1);
  return { id: created.body._id as string, logId: logs.body[0]._id as string };
}

const analytics = async (t: Tenant, id: string) => (await api.get(`/campaigns/${id}`, { token: t.token })).body.analytics;
async function recipientOf(t: Tenant, logId: string, phoneNumber: string) {
  const log = (await api.get(`/message-logs/${logId}`, { token: t.token })).body;
  return log.recipients.find((r: { recipient: string }) => r.recipient === phoneNumber);
}
const waIssued = (p: string): WhatsAppIssued => wa.issued.filter((m) => m.to === p.slice(1)).at(-1)!;
const smsAnswered = (p: string) => gateway.answered.filter((m) => m.mobile === p.slice(1)).at(-1)!;
const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

describe('WhatsApp verification', () => {
  test('the configured verify token gets the challenge back; anything else is 403', async () => {
    const query = (token: string, mode = 'subscribe') => `?hub.mode=${mode}&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`;
    const ok = await fetch(waUrl(a) + query(a.verify));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await ok.text()).toBe('1158201444');

    for (const url of [waUrl(a) + query('wrong'), waUrl(a) + query(a.verify, 'unsubscribe'), waUrl(a), waUrl(b) + query(a.verify), `${herald.url}/webhooks/whatsapp/${randomUUID()}${query(a.verify)}`, `${herald.url}/webhooks/whatsapp/nope${query(a.verify)}`]) {
      const res = await fetch(url);
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ statusCode: 403, error: 'Forbidden' });
    }
  });
});

describe('WhatsApp statuses', () => {
  test('delivered and read move the analytics and the log; duplicates and a late delivered count once', async () => {
    const phones = [phone(), phone(), phone()];
    const c = await sentCampaign(a, 'whatsapp', phones);
    const [m1, m2, m3] = phones.map(waIssued);
    expect(m1!.reference).toMatch(/^[0-9a-f-]{36}$/);

    const t = 1_790_000_000;
    const first = wa.notification({ statuses: [wa.status(m1!, 'sent', { timestamp: t }), wa.status(m1!, 'delivered', { timestamp: t + 1 })] });
    expect(await wa.postWebhook(waUrl(a), first, a.secret)).toEqual({ status: 200, body: { ok: true } });
    // Meta delivers the same notification twice.
    expect((await wa.postWebhook(waUrl(a), first, a.secret)).status).toBe(200);
    expect(await analytics(a, c.id)).toMatchObject({ sent: 3, delivered: 1, opened: 0 });

    // `read` before `delivered`, and found by the wamid alone (no reference).
    await wa.postWebhook(waUrl(a), wa.notification({ statuses: [wa.status(m2!, 'read', { timestamp: t + 5, withoutReference: true })] }), a.secret);
    await wa.postWebhook(waUrl(a), wa.notification({ statuses: [wa.status(m2!, 'delivered', { timestamp: t + 3 })] }), a.secret);
    await wa.postWebhook(waUrl(a), wa.notification({ statuses: [wa.status(m1!, 'read', { timestamp: t + 9 })] }), a.secret);
    await wa.postWebhook(
      waUrl(a),
      wa.notification({ statuses: [wa.status(m3!, 'failed', { timestamp: t + 2, error: { code: 131026, title: 'Message undeliverable' } })] }),
      a.secret,
    );
    expect(await analytics(a, c.id)).toMatchObject({ sent: 3, delivered: 2, opened: 2 });

    expect(await recipientOf(a, c.logId, phones[0]!)).toMatchObject({ status: 'success', deliveredAt: iso(t + 1), readAt: iso(t + 9) });
    // The read implied the delivery at its own time; the late delivered changed nothing.
    expect(await recipientOf(a, c.logId, phones[1]!)).toMatchObject({ deliveredAt: iso(t + 5), readAt: iso(t + 5) });
    const failed = await recipientOf(a, c.logId, phones[2]!);
    expect(failed.deliveryError).toMatch(/Message undeliverable/);
    expect(failed.deliveredAt).toBeUndefined();
  });

  test('unknown ids are acknowledged and change nothing', async () => {
    const ghost = { wamid: 'wamid.never-issued', to: '254700000000', reference: `${randomUUID().slice(0, 28)}00000001` };
    const res = await wa.postWebhook(waUrl(a), wa.notification({ statuses: [wa.status(ghost, 'delivered')] }), a.secret);
    expect(res.status).toBe(200);
  });

  test('a bad or missing signature, a body over the bound and malformed JSON are refused, and nothing changes', async () => {
    const p = phone();
    const c = await sentCampaign(a, 'whatsapp', [p]);
    const body = wa.notification({ statuses: [wa.status(waIssued(p), 'delivered')] });
    const refused = [
      await wa.postWebhook(waUrl(a), body, 'not-the-secret'),
      await wa.postWebhook(waUrl(a), body, a.secret, { signature: 'sha256=' + '0'.repeat(64) }),
      await wa.postWebhook(waUrl(a), body, a.secret, { signature: '' }),
      // Signed, then altered.
      await (async () => {
        const raw = JSON.stringify(body);
        const { metaSignature } = await import('../fakes/whatsapp-fake.js');
        return wa.postWebhook(waUrl(a), raw.replace('delivered', 'read'), a.secret, { signature: metaSignature(raw, a.secret) });
      })(),
    ];
    // Verified before parsed: a malformed body without a valid signature is refused for its signature, not read.
    refused.push(await wa.postWebhook(waUrl(a), '{"entry": [', 'not-the-secret'));
    for (const res of refused) expect(res).toMatchObject({ status: 401, body: { statusCode: 401, error: 'Unauthorized' } });

    const big = JSON.stringify({ ...body, padding: 'x'.repeat(300 * 1024) });
    expect((await wa.postWebhook(waUrl(a), big, a.secret)).status).toBe(413);
    expect(await wa.postWebhook(waUrl(a), '{"entry": [', a.secret)).toMatchObject({ status: 400, body: { statusCode: 400 } });
    // Well-formed JSON of the wrong shape is acknowledged, never a 5xx.
    for (const odd of ['[]', 'null', '{"entry": 5}', '{"entry": [{"changes": [{"value": {"statuses": [{"id": 7, "status": {}}], "messages": [{"from": null}]}}]}]}']) {
      expect((await wa.postWebhook(waUrl(a), odd, a.secret)).status).toBeLessThan(500);
    }
    expect(await analytics(a, c.id)).toMatchObject({ delivered: 0, opened: 0 });
    expect((await recipientOf(a, c.logId, p)).deliveredAt).toBeUndefined();
  });

  test("tenant isolation: org A's secret cannot post to org B's path; statuses on A's path cannot reach B's logs", async () => {
    const p = phone();
    const c = await sentCampaign(b, 'whatsapp', [p]);
    const body = wa.notification({ statuses: [wa.status(waIssued(p), 'read')] });
    expect((await wa.postWebhook(waUrl(b), body, a.secret)).status).toBe(401);
    // Signed with A's own secret on A's path: the status names B's message, which A does not have.
    expect((await wa.postWebhook(waUrl(a), body, a.secret)).status).toBe(200);
    expect(await analytics(b, c.id)).toMatchObject({ delivered: 0, opened: 0 });
    expect((await recipientOf(b, c.logId, p)).readAt).toBeUndefined();
  });
});

describe('WhatsApp replies', () => {
  test("STOP unsubscribes the sender's WhatsApp, START subscribes again, other words change nothing", async () => {
    const p = phone();
    const contact = (await api.post('/contacts', { name: 'Replier', phone: p }, { token: a.token })).body;
    const whatsapp = async () => (await api.get(`/contacts/${contact._id}`, { token: a.token })).body.subscriptions;

    await wa.postWebhook(waUrl(a), wa.notification({ messages: [wa.reply(p.slice(1), 'Thanks!')] }), a.secret);
    expect((await whatsapp()).whatsapp.status).toBe('subscribed');

    expect((await wa.postWebhook(waUrl(a), wa.notification({ messages: [wa.reply(p.slice(1), '  stop ')] }), a.secret)).status).toBe(200);
    const left = await whatsapp();
    expect(left.whatsapp).toMatchObject({ status: 'unsubscribed', source: 'reply' });
    expect(left.sms.status).toBe('subscribed');

    // Another organization's contact with the same phone is not touched.
    const twin = (await api.post('/contacts', { name: 'Twin', phone: p }, { token: b.token })).body;
    expect((await api.get(`/contacts/${twin._id}`, { token: b.token })).body.subscriptions.whatsapp.status).toBe('subscribed');

    await wa.postWebhook(waUrl(a), wa.notification({ messages: [wa.reply(p.slice(1), 'START')] }), a.secret);
    expect((await whatsapp()).whatsapp).toMatchObject({ status: 'subscribed', source: null });
  });
});

describe('SMS delivery reports', () => {
  test('delivered, failed with its reason, duplicated, unknown; a wrong token is 404', async () => {
    const phones = [phone(), phone(), phone()];
    const c = await sentCampaign(a, 'sms', phones);
    const [r1, r2, r3] = phones.map(smsAnswered);
    expect(r1!.clientsmsid).toBeDefined();

    const delivered = gateway.report(r1!, 'DeliveredToTerminal', { timestamp: '2026-01-05 09:30:00' });
    expect(await gateway.pushReports(smsUrl(a), delivered)).toEqual({ status: 200, body: { ok: true } });
    expect((await gateway.pushReports(smsUrl(a), delivered)).status).toBe(200);
    // An array, one of them found by messageid alone.
    const batch = [
      gateway.report(r2!, 'AbsentSubscriber', { description: 'Subscriber absent', withoutClientSmsId: true }),
      gateway.report({ messageid: 'no-such-message', clientsmsid: `${randomUUID().slice(0, 28)}00000001`, mobile: '254700000000' }, 'DeliveredToTerminal'),
    ];
    expect((await gateway.pushReports(smsUrl(a), batch)).status).toBe(200);

    expect(await analytics(a, c.id)).toMatchObject({ sent: 3, delivered: 1 });
    expect(await recipientOf(a, c.logId, phones[0]!)).toMatchObject({ status: 'success', deliveredAt: '2026-01-05T09:30:00.000Z' });
    expect((await recipientOf(a, c.logId, phones[1]!)).deliveryError).toMatch(/Subscriber absent/);
    expect((await recipientOf(a, c.logId, phones[2]!)).deliveredAt).toBeUndefined();

    const token = smsUrl(a).split('/').pop()!;
    const wrong = smsUrl(a).replace(token, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'));
    const res = await gateway.pushReports(wrong, gateway.report(r3!, 'DeliveredToTerminal'));
    expect(res).toMatchObject({ status: 404, body: { statusCode: 404 } });
    // A's token on B's path.
    const crossed = `${herald.url}/webhooks/sms/${b.orgId}/${token}`;
    expect((await gateway.pushReports(crossed, gateway.report(r3!, 'DeliveredToTerminal'))).status).toBe(404);
    // Verified before parsed: a wrong token is 404 whatever the body, a malformed one included.
    expect((await gateway.pushReports(wrong, '{"status": ')).status).toBe(404);
    expect(await analytics(a, c.id)).toMatchObject({ delivered: 1 });

    for (const bad of ['{"status": ', '[]', '"text"', '[{"messageid": "1"}]']) expect((await gateway.pushReports(smsUrl(a), bad)).status).toBe(400);
    // Bounded as the WhatsApp webhook is.
    expect((await gateway.pushReports(smsUrl(a), JSON.stringify({ status: 'DeliveredToTerminal', padding: 'x'.repeat(300 * 1024) }))).status).toBe(413);
  });

  test("A's report URL token cannot move B's recipients, even naming them", async () => {
    const p = phone();
    const c = await sentCampaign(b, 'sms', [p]);
    expect((await gateway.pushReports(smsUrl(a), gateway.report(smsAnswered(p), 'DeliveredToTerminal'))).status).toBe(200);
    expect(await analytics(b, c.id)).toMatchObject({ delivered: 0 });
  });

  test('50 parallel copies of one report count once', async () => {
    const p = phone();
    const c = await sentCampaign(a, 'sms', [p]);
    const report = gateway.report(smsAnswered(p), 'DeliveredToTerminal');
    const answers = await Promise.all(Array.from({ length: 50 }, () => gateway.pushReports(smsUrl(a), report)));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(await analytics(a, c.id)).toMatchObject({ sent: 1, delivered: 1 });
  });
});
