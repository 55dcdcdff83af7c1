import { randomUUID } from 'node:crypto';
import { jsonRows, run } from '../../src/db/statements.js';
import { pendingRecipientsJson } from '../../src/delivery/log-recipients.js';
import { insertPendingLogs } from '../../src/delivery/sql/logs.js';
import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithOrgs, type Client, type Org } from '../helpers/herald.js';

/**
 * A person's data on request: `GET /contacts/:id/data`, `GET /contacts/data?address=` and GraphQL
 * `personData`. Everything Herald holds about the person, and nothing of anyone else's: the other
 * recipients of the same sends, another organization's messages to the same address.
 */

let herald: Herald, api: Client, org: Org, other: Org;
const as = (o: Org) => ({ token: o.token });
let grace: { _id: string };

const GRACE_EMAIL = 'grace.person@example.com';
const GRACE_PHONE = '+254712300001';
const NEIGHBOUR_PHONE = '+254712300002';
const NEIGHBOUR_EMAIL = 'neighbour.person@example.com';

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  grace = (await api.post('/contacts', { name: 'Grace Wanjiku', email: 'Grace.Person@example.com', phone: '0712300001', attributes: { plan: 'gold' } }, as(org))).body;
  expect((await api.put(`/contacts/${grace._id}`, { subscriptions: { whatsapp: 'unsubscribed' } }, as(org))).status).toBe(200);
  // Sends with a neighbour in each, so every log holds someone else too.
  expect((await api.post('/notifications/send', { type: 'sms', to: [GRACE_PHONE, NEIGHBOUR_PHONE], message: 'Your order is ready' }, as(org))).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'email', to: [NEIGHBOUR_EMAIL, GRACE_EMAIL], subject: 'Receipt', message: '<p>Thanks</p>' }, as(org))).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'email', to: 'nobody.person@example.com', subject: 'Hi', message: 'Hello' }, as(org))).status).toBe(200);
  // Grace opened the receipt.
  const logs = (await api.get(`/message-logs?recipient=${GRACE_EMAIL}`, as(org))).body as { _id: string }[];
  expect((await api.post('/sandbox/events', { logId: logs[0]!._id, recipient: GRACE_EMAIL, type: 'open' }, as(org))).status).toBe(200);
  expect((await api.post('/suppressions', { address: GRACE_EMAIL, detail: 'Asked by phone' }, as(org))).status).toBe(201);
  // Another organization writes to the same address: none of it is the first's to give.
  expect((await api.post('/notifications/send', { type: 'sms', to: GRACE_PHONE, message: 'Theirs only' }, as(other))).status).toBe(200);
}, 60_000);
afterAll(() => herald?.stop());

const download = async (path: string, cred: object = as(org)) => {
  const res = await api.get(path, cred as any);
  return res;
};

describe('GET /contacts/:id/data', () => {
  test('the contact, its consent, suppressions, and every message to its addresses with only its own recipients, receipts and events', async () => {
    const res = await download(`/contacts/${grace._id}/data`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="contact-data-\d{4}-\d{2}-\d{2}\.json"$/);
    const doc = res.body;
    expect(doc.subject).toEqual({ contactId: grace._id, addresses: [GRACE_EMAIL, GRACE_PHONE] });
    expect(doc.organization).toEqual({ _id: org.orgId, name: expect.any(String) });
    expect(doc.contacts).toEqual([expect.objectContaining({ _id: grace._id, name: 'Grace Wanjiku', attributes: { plan: 'gold' } })]);
    expect(doc.contacts[0].subscriptions.whatsapp).toMatchObject({ status: 'unsubscribed', source: 'api', unsubscribedAt: expect.any(String) });
    expect(doc.suppressions).toEqual([expect.objectContaining({ channel: 'email', address: GRACE_EMAIL, reason: 'manual', detail: 'Asked by phone' })]);

    expect(doc.messages.map((m: any) => m.channel)).toEqual(['email', 'sms']);
    const [email, sms] = doc.messages;
    expect(email.recipients).toEqual([expect.objectContaining({ recipient: GRACE_EMAIL, position: 2, status: 'success', openedAt: expect.any(String) })]);
    expect(email.events.map((e: any) => [e.type, e.recipient, e.position])).toEqual([['message.opened', GRACE_EMAIL, 2]]);
    expect(email).toMatchObject({ messagePreview: '<p>Thanks</p>', test: false, campaignId: null });
    expect(sms.recipients).toEqual([expect.objectContaining({ recipient: GRACE_PHONE, position: 1, status: 'success' })]);

    // Nobody else's address, nor the other organization's message, is anywhere in it.
    const text = JSON.stringify(doc);
    for (const absent of [NEIGHBOUR_PHONE, NEIGHBOUR_EMAIL, 'nobody.person@example.com', 'Theirs only']) expect({ absent, found: text.includes(absent) }).toEqual({ absent, found: false });
  });

  test('a contact of another organization is 403, no contact 404, a user 403, a user API key 403; an admin API key may', async () => {
    expect((await download(`/contacts/${grace._id}/data`, as(other))).status).toBe(403);
    expect((await download(`/contacts/${randomUUID()}/data`)).status).toBe(404);
    expect((await download('/contacts/not-an-id/data')).status).toBe(404);
    const user = await addUser(api, org, 'user');
    expect((await download(`/contacts/${grace._id}/data`, { token: user.token })).status).toBe(403);
    expect((await download(`/contacts/${grace._id}/data`, { apiKey: (await createApiKey(api, org, 'user')).key })).status).toBe(403);
    const admin = await download(`/contacts/${grace._id}/data`, { apiKey: (await createApiKey(api, org, 'admin')).key });
    expect(admin.status).toBe(200);
    expect(admin.body.messages).toHaveLength(2);
    expect((await api.get(`/contacts/${grace._id}/data`)).status).toBe(401);
  });

  test('a person with more messages than a page has them all, newest first, in one document', async () => {
    const logs = Array.from({ length: 430 }, (_, i) => ({
      id: randomUUID(), recipients: pendingRecipientsJson([{ recipient: i % 2 ? GRACE_PHONE : NEIGHBOUR_PHONE }, { recipient: GRACE_PHONE }]),
      pending_count: 2, failed_count: 0, reserved: 0, preview: `Bulk ${i}`, length: 6, unit_cost: 1,
    }));
    await run(herald.db, insertPendingLogs, {
      orgId: org.orgId, channel: 'sms', senderUserId: null, senderApiKeyId: null, campaignId: null, test: false,
      logs: jsonRows(logs, 'recipients'),
    });
    const doc = (await download(`/contacts/${grace._id}/data`)).body;
    expect(doc.messages).toHaveLength(432);
    const bulk = doc.messages.filter((m: any) => m.messagePreview.startsWith('Bulk'));
    expect(bulk).toHaveLength(430);
    // A log that holds Grace twice shows both of her places, and no one else's.
    expect(bulk.find((m: any) => m.messagePreview === 'Bulk 1').recipients.map((r: any) => [r.recipient, r.position])).toEqual([[GRACE_PHONE, 1], [GRACE_PHONE, 2]]);
    expect(bulk.find((m: any) => m.messagePreview === 'Bulk 0').recipients.map((r: any) => [r.recipient, r.position])).toEqual([[GRACE_PHONE, 2]]);
    const order = doc.messages.map((m: any) => `${m.createdAt}/${m._id}`);
    expect(order).toEqual([...order].sort().reverse());
    expect(new Set(doc.messages.map((m: any) => m._id)).size).toBe(432);
  });
});

describe('GET /contacts/data?address=', () => {
  test('by address, written as the user writes it: its contacts and its messages; an address no contact has: its messages alone', async () => {
    const byEmail = (await download(`/contacts/data?address=${encodeURIComponent(' Grace.Person@EXAMPLE.com ')}`)).body;
    expect(byEmail.subject).toEqual({ contactId: null, addresses: [GRACE_EMAIL] });
    expect(byEmail.contacts.map((c: any) => c._id)).toEqual([grace._id]);
    expect(byEmail.messages.map((m: any) => m.channel)).toEqual(['email']);
    const byPhone = (await download('/contacts/data?address=0712300001')).body;
    expect(byPhone.subject.addresses).toEqual([GRACE_PHONE]);
    expect(byPhone.messages.every((m: any) => m.channel === 'sms')).toBe(true);
    const stranger = (await download('/contacts/data?address=nobody.person@example.com')).body;
    expect(stranger.contacts).toEqual([]);
    expect(stranger.messages.map((m: any) => m.recipients.map((r: any) => r.recipient))).toEqual([['nobody.person@example.com']]);
  });

  test('no address, or one that is neither an email nor a phone number: 400 naming address; another organization sees only its own', async () => {
    for (const query of ['', '?address=', '?address=not%20an%20address', '?address=x&extra=1']) {
      const res = await download(`/contacts/data${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
    }
    expect((await download('/contacts/data?address=not%20an%20address')).body.details).toEqual([{ field: 'address', message: 'address must be a valid email address or phone number' }]);
    const theirs = (await download(`/contacts/data?address=${GRACE_PHONE}`, as(other))).body;
    expect(theirs.contacts).toEqual([]);
    expect(theirs.messages.map((m: any) => m.messagePreview)).toEqual(['Theirs only']);
  });
});

describe('personData (GraphQL)', () => {
  const QUERY = 'query ($contactId: ID, $address: String) { personData(contactId: $contactId, address: $address) }';
  test('the same document as the download; exactly one of contactId and address', async () => {
    const rest = (await download(`/contacts/${grace._id}/data`)).body;
    const res = await api.gql(QUERY, { contactId: grace._id }, as(org));
    expect(res.body.errors).toBeUndefined();
    const { generatedAt: _a, ...gql } = res.body.data.personData;
    const { generatedAt: _b, ...same } = rest;
    expect(gql).toEqual(same);
    const byAddress = await api.gql(QUERY, { address: GRACE_EMAIL }, as(org));
    expect(byAddress.body.data.personData.subject).toEqual({ contactId: null, addresses: [GRACE_EMAIL] });
    for (const variables of [{}, { contactId: grace._id, address: GRACE_EMAIL }]) {
      expect((await api.gql(QUERY, variables, as(org))).body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
    }
    expect((await api.gql(QUERY, { contactId: grace._id }, as(other))).body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
    const user = await addUser(api, org, 'user');
    expect((await api.gql(QUERY, { address: GRACE_EMAIL }, { token: user.token })).body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
  });
});
