import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { expectGqlError, expectValidation } from '../helpers/expect.js';
import { client, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';
import { waitFor } from '../helpers/time.js';

/*
 * The delivery engine as its users meet it, at the SMS gateway fake (live delivery, the Herald's own
 * workers, every campaign through the send queue):
 *
 * - fairness: one organization's campaign of thousands does not hold back another's small one;
 * - transactional first: a one-recipient send (a one-time code) overtakes its own organization's
 *   campaign messages still queued;
 * - a credential's rate (`sms_rate`) through REST and GraphQL.
 *
 * Pacing and the providers' throttling answers are in sending-engine-pace.test.ts.
 *
 * Nothing here is asserted by wall-clock time: the gateway fake records every message in the order
 * it arrived, and the assertions are about that order and those counts. The fake answers every
 * call after 50 ms, and SEND_CONCURRENCY=1 lets each gateway account have only a couple of bulk
 * calls (of up to 20 messages) in flight per process, and one more for transactional sends: a
 * campaign of 2,500 recipients then lasts seconds, long enough to watch what overtakes it.
 */
const CALL_MS = 50;

let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;

beforeAll(async () => {
  gateway = await startSmsGatewayFake();
  herald = await startTestHerald({
    DELIVERY_MODE: 'live',
    SMS_API_URL: gateway.url,
    WORKERS: 'true',
    CAMPAIGN_INLINE_LIMIT: '0',
    SEND_CONCURRENCY: '1',
  });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await gateway?.stop();
});

beforeEach(() => gateway.reset());

/** One message as the gateway received it, in arrival order (a bulk call's messages in the order it listed them). */
interface Arrival {
  partnerID: string;
  mobile: string;
  message: string;
}

const arrivals = (): Arrival[] =>
  gateway.calls.flatMap((c) =>
    (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body]).map((m: any) => ({ partnerID: String(m.partnerID), mobile: String(m.mobile), message: String(m.message) })),
  );

/** Polls a condition on the test's own state (the fake's records) every 10 ms, for up to `ms`. */
async function until(ok: () => boolean, ms = 30_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
  return ok();
}

interface Sender {
  org: Org;
  partnerID: string;
  /** Its contacts' numbers as the gateway writes them (E.164 without the plus). */
  numbers: string[];
}

/**
 * An organization with its own gateway account (`partnerID`) and `count` contacts, numbered
 * +2547<code><6 digits>, inserted with SQL, and credits for all of them.
 */
async function sender(partnerID: string, code: string, count: number): Promise<Sender> {
  const org = await liveOrg(api, {}, { sms_partnerID: partnerID });
  await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100_000 });
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT ?, 'Contact ' || i, '+2547' || ? || lpad(i::text, 6, '0') FROM generate_series(1, ?) AS i`,
    [org.orgId, code, count],
  );
  return { org, partnerID, numbers: Array.from({ length: count }, (_, i) => `2547${code}${String(i + 1).padStart(6, '0')}`) };
}

async function launch(s: Sender, content: string): Promise<string> {
  const created = await api.post('/campaigns', { name: content, type: 'broadcast', channels: ['sms'], messages: { sms: { content } } }, { token: s.org.token });
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, undefined, { token: s.org.token });
  expect(launched.body.status).toBe('active');
  return created.body._id;
}

async function completed(s: Sender, campaignId: string) {
  const res = await waitFor(() => api.get(`/campaigns/${campaignId}`, { token: s.org.token }), (r) => r.body.status === 'completed', 60_000);
  expect(res.body.status).toBe('completed');
  return res.body;
}

/** Every contact of `s` received the campaign's text exactly once at the gateway, and nobody else did. */
function expectEachOnceAtGateway(s: Sender, content: string) {
  const got = arrivals()
    .filter((a) => a.partnerID === s.partnerID && a.message === content)
    .map((a) => a.mobile)
    .sort();
  expect(got.length).toBe(s.numbers.length);
  expect(got).toEqual([...s.numbers].sort());
}

/** Every recipient of the campaign is in exactly one of its logs. */
async function expectEachOnceLogged(s: Sender, campaignId: string) {
  const entries = await herald.db.raw(
    `SELECT coalesce(r->>'recipient', r #>> '{}') AS recipient, count(*)::int AS n
     FROM message_logs, json_array_elements(recipients) AS r
     WHERE organization_id = ? AND campaign_id = ?
     GROUP BY 1`,
    [s.org.orgId, campaignId],
  );
  expect(entries.rows.length).toBe(s.numbers.length);
  expect(entries.rows.filter((r: { n: number }) => r.n !== 1)).toEqual([]);
}

test("fairness: a small campaign of one organization is sent while another's campaign of thousands is still far from done", async () => {
  gateway.setBehaviour({ kind: 'delay', ms: CALL_MS });
  const big = await sender('7101', '11', 2500);
  const small = await sender('7102', '12', 30);
  const bigCampaign = await launch(big, 'Big sale starts today');
  // The big campaign is being sent: its first messages have reached the gateway.
  expect(await until(() => arrivals().some((a) => a.partnerID === big.partnerID))).toBe(true);
  const bigArrivedAtLaunch = arrivals().filter((a) => a.partnerID === big.partnerID).length;
  const smallCampaign = await launch(small, 'Small shop news');

  const [bigDone, smallDone] = await Promise.all([completed(big, bigCampaign), completed(small, smallCampaign)]);
  expect(bigDone.analytics).toMatchObject({ sent: 2500, failed: 0 });
  expect(smallDone.analytics).toMatchObject({ sent: 30, failed: 0 });

  const order = arrivals();
  const lastSmall = order.map((a) => a.partnerID).lastIndexOf(small.partnerID);
  const bigAfterSmall = order.slice(lastSmall + 1).filter((a) => a.partnerID === big.partnerID).length;
  // The big campaign still had most of its messages to send when the small one was launched, and
  // the small one's last message reached the gateway before at least 1,000 of them: the small
  // organization got its turn within a turn or so, not after the big campaign (a queue served in
  // order would have sent the small campaign's batch after the big one's 25).
  expect(bigArrivedAtLaunch).toBeLessThan(500);
  expect(bigAfterSmall).toBeGreaterThanOrEqual(1000);

  // Both complete with every recipient exactly once, at the gateway and in the logs.
  expectEachOnceAtGateway(big, 'Big sale starts today');
  expectEachOnceAtGateway(small, 'Small shop news');
  await expectEachOnceLogged(big, bigCampaign);
  await expectEachOnceLogged(small, smallCampaign);
}, 60_000);

test("transactional first: a one-time code reaches the gateway before the organization's own campaign messages still queued", async () => {
  gateway.setBehaviour({ kind: 'delay', ms: CALL_MS });
  const s = await sender('7103', '13', 2000);
  const content = 'Weekend offers inside';
  const campaignId = await launch(s, content);
  const mine = () => arrivals().filter((a) => a.partnerID === s.partnerID);
  // The campaign is well under way.
  expect(await until(() => mine().length >= 100)).toBe(true);

  const before = mine().length;
  const otp = await api.post('/notifications/send', { type: 'sms', to: '+254799000123', message: 'Your code is 482913' }, { token: s.org.token });
  expect(otp.status).toBe(200);
  expect(otp.body).toEqual({ recipient: '+254799000123', status: 'success' });

  const done = await completed(s, campaignId);
  expect(done.analytics).toMatchObject({ sent: 2000, failed: 0 });

  // The account's messages in the order they reached the gateway (the code once, among them).
  const order = mine();
  const at = order.findIndex((a) => a.message === 'Your code is 482913');
  expect(at).toBeGreaterThanOrEqual(before);
  expect(order.filter((a) => a.message === 'Your code is 482913')).toHaveLength(1);
  // Campaign messages that reached the gateway after the request was made and before the code:
  // only the calls that went while the request was being handled (the account's bulk calls go a
  // couple at a time, 50 ms each: a few of 20), never the hundreds its turns had queued for it.
  expect(at - before).toBeLessThanOrEqual(5 * 20);
  // The campaign still had most of its messages to send when the code went out.
  expect(order.length - at - 1).toBeGreaterThanOrEqual(1000);
  expectEachOnceAtGateway(s, content);
  await expectEachOnceLogged(s, campaignId);
}, 60_000);

describe("a credential's rate through both doors", () => {
  const UPDATE = `mutation($input: CredentialsInput!) { updateCredentials(input: $input) { credentials { sms_rate email_rate whatsapp_rate } } }`;
  const READ = `query { organization { credentials { sms_rate email_rate whatsapp_rate } } }`;
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  const put = (body: unknown) => api.put('/organizations/current/credentials', body, { token: org.token });
  const restRates = async () => {
    const { sms_rate, email_rate, whatsapp_rate } = (await api.get('/organizations/current', { token: org.token })).body.credentials;
    return { sms_rate, email_rate, whatsapp_rate };
  };
  const gqlRates = async () => {
    const res = await api.gql(READ, undefined, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    return res.body.data.organization.credentials;
  };

  test('REST: set, read back, keep the others, remove with null', async () => {
    expect(await restRates()).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: null });
    const set = await put({ sms_rate: 12.5 });
    expect(set.status).toBe(200);
    expect(set.body.credentials).toMatchObject({ sms_rate: 12.5, email_rate: null, whatsapp_rate: null });
    expect(await restRates()).toEqual({ sms_rate: 12.5, email_rate: null, whatsapp_rate: null });
    // GraphQL reads what REST wrote.
    expect(await gqlRates()).toEqual({ sms_rate: 12.5, email_rate: null, whatsapp_rate: null });

    // The bounds are accepted, a number written as a string too; fields left out are kept.
    expect((await put({ email_rate: 0.1, whatsapp_rate: '10000' })).status).toBe(200);
    expect(await restRates()).toEqual({ sms_rate: 12.5, email_rate: 0.1, whatsapp_rate: 10000 });
    // Another credential field changed keeps the rates.
    expect((await put({ sms_shortCode: 'HERALD' })).status).toBe(200);
    expect(await restRates()).toEqual({ sms_rate: 12.5, email_rate: 0.1, whatsapp_rate: 10000 });

    // null removes one, and only that one.
    const removed = await put({ sms_rate: null });
    expect(removed.status).toBe(200);
    expect(removed.body.credentials.sms_rate).toBeNull();
    expect(await restRates()).toEqual({ sms_rate: null, email_rate: 0.1, whatsapp_rate: 10000 });
    expect((await put({ email_rate: null, whatsapp_rate: null })).status).toBe(200);
    expect(await restRates()).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: null });
  });

  test('GraphQL: updateCredentials sets and removes it, the credentials query and REST show it', async () => {
    const set = await api.gql(UPDATE, { input: { sms_rate: 3 } }, { token: org.token });
    expect(set.body.errors).toBeUndefined();
    expect(set.body.data.updateCredentials.credentials).toEqual({ sms_rate: 3, email_rate: null, whatsapp_rate: null });
    expect(await gqlRates()).toEqual({ sms_rate: 3, email_rate: null, whatsapp_rate: null });
    expect(await restRates()).toEqual({ sms_rate: 3, email_rate: null, whatsapp_rate: null });

    // Left out: kept. Inline literal too.
    const other = await api.gql('mutation { updateCredentials(input: { whatsapp_rate: 40 }) { credentials { sms_rate whatsapp_rate } } }', undefined, { token: org.token });
    expect(other.body.errors).toBeUndefined();
    expect(other.body.data.updateCredentials.credentials).toEqual({ sms_rate: 3, whatsapp_rate: 40 });

    // null removes it (and only it).
    const removed = await api.gql(UPDATE, { input: { sms_rate: null } }, { token: org.token });
    expect(removed.body.errors).toBeUndefined();
    expect(removed.body.data.updateCredentials.credentials).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: 40 });
    expect(await gqlRates()).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: 40 });
    expect(await restRates()).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: 40 });
    const literalNull = await api.gql('mutation { updateCredentials(input: { whatsapp_rate: null }) { credentials { whatsapp_rate } } }', undefined, { token: org.token });
    expect(literalNull.body.errors).toBeUndefined();
    expect(await restRates()).toEqual({ sms_rate: null, email_rate: null, whatsapp_rate: null });
  });

  test('out of range or not a number: 400 naming the field, and nothing stored', async () => {
    expect((await put({ sms_rate: 7 })).status).toBe(200);
    for (const bad of [0, 0.05, -1, 20000, 'abc', '12/s', true, '']) {
      expectValidation(await put({ sms_rate: bad }), ['sms_rate']);
    }
    expectValidation(await put({ email_rate: 0 }), ['email_rate']);
    expectValidation(await put({ whatsapp_rate: 'abc' }), ['whatsapp_rate']);
    // Named together with the input's other problems.
    expectValidation(await put({ sms_rate: 20000, email_port: 'smtp' }), ['sms_rate', 'email_port']);
    expect(await restRates()).toEqual({ sms_rate: 7, email_rate: null, whatsapp_rate: null });

    for (const bad of [0, 20000]) {
      const res = await api.gql(UPDATE, { input: { sms_rate: bad } }, { token: org.token });
      const err = expectGqlError(res, 400, 'BAD_REQUEST');
      expect(err.extensions.details.map((d: { field: string }) => d.field)).toEqual(['sms_rate']);
      expect(err.message).toMatch(/^sms_rate /);
    }
    // Not a Float: refused by the schema before any resolver, still a 400 naming the field.
    const notNumber = await api.gql(UPDATE, { input: { sms_rate: 'abc' } }, { token: org.token });
    expect(notNumber.body.errors?.[0]?.extensions?.statusCode).toBe(400);
    expect(notNumber.body.errors![0].message).toMatch(/sms_rate/);
    expect(await gqlRates()).toEqual({ sms_rate: 7, email_rate: null, whatsapp_rate: null });
  });
});
