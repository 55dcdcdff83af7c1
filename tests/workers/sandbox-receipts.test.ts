import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { reportSandboxReceipts } from '../../src/modules/sandbox/receipts.js';
import { expectValidation } from '../helpers/expect.js';
import { addUser, createApiKey, heraldWithOrgs, signupOrg, startIsolatedHerald, startTestHerald, waitFor, client, type Client, type Org } from '../helpers/herald.js';
import { expectError } from '../helpers/expect.js';
import { expectQuiet } from '../helpers/time.js';

/**
 * providers.md, "Sandbox": simulated receipts (SMS and WhatsApp delivered shortly after the send,
 * WhatsApp also read, numbers ending in 0001 undelivered) and `POST /sandbox/events` (opens, clicks
 * and replies for a logged recipient), through both doors.
 */

let herald: Herald;
let api: Client;
let org: Org;
let other: Org;

beforeAll(async () => ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true })), 60_000);
afterAll(() => herald?.stop());

const as = (o: Org) => ({ token: o.token });

async function sentCampaign(o: Org, channel: 'sms' | 'whatsapp' | 'email', manual: string[], sent = manual.length) {
  const message = channel === 'email' ? { subject: 'Hello', content: 'Read <a href="https://example.com/a">this</a>' } : { content: 'Your order shipped' };
  const created = await api.post(
    '/campaigns',
    { name: `Sandbox ${channel}`, type: 'broadcast', channels: [channel], messages: { [channel]: message }, recipients: { manual } },
    as(o),
  );
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, as(o));
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent, delivered: 0 } });
  const logs = await api.get(`/message-logs?campaignId=${created.body._id}`, as(o));
  expect(logs.body).toHaveLength(1);
  return { id: created.body._id as string, logId: logs.body[0]._id as string };
}

const analytics = async (o: Org, id: string) => (await api.get(`/campaigns/${id}`, as(o))).body.analytics;
type Recipient = { recipient: string; status: string; deliveredAt?: string; readAt?: string; deliveryError?: string };
/** A log's recipients, in the order of `phones`. */
async function recipients(o: Org, logId: string, phones: string[]): Promise<Recipient[]> {
  const all = (await api.get(`/message-logs/${logId}`, as(o))).body.recipients as Recipient[];
  return phones.map((p) => all.find((r) => r.recipient === p)!);
}

describe('simulated receipts', () => {
  test('SMS and WhatsApp recipients are reported delivered, WhatsApp read, numbers ending in 0001 undelivered', async () => {
    const smsPhones = ['+254712340011', '+254712340012', '+254712340001'];
    const waPhones = ['+254712340021', '+254712340001'];
    const sms = await sentCampaign(org, 'sms', smsPhones);
    const wa = await sentCampaign(org, 'whatsapp', waPhones);

    const smsAnalytics = await waitFor(() => analytics(org, sms.id), (a) => a.delivered >= 2, 15_000);
    expect(smsAnalytics).toMatchObject({ sent: 3, delivered: 2, opened: 0 });
    const smsRecipients = await waitFor(() => recipients(org, sms.logId, smsPhones), (rs) => rs.every((r) => r.deliveredAt || r.deliveryError), 10_000);
    const [a, b, undelivered] = smsRecipients;
    expect(a).toMatchObject({ status: 'success', deliveredAt: expect.any(String) });
    expect(b!.deliveredAt).toEqual(expect.any(String));
    // The send itself succeeded; the receipt that followed said it never arrived.
    expect(undelivered).toMatchObject({ recipient: '+254712340001', status: 'success', deliveryError: 'Sandbox: reported undelivered (numbers ending in 0001)' });
    expect(undelivered!.deliveredAt).toBeUndefined();
    expect(a!.readAt).toBeUndefined();

    const waAnalytics = await waitFor(() => analytics(org, wa.id), (x) => x.opened >= 1, 20_000);
    expect(waAnalytics).toMatchObject({ sent: 2, delivered: 1, opened: 1 });
    const [read, waUndelivered] = await recipients(org, wa.logId, waPhones);
    expect(read).toMatchObject({ deliveredAt: expect.any(String), readAt: expect.any(String) });
    expect(Date.parse(read!.readAt!)).toBeGreaterThan(Date.parse(read!.deliveredAt!));
    expect(waUndelivered!.deliveryError).toMatch(/reported undelivered/);
    expect(waUndelivered!.readAt).toBeUndefined();
  }, 40_000);

  test('a number that fails at the send (ending in 0000) gets no receipt', async () => {
    const phones = ['+254712340031', '+254712340000'];
    const c = await sentCampaign(org, 'sms', phones, 1);
    await waitFor(() => analytics(org, c.id), (a) => a.delivered >= 1, 15_000);
    // The receipt of the number that was sent has come; none comes for the one that failed.
    const [ok, failed] = await expectQuiet(() => recipients(org, c.logId, phones));
    expect(ok!.deliveredAt).toEqual(expect.any(String));
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed!.deliveredAt).toBeUndefined();
    expect(failed!.deliveryError).toBeUndefined();
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 1 });
  }, 30_000);
  test('a job that names positions (as jobs queued before named them) reports only those', async () => {
    const phones = ['+254712340041', '+254712340042'];
    const created = await api.post(
      '/campaigns',
      { name: 'Sandbox positions', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } }, recipients: { manual: phones } },
      as(other),
    );
    await api.post(`/campaigns/${created.body._id}/launch`, {}, as(other));
    const log = (await api.get(`/message-logs?campaignId=${created.body._id}`, as(other))).body[0];
    // The send's own receipts job (due in 2 s) is taken out: the job below is the only one.
    const queued = await herald.db('graphile_worker._private_jobs').delete().whereRaw(`payload->>'orgId' = ?`, [other.orgId]);
    expect(queued).toBe(1);
    await reportSandboxReceipts(herald.db, { orgId: other.orgId, kind: 'delivered', logs: [{ logId: log._id, positions: [2] }] });
    const [first, second] = await recipients(other, log._id, phones);
    expect(second!.deliveredAt).toEqual(expect.any(String));
    expect(first!.deliveredAt).toBeUndefined();
    expect(await analytics(other, created.body._id)).toMatchObject({ sent: 2, delivered: 1 });
  }, 30_000);
});

describe('POST /sandbox/events', () => {
  test('open and click move opened and clicked once each, through REST and GraphQL', async () => {
    const c = await sentCampaign(org, 'email', ['ann@example.com', 'bob@example.com']);
    const open = await api.post('/sandbox/events', { logId: c.logId, recipient: 'Ann@Example.com', type: 'open' }, as(org));
    expect(open).toMatchObject({ status: 200, body: { recorded: 'changed' } });
    expect((await api.post('/sandbox/events', { logId: c.logId, recipient: 'ann@example.com', type: 'open' }, as(org))).body).toEqual({ recorded: 'unchanged' });
    expect(await analytics(org, c.id)).toMatchObject({ opened: 1, clicked: 0 });

    const mutation = `mutation ($input: SimulateSandboxEventInput!) { simulateSandboxEvent(input: $input) { recorded } }`;
    const click = await api.gql(mutation, { input: { logId: c.logId, recipient: 'bob@example.com', type: 'click', url: 'https://example.com/a' } }, as(org));
    expect(click.body).toEqual({ data: { simulateSandboxEvent: { recorded: 'changed' } } });
    // A click implies the open.
    expect(await analytics(org, c.id)).toMatchObject({ opened: 2, clicked: 1 });
    const [, bob] = (await api.get(`/message-logs/${c.logId}`, as(org))).body.recipients;
    expect(bob).toMatchObject({ openedAt: expect.any(String), clickedAt: expect.any(String) });

    const events = await api.get(`/message-logs/${c.logId}/events`, as(org));
    expect(JSON.stringify(events.body)).toContain('https://example.com/a');

    const invalid = await api.gql(mutation, { input: { logId: randomUUID(), recipient: 'bob@example.com', type: 'click' } }, as(org));
    expect(invalid.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
  });

  test('a reply STOP unsubscribes the contact from the channel, START resubscribes, other texts change nothing', async () => {
    const contact = await api.post('/contacts', { name: 'Replier', phone: '+254712340041' }, as(org));
    expect(contact.status).toBe(201);
    const c = await sentCampaign(org, 'sms', ['+254712340041']);
    const reply = (text: string) => api.post('/sandbox/events', { logId: c.logId, recipient: '0712340041', type: 'reply', text }, as(org));

    expect((await reply('thanks!')).body).toEqual({ recorded: 'unchanged' });
    expect((await reply('  stop ')).body).toEqual({ recorded: 'changed' });
    const subs = (await api.get(`/contacts/${contact.body._id}`, as(org))).body.subscriptions;
    expect(subs.sms).toMatchObject({ status: 'unsubscribed', source: 'reply' });
    expect(subs.whatsapp).toMatchObject({ status: 'subscribed' });
    expect((await reply('START')).body).toEqual({ recorded: 'changed' });
    expect((await api.get(`/contacts/${contact.body._id}`, as(org))).body.subscriptions.sms).toMatchObject({ status: 'subscribed' });
    // The words of a provider's reply, the same list (consent `replied`).
    expect((await reply('Unsubscribe')).body).toEqual({ recorded: 'changed' });
    expect((await api.get(`/contacts/${contact.body._id}`, as(org))).body.subscriptions.sms).toMatchObject({ status: 'unsubscribed', source: 'reply' });
    expect((await reply('unstop')).body).toEqual({ recorded: 'changed' });
  });

  test('an unknown log, a recipient not in the log, a click without an http(s) url are 400 naming the field', async () => {
    const c = await sentCampaign(org, 'email', ['cy@example.com']);
    const post = (body: Record<string, unknown>, who: Org = org) => api.post('/sandbox/events', body, as(who));

    expectValidation(await post({ logId: randomUUID(), recipient: 'cy@example.com', type: 'open' }), ['logId']);
    expectValidation(await post({ logId: 'nope', recipient: 'cy@example.com', type: 'open' }), ['logId']);
    expectValidation(await post({ logId: c.logId, recipient: 'someone@example.com', type: 'open' }), ['recipient']);
    expectValidation(await post({ logId: c.logId, recipient: 'cy@example.com', type: 'click' }), ['url']);
    expectValidation(await post({ logId: c.logId, recipient: 'cy@example.com', type: 'click', url: 'javascript:alert(1)' }), ['url']);
    expectValidation(await post({ logId: c.logId, recipient: 'cy@example.com', type: 'reply', text: 'STOP' }), ['type']);
    expectValidation(await post({ logId: c.logId, recipient: 'cy@example.com', type: 'bounce' }), ['type']);
    // Another organization's log is named as not the caller's, and nothing of it changes.
    const foreign = await post({ logId: c.logId, recipient: 'cy@example.com', type: 'open' }, other);
    expectValidation(foreign, ['logId']);
    expect(foreign.body.message).toBe("logId must name one of the organization's message logs");
    expect(await analytics(org, c.id)).toMatchObject({ opened: 0 });
  });
});

describe('who may simulate, and where', () => {
  test('admins and admin API keys may; a user or a user key is 403', async () => {
    const c = await sentCampaign(org, 'email', ['dee@example.com']);
    const body = { logId: c.logId, recipient: 'dee@example.com', type: 'open' };
    const adminKey = await createApiKey(api, org, 'admin');
    expect((await api.post('/sandbox/events', body, { apiKey: adminKey.key })).body).toEqual({ recorded: 'changed' });
    const user = await addUser(api, org, 'user');
    expectError(await api.post('/sandbox/events', body, { token: user.token }), 403, 'Insufficient permissions');
    const userKey = await createApiKey(api, org, 'user');
    expectError(await api.post('/sandbox/events', body, { apiKey: userKey.key }), 403, 'Insufficient permissions');
  });

  test('a live Herald answers 409', async () => {
    const live = await startTestHerald({ DELIVERY_MODE: 'live', WORKERS: 'false' });
    try {
      const liveApi = client(live.url);
      const admin = await signupOrg(liveApi);
      const res = await liveApi.post('/sandbox/events', { logId: randomUUID(), recipient: 'x@example.com', type: 'open' }, { token: admin.token });
      expectError(res, 409, 'Sandbox events can be simulated only in sandbox mode (DELIVERY_MODE=sandbox)');
    } finally {
      await live.stop();
    }
  }, 30_000);
});

describe('simulated receipts never hold back sending', () => {
  /**
   * A Herald of its own (no other Herald's workers take its jobs) with one sending slot and every
   * campaign queued. The receipts of a first campaign are made to wait for its row (this test holds
   * it), so the receipts job that records them stays running; a second campaign is launched
   * meanwhile. In one lane of workers that job held the only slot, and the jobs fetched with it, so
   * the second campaign waited as long as the receipts did (seconds at volume).
   */
  test('a campaign launched while receipts are being recorded is sent at once', async () => {
    const isolated = await startIsolatedHerald('receipts_lane', { WORKERS: 'true', WORKER_CONCURRENCY: '1', CAMPAIGN_INLINE_LIMIT: '0' });
    const holder = new pg.Client({ connectionString: isolated.db.url });
    try {
      const o = await signupOrg(isolated.api);
      const campaign = async (name: string, manual: string[]) => {
        const created = await isolated.api.post('/campaigns', { name, type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } }, recipients: { manual } }, as(o));
        expect(created.status).toBe(201);
        expect((await isolated.api.post(`/campaigns/${created.body._id}/launch`, {}, as(o))).status).toBe(200);
        return created.body._id as string;
      };
      const status = (id: string) => isolated.api.get(`/campaigns/${id}`, as(o)).then((r) => r.body as { status: string; analytics: { sent: number; delivered: number } });

      const first = await campaign('First', ['+254712340041', '+254712340042']);
      expect((await waitFor(() => status(first), (c) => c.status === 'completed', 15_000)).status).toBe('completed');
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM campaigns WHERE organization_id = $1 AND id = $2 FOR UPDATE', [o.orgId, first]);
      // The receipts job (due 2 s after the send) is running, waiting for the row.
      const waiting = await waitFor(
        () => holder.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).then((r) => r.rows[0].n as number),
        (n) => n > 0,
        15_000,
      );
      expect(waiting).toBeGreaterThan(0);

      const second = await campaign('Second', ['+254712340043']);
      const sent = await waitFor(() => status(second), (c) => c.status === 'completed', 10_000);
      expect(sent).toMatchObject({ status: 'completed', analytics: { sent: 1 } });
      expect((await status(first)).analytics.delivered).toBe(0);

      await holder.query('ROLLBACK');
      // The lane goes on once the row is free: the first campaign's receipts are recorded.
      expect((await waitFor(() => status(first), (c) => c.analytics.delivered === 2, 15_000)).analytics).toMatchObject({ sent: 2, delivered: 2 });
    } finally {
      await holder.end().catch(() => undefined);
      await isolated.stop();
    }
  }, 60_000);
});
