import { runErasure } from '../../src/modules/erasure/service.js';
import { ERASURE_STEP_COUNT } from '../../src/modules/erasure/sql.js';
import { erasedToken } from '../../src/modules/erasure/tokens.js';
import type { Herald } from '../../src/server.js';
import { whereWritten as scan } from '../helpers/database-scan.js';
import { addUser, createApiKey, heraldWithOrgs, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

/**
 * Erasure of a person: `POST /contacts/:id/erase`, `POST /erasures`, `GET /erasures(/:id)` and
 * GraphQL. Afterwards the person's addresses are nowhere in the database (every text, array and
 * JSON column of every table is searched), counts are unchanged, the suppression stays under the
 * token, and a new campaign leaves the erased address out.
 */

let herald: Herald, api: Client, org: Org, other: Org;
const as = (o: Org) => ({ token: o.token });

const EMAIL = 'grace.erase@example.com';
const PHONE = '+254712300101';
const NATIONAL = '0712300101';
const NEIGHBOUR = '+254712300102';

/** Where the needles are written: in the organization's rows (`orgId`, this file's organization by default), and in tables without any. */
const whereWritten = (needles: string[], orgId = org.orgId) => scan(needles, { orgId });

async function imported(cred: Credential, csv: string) {
  const res = await api.raw('POST', '/contacts/import', csv, cred, { 'content-type': 'text/csv' });
  expect(res.status).toBe(202);
  return (await waitFor(() => api.get(`/contact-imports/${res.body._id}`, cred), (r) => ['completed', 'failed', 'canceled'].includes(r.body.status))).body;
}

const done = (id: string, o: Org = org) => waitFor(() => api.get(`/erasures/${id}`, as(o)), (r) => r.body.status === 'done', 20_000);

let grace: { _id: string };

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true }));
  const group = (await api.post('/groups', { name: 'Regulars', color: 'bg-teal-500' }, as(org))).body;
  const created = await api.post('/contacts', { name: 'Grace Erase', email: 'Grace.Erase@example.com', phone: NATIONAL, groups: [group._id], attributes: { note: `call ${NATIONAL}` } }, as(org));
  expect(created.status).toBe(201);
  grace = created.body;
  // A webhook endpoint that never answers: its events and failed attempts hold the payloads.
  expect((await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', eventTypes: ['message.sent', 'message.opened', 'message.clicked'] }, as(org))).status).toBe(201);
  expect((await api.post('/notifications/send', { type: 'sms', to: [NATIONAL, NEIGHBOUR], message: 'Your table is ready' }, as(org))).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'email', to: [EMAIL, 'neighbour.erase@example.com'], subject: 'Receipt', message: '<p>Thanks, <a href="https://example.com/r">receipt</a></p>' }, as(org))).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'sms', to: PHONE, message: 'Idempotent' }, as(org), { 'idempotency-key': 'erase-1' })).status).toBe(200);
  const log = ((await api.get(`/message-logs?recipient=${EMAIL}`, as(org))).body as { _id: string }[])[0]!;
  expect((await api.post('/sandbox/events', { logId: log._id, recipient: EMAIL, type: 'open' }, as(org))).status).toBe(200);
  expect((await api.post('/sandbox/events', { logId: log._id, recipient: EMAIL, type: 'click', url: 'https://example.com/r' }, as(org))).status).toBe(200);
  // A campaign naming her by hand, an import that names her and fails a row of hers, and her address suppressed by an admin.
  const campaign = (await api.post('/campaigns', { name: 'Brunch', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Brunch on Sunday' } }, recipients: { manual: [NATIONAL] } }, as(org))).body;
  expect((await api.post(`/campaigns/${campaign._id}/launch`, {}, as(org))).body.status).toBe('completed');
  await imported(as(org), `name,email,phone\nGrace Erase,${EMAIL},${NATIONAL}\nGrace Twice,${EMAIL},not a phone ${NATIONAL}x\n`);
  expect((await api.post('/suppressions', { address: EMAIL, detail: `asked by ${EMAIL}` }, as(org))).status).toBe(201);
  // The other organization knows the same person: nothing of theirs changes.
  expect((await api.post('/contacts', { name: 'Grace Elsewhere', email: EMAIL, phone: NATIONAL }, as(other))).status).toBe(201);
  expect((await api.post('/notifications/send', { type: 'sms', to: PHONE, message: 'Theirs' }, as(other))).status).toBe(200);
  // Every job of the sends (receipts, webhooks) has had its turn.
  await waitFor(async () => (await herald.db.raw(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier <> 'sweep' AND attempts = 0`)).rows[0].n, (n: number) => n === 0, 20_000);
}, 90_000);
afterAll(() => herald?.stop());

describe('POST /contacts/:id/erase', () => {
  test('the contact goes, its addresses become tokens everywhere, counts stay, the suppression stays under the token', async () => {
    const analyticsBefore = (await api.get('/stats/daily', as(org))).body.totals;
    const logsBefore = (await api.get('/message-logs?limit=100', as(org))).body.length;
    expect((await whereWritten([EMAIL, PHONE, NATIONAL])).length).toBeGreaterThan(10);

    const res = await api.post(`/contacts/${grace._id}/erase`, undefined, as(org));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ contactId: grace._id, channels: ['email', 'phone'], status: 'pending', steps: 2 * ERASURE_STEP_COUNT });
    expect(JSON.stringify(res.body)).not.toContain(EMAIL);
    const erasure = (await done(res.body._id)).body;
    expect(erasure).toMatchObject({ status: 'done', stepsDone: 2 * ERASURE_STEP_COUNT, finishedAt: expect.any(String) });
    expect(erasure.rowsChanged).toBeGreaterThan(10);
    const [emailToken, phoneToken] = erasure.tokens as string[];
    expect(emailToken).toMatch(/^erased:[A-Za-z0-9_-]{43}$/);

    // Nowhere in any table of the organization's (the other organization's own rows aside).
    expect(await whereWritten([EMAIL, PHONE, NATIONAL])).toEqual([]);
    expect((await whereWritten([EMAIL, PHONE], other.orgId)).length).toBeGreaterThan(0);
    // The other organization's contact and log are theirs: exactly those keep the address.
    const { rows } = await herald.db.raw(
      `SELECT (SELECT count(*) FROM contacts WHERE lower(email) = ? OR phone = ?)::int AS contacts,
              (SELECT count(*) FROM contacts WHERE (lower(email) = ? OR phone = ?) AND organization_id = ?)::int AS theirs,
              (SELECT count(*) FROM message_logs WHERE recipients::text LIKE ? AND organization_id <> ?)::int AS other_logs,
              (SELECT count(*) FROM message_logs WHERE recipients::text LIKE ? AND organization_id = ?)::int AS our_logs`,
      [EMAIL, PHONE, EMAIL, PHONE, other.orgId, `%${PHONE}%`, org.orgId, `%${PHONE}%`, org.orgId],
    );
    expect(rows[0]).toEqual({ contacts: 1, theirs: 1, other_logs: 1, our_logs: 0 });

    // The contact is gone; the logs carry the tokens, the neighbour untouched; counts unchanged.
    expect((await api.get(`/contacts/${grace._id}`, as(org))).status).toBe(404);
    const logs = (await api.get('/message-logs?limit=100', as(org))).body as { recipients: { recipient: string; openedAt?: string }[] }[];
    expect(logs).toHaveLength(logsBefore);
    const recipients = logs.flatMap((l) => l.recipients);
    expect(recipients.filter((r) => r.recipient === emailToken)).toEqual([expect.objectContaining({ status: 'success', openedAt: expect.any(String) })]);
    expect(recipients.filter((r) => r.recipient === phoneToken).length).toBeGreaterThanOrEqual(3);
    expect(recipients.some((r) => r.recipient === NEIGHBOUR)).toBe(true);
    expect((await api.get('/stats/daily', as(org))).body.totals).toEqual(analyticsBefore);
    const suppressions = (await api.get('/suppressions', as(org))).body as { address: string; reason: string; detail: string | null }[];
    expect(suppressions).toEqual([expect.objectContaining({ address: emailToken, reason: 'manual', detail: `asked by ${emailToken}` })]);

    // The audit log says who erased whom, without the address.
    const audit = (await api.get('/audit-log?action=contact.erased', as(org))).body as { details: Record<string, unknown>; resourceId: string }[];
    expect(audit).toEqual([expect.objectContaining({ resourceId: grace._id, details: { erasureId: erasure._id, channels: ['email', 'phone'], tokens: erasure.tokens } })]);
  });

  test('an erased address that comes back as a contact is left out of campaigns and sends to every contact', async () => {
    const back = (await api.post('/contacts', { name: 'Grace Again', email: EMAIL }, as(org))).body;
    const created = await api.post('/campaigns', { name: 'Autumn', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Autumn', content: 'Autumn menu' } }, recipients: { contacts: [back._id], manual: ['fresh.erase@example.com'] } }, as(org));
    const estimate = (await api.get(`/campaigns/${created.body._id}/estimate`, as(org))).body;
    expect(estimate).toMatchObject({ recipients: 1, suppressed: 1, channels: [expect.objectContaining({ channel: 'email', recipients: 1, suppressed: { unsubscribed: 0, listed: 1 } })] });
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, as(org));
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 1, suppressed: 1 } });
    const sent = (await api.get(`/message-logs?campaignId=${created.body._id}`, as(org))).body as { recipients: { recipient: string }[] }[];
    expect(sent.flatMap((l) => l.recipients.map((r) => r.recipient))).toEqual(['fresh.erase@example.com']);
    const all = await api.post('/notifications/send-to-all', { type: 'email', to: 'all', subject: 'Everyone', message: 'To all' }, as(org));
    expect(all.status).toBe(200);
    const everyone = (await api.get('/sandbox/outbox?limit=100', as(org))).body as { recipient: string; subject: string | null }[];
    expect(everyone.filter((m) => m.subject === 'Everyone').map((m) => m.recipient)).not.toContain(EMAIL);
    await api.delete(`/contacts/${back._id}`, as(org));
  });

  test('another organization’s contact is 403, no contact 404; users and user API keys may not; an admin API key may', async () => {
    const theirs = (await api.post('/contacts', { name: 'Theirs', phone: '0712300199' }, as(other))).body;
    expect((await api.post(`/contacts/${theirs._id}/erase`, undefined, as(org))).status).toBe(403);
    expect((await api.post('/contacts/00000000-0000-4000-8000-000000000000/erase', undefined, as(org))).status).toBe(404);
    const user = await addUser(api, org, 'user');
    const mine = (await api.post('/contacts', { name: 'Short-lived', phone: '0712300198' }, as(org))).body;
    expect((await api.post(`/contacts/${mine._id}/erase`, undefined, { token: user.token })).status).toBe(403);
    expect((await api.post(`/contacts/${mine._id}/erase`, undefined, { apiKey: (await createApiKey(api, org, 'user')).key })).status).toBe(403);
    const byKey = await api.post(`/contacts/${mine._id}/erase`, undefined, { apiKey: (await createApiKey(api, org, 'admin')).key });
    expect(byKey.status).toBe(202);
    await done(byKey.body._id);
    expect((await api.get(`/erasures/${byKey.body._id}`, as(other))).status).toBe(403);
    expect((await api.get('/erasures', as(other))).body).toEqual([]);
  });
});

describe('POST /erasures (an address)', () => {
  test('an address that was never a contact: its logs carry the token; a bad address is 400', async () => {
    expect((await api.post('/notifications/send', { type: 'email', to: 'walkin.erase@example.com', subject: 'Hi', message: 'Hello' }, as(org))).status).toBe(200);
    const res = await api.post('/erasures', { address: ' Walkin.Erase@EXAMPLE.com ' }, as(org));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ contactId: null, channels: ['email'] });
    await done(res.body._id);
    expect(await whereWritten(['walkin.erase@example.com'])).toEqual([]);
    const bad = await api.post('/erasures', { address: 'not an address' }, as(org));
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'address', message: 'address must be a valid email address or phone number' }]);
  });
});

describe('the job', () => {
  test('interrupted after any step and run again, or run twice, it ends as one uninterrupted run does', async () => {
    const send = (address: string) => api.post('/notifications/send', { type: 'email', to: [address, 'keep.erase@example.com'], subject: 'Hi', message: `Hello ${address}` }, as(org));
    const key = (await herald.db('organizations').where('id', org.orgId).first('erasure_key')).erasure_key as Buffer;
    for (const stopAfter of [1, 3, 7, ERASURE_STEP_COUNT - 1]) {
      const address = `resume${stopAfter}.erase@example.com`;
      expect((await send(address)).status).toBe(200);
      const [row] = await herald.db('erasures').insert({ organization_id: org.orgId, channels: ['email'], tokens: [erasedToken(key, address)] }).returning('id');
      const payload = { orgId: org.orgId, erasureId: row.id, addresses: [address] };
      await runErasure(herald.db, payload, { stopAfter });
      expect((await herald.db('erasures').where({ id: row.id }).first()).status).toBe('pending');
      await runErasure(herald.db, payload);
      await runErasure(herald.db, payload);
      expect((await herald.db('erasures').where({ id: row.id }).first()).status).toBe('done');
      expect(await whereWritten([address])).toEqual([]);
    }
    // The other recipient of those sends is untouched.
    expect((await api.get('/message-logs?recipient=keep.erase@example.com', as(org))).body).toHaveLength(4);
  });
});

describe('GraphQL', () => {
  test('eraseContact, eraseAddress, erasure and erasures', async () => {
    const c = (await api.post('/contacts', { name: 'Via GraphQL', phone: '0712300155' }, as(org))).body;
    const erased = await api.gql('mutation ($id: ID!) { eraseContact(id: $id) { _id contactId channels status steps } }', { id: c._id }, as(org));
    expect(erased.body.errors).toBeUndefined();
    expect(erased.body.data.eraseContact).toMatchObject({ contactId: c._id, channels: ['phone'], status: 'pending', steps: ERASURE_STEP_COUNT });
    await done(erased.body.data.eraseContact._id);
    const one = await api.gql('query ($id: ID!) { erasure(id: $id) { status stepsDone tokens } }', { id: erased.body.data.eraseContact._id }, as(org));
    expect(one.body.data.erasure).toMatchObject({ status: 'done', stepsDone: ERASURE_STEP_COUNT });
    const byAddress = await api.gql('mutation { eraseAddress(address: "gql.erase@example.com") { contactId channels } }', {}, as(org));
    expect(byAddress.body.data.eraseAddress).toEqual({ contactId: null, channels: ['email'] });
    const list = await api.gql('{ erasures { totalCount edges { node { _id status } } } }', {}, as(org));
    expect(list.body.data.erasures.totalCount).toBeGreaterThanOrEqual(4);
    const bad = await api.gql('mutation { eraseAddress(address: "nope") { _id } }', {}, as(org));
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST' });
  });
});
