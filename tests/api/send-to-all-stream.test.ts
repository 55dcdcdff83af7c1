import type { Herald } from '../../src/server.js';
import { SANDBOX_FAILURE } from '../../src/delivery/channels/sandbox.js';
import { settleAbandoned } from '../../src/delivery/pipeline.js';
import { COSTS_MORE } from '../../src/modules/notifications/messages.js';
import { assertConforms } from '../helpers/conformance.js';
import { makeContact } from '../helpers/contacts-groups.js';
import { heraldWithClient, signupOrg, sleep, waitFor, type Client, type Org } from '../helpers/herald.js';

/*
 * platform.md, "Sending": a send to every contact answered as it is settled, a log's recipients at a
 * time, for an audience of thousands: the same array as a whole answer, in address order; the whole
 * cost reserved before anything is sent; every log settled even when the client stops reading.
 * The sandbox answers each call after 10 ms and one batch is sent at a time, so a send of a few
 * thousand contacts lasts long enough to be read, and left, halfway.
 */

let herald: Herald, api: Client;
// The sweeper takes a send's pending logs for abandoned after a second of silence (it runs only when a test calls it).
beforeAll(async () => ({ herald, api } = await heraldWithClient({ SANDBOX_LATENCY_MS: '10', SEND_CONCURRENCY: '2', SEND_ABANDON_SECONDS: '1' })));
afterAll(() => herald?.stop());

/** The `i`th bulk contact's phone: every 1,000th ends in 0000, which the sandbox fails. */
const phone = (i: number) => `+2547${10_000_000 + i * 10}`;

/** `count` contacts with a name and the phone `phone(i)`, written as a bulk import leaves them. */
async function bulkContacts(org: Org, count: number) {
  await herald.db.raw(
    `INSERT INTO contacts (organization_id, name, phone) SELECT ?, 'Person ' || i, '+2547' || (10000000 + i * 10)::text FROM generate_series(1, ?) AS i`,
    [org.orgId, count],
  );
}

const setCredits = (org: Org, n: number) => herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: n });
const balance = async (org: Org) => Number((await herald.db('organization_credits').where({ organization_id: org.orgId }).first('credits')).credits);
const logRows = (org: Org) => herald.db('message_logs').where({ organization_id: org.orgId });
/** Recipients the sandbox was handed for the organization (those it fails on purpose included). */
const outboxCount = async (org: Org) =>
  Number((await herald.db.raw('SELECT coalesce(sum(cardinality(recipients)), 0)::int AS n FROM sandbox_sends WHERE organization_id = ?', [org.orgId])).rows[0].n);

interface Streamed {
  status: number;
  headers: Headers;
  /** The body's chunks as the client read them. */
  chunks: number;
  text: string;
}

/** POSTs a send to every contact and reads its answer as a stream, chunk by chunk. */
async function sendToAll(org: Org, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Streamed> {
  const res = await fetch(`${herald.url}/notifications/send-to-all`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${org.token}`, ...headers },
    body: JSON.stringify({ to: 'all', ...body }),
  });
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  for (let read = await reader.read(); !read.done; read = await reader.read()) parts.push(read.value);
  const text = Buffer.concat(parts).toString('utf8');
  assertConforms('POST', '/notifications/send-to-all', res.status, res.headers, JSON.parse(text));
  return { status: res.status, headers: res.headers, chunks: parts.length, text };
}

describe('POST /notifications/send-to-all, streamed', () => {
  let org: Org;
  // Several pages of the address index: 5,300 contacts, one of whose numbers another contact holds
  // (sent once) and one of which a contact that left SMS shares (not sent at all, so its page is one
  // short and the logs after it still hold 100 each).
  const COUNT = 5300;
  const expected = Array.from({ length: COUNT }, (_, k) => phone(k + 1))
    .filter((p) => p !== phone(2500))
    .map((recipient) => (recipient.endsWith('0000') ? { recipient, status: 'failed', error: SANDBOX_FAILURE } : { recipient, status: 'success' }));
  const successes = expected.filter((r) => r.status === 'success').length;

  beforeAll(async () => {
    org = await signupOrg(api);
    await bulkContacts(org, COUNT);
    await makeContact(api, { token: org.token }, { name: 'Twin', phone: phone(4999) });
    await makeContact(api, { token: org.token }, { name: 'Leaver', phone: phone(2500), subscriptions: { sms: 'unsubscribed' } });
  });

  test('402 when the balance does not cover every recipient: nothing sent, nothing logged, nothing taken', async () => {
    await setCredits(org, expected.length - 1);
    const res = await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'Hello' }, { token: org.token });
    expect(res.status).toBe(402);
    expect(res.body.message).toBe(`Insufficient credits: this send needs ${expected.length} credits and the balance is ${expected.length - 1}`);
    expect(await logRows(org)).toEqual([]);
    expect(await outboxCount(org)).toBe(0);
    expect(await balance(org)).toBe(expected.length - 1);
  });

  test('the same array as a whole answer, in address order, written in several chunks; a log per 100, credits for the successes alone', async () => {
    await setCredits(org, 100_000);
    const res = await sendToAll(org, { type: 'sms', message: 'Hello' }, { 'idempotency-key': 'everyone-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBeNull();
    expect(res.chunks).toBeGreaterThan(1);
    expect(JSON.parse(res.text)).toEqual(expected);
    // The text is the whole array's, as `res.json` would have written it.
    expect(res.text).toBe(JSON.stringify(expected));

    // What the key keeps is the send's logs, in order, not its 5,299 items.
    const key = await herald.db('idempotency_keys').where({ organization_id: org.orgId, key: 'everyone-1' }).first();
    expect(key.state).toBe('done');
    expect(Object.keys(key.response)).toEqual(['ok', 'result']);
    const ids = key.response.result.logs as string[];
    const byId = new Map((await logRows(org)).map((l) => [l.id, l]));
    expect(new Set(ids)).toEqual(new Set(byId.keys()));
    const logs = ids.map((id) => byId.get(id)!);
    expect(logs.map((l) => l.recipients.length)).toEqual([...Array(52).fill(100), 99]);
    expect(logs.every((l) => l.settled_at !== null && l.pending_count === 0)).toBe(true);
    expect(logs.flatMap((l) => l.recipients.map((r: string | { recipient: string }) => (typeof r === 'string' ? r : r.recipient)))).toEqual(expected.map((r) => r.recipient));
    expect(logs.reduce((sum, l) => sum + Number(l.cost), 0)).toBe(successes);
    expect(await balance(org)).toBe(100_000 - successes);
    expect(await outboxCount(org)).toBe(expected.length);
  });

  test('Idempotency-Key: a repeat streams the first answer again and sends nothing; another body is 422', async () => {
    const before = { balance: await balance(org), outbox: await outboxCount(org), logs: (await logRows(org)).length };
    const again = await sendToAll(org, { type: 'sms', message: 'Hello' }, { 'idempotency-key': 'everyone-1' });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toEqual(expected);
    expect({ balance: await balance(org), outbox: await outboxCount(org), logs: (await logRows(org)).length }).toEqual(before);
    const other = await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'Other' }, { token: org.token }, { 'idempotency-key': 'everyone-1' });
    expect(other.status).toBe(422);
  });

  test('a client that stops reading halfway: the send goes on, every log settles, what was reserved is spent or released; a repeat meanwhile is 409', async () => {
    await setCredits(org, 100_000);
    const logsBefore = new Set((await logRows(org)).map((l) => l.id));
    const outboxBefore = await outboxCount(org);
    const abort = new AbortController();
    const res = await fetch(`${herald.url}/notifications/send-to-all`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.token}`, 'idempotency-key': 'left-halfway' },
      body: JSON.stringify({ type: 'sms', to: 'all', message: 'Hello again' }),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value).startsWith('[{"recipient":')).toBe(true);
    const running = await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'Hello again' }, { token: org.token }, { 'idempotency-key': 'left-halfway' });
    expect(running.status).toBe(409);
    abort.abort();

    // Still sending when the client left: some of its logs are not settled yet.
    const unsettled = () => herald.db('message_logs').where({ organization_id: org.orgId }).whereNull('settled_at').count<{ count: string }[]>('* as count');
    expect(Number((await unsettled())[0]!.count)).toBeGreaterThan(0);
    await waitFor(async () => Number((await unsettled())[0]!.count), (n) => n === 0, 60_000);
    await herald.deps.background.settled();

    const logs = (await logRows(org)).filter((l) => !logsBefore.has(l.id));
    expect(logs).toHaveLength(53);
    const reserved = logs.reduce((sum, l) => sum + Number(l.reserved), 0);
    const spent = logs.reduce((sum, l) => sum + Number(l.cost), 0);
    expect(reserved).toBe(expected.length);
    expect(spent).toBe(successes);
    // Reserved = spent + released: the balance lost what was spent, nothing more.
    expect(await balance(org)).toBe(100_000 - spent);
    expect(await outboxCount(org)).toBe(outboxBefore + expected.length);
    // The key holds the whole send, answered again in full.
    const again = await sendToAll(org, { type: 'sms', message: 'Hello again' }, { 'idempotency-key': 'left-halfway' });
    expect(JSON.parse(again.text)).toEqual(expected);
  });
});

describe('send-to-all, personalised', () => {
  test('each contact rendered with its contact as its log is sent; one whose message grew dearer meanwhile fails, uncharged; GraphQL answers the same items whole', async () => {
    const org = await signupOrg(api);
    await bulkContacts(org, 3000);
    await setCredits(org, 100_000);
    const message = 'Hi {{ contact.firstName }} {{ contact.name }}';
    const res = await fetch(`${herald.url}/notifications/send-to-all`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.token}` },
      body: JSON.stringify({ type: 'sms', to: 'all', message }),
    });
    const reader = res.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    // The last log is sent well after the first: a longer name now takes one of its contacts past one segment.
    await herald.db('contacts').where({ organization_id: org.orgId, phone: phone(2999) }).update({ name: `Person ${'x'.repeat(200)}` });
    for (let read = await reader.read(); !read.done; read = await reader.read()) text += new TextDecoder().decode(read.value);
    const answer = JSON.parse(text) as { recipient: string; status: string; error?: string }[];
    expect(answer).toHaveLength(3000);
    expect(answer.map((r) => r.recipient)).toEqual(Array.from({ length: 3000 }, (_, k) => phone(k + 1)));
    expect(answer[2998]).toEqual({ recipient: phone(2999), status: 'failed', error: COSTS_MORE });
    expect(answer.filter((r) => r.status === 'failed').map((r) => r.recipient)).toEqual([1000, 2000, 2999, 3000].map(phone));

    const outbox = (await herald.db.raw('SELECT recipients, bodies FROM sandbox_sends WHERE organization_id = ?', [org.orgId])).rows as { recipients: string[]; bodies: string[] | null }[];
    const bodies = new Map(outbox.flatMap((s) => s.recipients.map((r, i) => [r, s.bodies?.[i]] as const)));
    expect(bodies.get(phone(7))).toBe('Hi Person Person 7');
    expect(bodies.has(phone(2999))).toBe(false);
    const logs = await logRows(org);
    expect(logs.reduce((sum, l) => sum + Number(l.reserved), 0)).toBe(3000);
    expect(await balance(org)).toBe(100_000 - 2996);

    const gql = await api.gql('mutation($i: SendToAllInput!) { sendToAll(input: $i) { recipient status error } }', { i: { type: 'sms', message: 'Hello {{ contact.firstName }}' } }, { token: org.token });
    expect(gql.body.data.sendToAll).toEqual(
      Array.from({ length: 3000 }, (_, k) => phone(k + 1)).map((recipient) =>
        recipient.endsWith('0000') ? { recipient, status: 'failed', error: SANDBOX_FAILURE } : { recipient, status: 'success', error: null },
      ),
    );
  });
});

describe('send-to-all, longer than the sweeper waits', () => {
  test('its pending logs stay alive while it sends: none is settled as interrupted, and it ends whole', async () => {
    const org = await signupOrg(api);
    // 200 logs of 100: about five seconds of sending here.
    await bulkContacts(org, 20_000);
    await setCredits(org, 100_000);
    const res = await fetch(`${herald.url}/notifications/send-to-all`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.token}` },
      body: JSON.stringify({ type: 'sms', to: 'all', message: 'Still here' }),
    });
    const reader = res.body!.getReader();
    const chunks = [(await reader.read()).value!];
    await sleep(1500);
    // More than a second after they were written, logs are still pending, and none is taken for abandoned.
    const pending = await herald.db('message_logs').where({ organization_id: org.orgId }).whereNull('settled_at').count<{ n: string }[]>('* as n');
    expect(Number(pending[0]!.n)).toBeGreaterThan(0);
    expect(await settleAbandoned(herald.db, 1)).toBe(0);
    for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
    const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { recipient: string; status: string; error?: string }[];
    expect(answer).toHaveLength(20_000);
    expect(answer.filter((r) => r.status === 'failed').map((r) => r.error)).toEqual(Array(20).fill(SANDBOX_FAILURE));
    const logs = await logRows(org);
    expect(logs.every((l) => l.settled_at !== null)).toBe(true);
    expect(logs.reduce((sum, l) => sum + Number(l.cost), 0)).toBe(20_000 - 20);
  }, 60_000);
});
