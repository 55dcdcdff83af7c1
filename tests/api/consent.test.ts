import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { unsubscribeToken, type UnsubscribeRef } from '../../src/delivery/unsubscribe-tokens.js';
import type { Herald } from '../../src/server.js';
import { CONTACT_KEYS, expectError, expectValidation, makeContact, sorted } from '../helpers/contacts-groups.js';
import { heraldWithOrgs, ISO_MS, signupOrg, TEST_JWT_SECRET, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { expectStatementsStayWith, isCitus, type Statement, tenantStatementsOf } from '../helpers/statements.js';

/** platform.md, "Consent": contacts' subscriptions through both doors, and the public unsubscribe pages. */

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential, theirs: Credential;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { signup: { country: 'KE' } }));
  admin = { token: org.token };
  theirs = { token: other.token };
});
afterAll(() => herald?.stop());

const SUBSCRIBED = { status: 'subscribed', unsubscribedAt: null, source: null };
const ALL_SUBSCRIBED = { email: SUBSCRIBED, sms: SUBSCRIBED, whatsapp: SUBSCRIBED };
const left = (source: string) => ({ status: 'unsubscribed', unsubscribedAt: expect.stringMatching(ISO_MS), source });

const uniqueAddress = () => `consent.${randomBytes(5).toString('hex')}@example.com`;
const uniquePhone = () => `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;
const stored = async (id: string) => (await herald.db('contacts').where({ id }).first('unsubscribed', 'updated_at')) as { unsubscribed: Record<string, { at: string; source: string }>; updated_at: Date } | undefined;
const rowsOf = async (orgId: string) => JSON.parse(JSON.stringify(await herald.db('contacts').where({ organization_id: orgId }).orderBy('id')));
const ids = (res: Reply) => (res.body as { _id: string }[]).map((c) => c._id).sort();

/** A link's path, as Herald signs it (the test server's secret). */
const link = (ref: UnsubscribeRef, secret = TEST_JWT_SECRET) => `/u/${unsubscribeToken(secret, ref)}`;
const contactLink = (orgId: string, contactId: string, channel: UnsubscribeRef['channel'] = 'email') => link({ orgId, channel, contactId });

const page = (path: string, init: RequestInit = {}) => fetch(herald.url + path, { redirect: 'manual', ...init });
const form = (path: string, body: string, type = 'application/x-www-form-urlencoded') => page(path, { method: 'POST', headers: { 'content-type': type }, body });
const oneClick = (path: string) => form(path, 'List-Unsubscribe=One-Click');
const confirm = (path: string) => form(path, 'confirm=1');

/** A page Herald answered: HTML, never cached or indexed, without scripts or inline styles. */
async function expectPage(res: Response, status: number): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^text\/html; charset=utf-8/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-robots-tag')).toBe('noindex');
  const html = await res.text();
  expect(html).not.toMatch(/<script|\sstyle=|<style|\son\w+=/i);
  return html;
}

describe('subscriptions through the API', () => {
  test('REST: every contact shows all three channels, subscribed by default', async () => {
    const c = await makeContact(api, admin);
    expect(sorted(c)).toEqual(CONTACT_KEYS);
    expect(c.subscriptions).toEqual(ALL_SUBSCRIBED);
    expect((await api.get(`/contacts/${c._id}`, admin)).body.subscriptions).toEqual(ALL_SUBSCRIBED);
    const listed = (await api.get('/contacts?limit=1000', admin)).body as any[];
    for (const x of listed) expect(sorted(x.subscriptions)).toEqual(['email', 'sms', 'whatsapp']);
  });

  test('REST: set on create and update (source api); leaving again keeps the first time; subscribing removes the entry', async () => {
    const created = await api.post('/contacts', { name: 'Leaver', email: uniqueAddress(), phone: '0712345678', subscriptions: { email: 'unsubscribed' } }, admin);
    expect(created.status).toBe(201);
    expect(created.body.subscriptions).toEqual({ email: left('api'), sms: SUBSCRIBED, whatsapp: SUBSCRIBED });
    const id = created.body._id;
    const firstAt = created.body.subscriptions.email.unsubscribedAt;
    expect((await api.get(`/contacts/${id}`, admin)).body).toEqual(created.body);

    const updated = await api.put(`/contacts/${id}`, { subscriptions: { email: 'unsubscribed', sms: 'unsubscribed', whatsapp: 'subscribed' } }, admin);
    expect(updated.status).toBe(200);
    expect(updated.body.subscriptions).toEqual({ email: left('api'), sms: left('api'), whatsapp: SUBSCRIBED });
    expect(updated.body.subscriptions.email.unsubscribedAt).toBe(firstAt);
    expect(updated.body.updatedAt > created.body.updatedAt).toBe(true);

    const back = await api.put(`/contacts/${id}`, { name: 'Back', subscriptions: { email: 'subscribed' } }, admin);
    expect(back.body).toMatchObject({ name: 'Back', subscriptions: { email: SUBSCRIBED, sms: left('api'), whatsapp: SUBSCRIBED } });
    expect((await stored(id))!.unsubscribed).toEqual({ sms: { at: expect.stringMatching(ISO_MS), source: 'api' } });
  });

  test('REST: a bad value is a 400 naming its field, with the other failing fields; nothing stored', async () => {
    const c = await makeContact(api, admin);
    expectValidation(await api.put(`/contacts/${c._id}`, { subscriptions: { email: 'maybe' } }, admin), ['subscriptions.email']);
    expectValidation(await api.put(`/contacts/${c._id}`, { subscriptions: { fax: 'unsubscribed' } }, admin), ['subscriptions.fax']);
    expectValidation(await api.put(`/contacts/${c._id}`, { subscriptions: { sms: null } }, admin), ['subscriptions.sms']);
    expectValidation(await api.put(`/contacts/${c._id}`, { subscriptions: 'unsubscribed' }, admin), ['subscriptions']);
    const both = await api.post('/contacts', { name: 'Bad', email: 'not an email', subscriptions: { whatsapp: 'UNSUBSCRIBED' } }, admin);
    expectValidation(both, ['email', 'subscriptions.whatsapp']);
    expect(both.body.message).toContain('subscriptions.whatsapp must be one of subscribed, unsubscribed');
    expect((await stored(c._id))!.unsubscribed).toEqual({});
  });

  test('REST: a user-role caller can not change consent; another organization can not', async () => {
    const c = await makeContact(api, admin);
    const res = await api.put(`/contacts/${c._id}`, { subscriptions: { email: 'unsubscribed' } }, theirs);
    expectError(res, 403);
    expect((await stored(c._id))!.unsubscribed).toEqual({});
  });

  test('GraphQL: set on create and update, read back; a null channel is left as it is', async () => {
    const FIELDS = '_id subscriptions { email { status unsubscribedAt source } sms { status unsubscribedAt source } whatsapp { status unsubscribedAt source } }';
    const created = await api.gql(
      `mutation ($input: CreateContactInput!) { createContact(input: $input) { ${FIELDS} } }`,
      { input: { name: 'Graph Leaver', phone: uniquePhone(), subscriptions: { whatsapp: 'unsubscribed' } } },
      admin,
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createContact._id;
    expect(created.body.data.createContact.subscriptions).toEqual({ email: SUBSCRIBED, sms: SUBSCRIBED, whatsapp: left('api') });

    const updated = await api.gql(
      `mutation ($id: ID!) { updateContact(id: $id, input: { subscriptions: { sms: unsubscribed, whatsapp: null } }) { ${FIELDS} } }`,
      { id },
      admin,
    );
    expect(updated.body.errors).toBeUndefined();
    expect(updated.body.data.updateContact.subscriptions).toEqual({ email: SUBSCRIBED, sms: left('api'), whatsapp: left('api') });
    const rest = (await api.get(`/contacts/${id}`, admin)).body.subscriptions;
    expect(rest).toEqual(updated.body.data.updateContact.subscriptions);

    const bad = await api.gql(`mutation ($id: ID!, $input: UpdateContactInput!) { updateContact(id: $id, input: $input) { _id } }`, { id, input: { subscriptions: { sms: 'maybe' } } }, admin);
    expect(bad.status).toBe(400);
    expect(bad.body.errors![0]).toMatchObject({ message: expect.stringMatching(/"maybe".*SubscriptionStatus/), extensions: { statusCode: 400 } });
    expect((await api.get(`/contacts/${id}`, admin)).body.subscriptions).toEqual(rest);
  });
});

describe('the unsubscribed filter', () => {
  let ours: { email: string; sms: string; whatsapp: string; none: string };
  beforeAll(async () => {
    const make = async (subscriptions: Record<string, string>) => (await makeContact(api, admin, { phone: uniquePhone(), subscriptions }))._id as string;
    ours = {
      email: await make({ email: 'unsubscribed' }),
      sms: await make({ sms: 'unsubscribed' }),
      whatsapp: await make({ whatsapp: 'unsubscribed', email: 'subscribed' }),
      none: await make({}),
    };
    await makeContact(api, theirs, { subscriptions: { email: 'unsubscribed', sms: 'unsubscribed', whatsapp: 'unsubscribed' } });
  });

  test('REST: the contacts that left that channel, of the organization only', async () => {
    const mine = await signupOrg(api);
    const a = await makeContact(api, { token: mine.token }, { phone: uniquePhone(), subscriptions: { email: 'unsubscribed' } });
    const b = await makeContact(api, { token: mine.token }, { phone: uniquePhone(), subscriptions: { sms: 'unsubscribed', whatsapp: 'unsubscribed' } });
    await makeContact(api, { token: mine.token });
    expect(ids(await api.get('/contacts?unsubscribed=email', { token: mine.token }))).toEqual([a._id]);
    expect(ids(await api.get('/contacts?unsubscribed=sms', { token: mine.token }))).toEqual([b._id]);
    const whatsapp = await api.get('/contacts?unsubscribed=whatsapp', { token: mine.token });
    expect(ids(whatsapp)).toEqual([b._id]);
    expect(whatsapp.headers.get('x-total-count')).toBe('1');

    const email = ids(await api.get('/contacts?limit=1000&unsubscribed=email', admin));
    expect(email).toContain(ours.email);
    expect(email).not.toContain(ours.sms);
    expect(email).not.toContain(ours.whatsapp);
    expect(email).not.toContain(ours.none);
  });

  test('REST: combined with the other filters; a channel it does not know is a 400 naming it', async () => {
    const tagged = await makeContact(api, admin, { tags: ['consent-filter'], subscriptions: { email: 'unsubscribed' } });
    await makeContact(api, admin, { tags: ['consent-filter'] });
    expect(ids(await api.get('/contacts?tag=consent-filter&unsubscribed=email', admin))).toEqual([tagged._id]);
    expectValidation(await api.get('/contacts?unsubscribed=fax', admin), ['unsubscribed']);
    expectValidation(await api.get('/contacts?unsubscribed=', admin), ['unsubscribed']);
  });

  test('GraphQL: ContactFilter.unsubscribed', async () => {
    const res = await api.gql(`{ contacts(first: 1000, filter: { unsubscribed: sms }) { totalCount edges { node { _id subscriptions { sms { status source } } } } } }`, {}, admin);
    expect(res.body.errors).toBeUndefined();
    const nodes = res.body.data.contacts.edges.map((e: any) => e.node);
    expect(nodes.map((n: any) => n._id)).toContain(ours.sms);
    expect(nodes.map((n: any) => n._id)).not.toContain(ours.email);
    for (const n of nodes) expect(n.subscriptions.sms).toEqual({ status: 'unsubscribed', source: 'api' });
    const bad = await api.gql(`{ contacts(filter: { unsubscribed: fax }) { totalCount } }`, {}, admin);
    expect(bad.status).toBe(400);
  });

  test("answered from the organization's partial index of those who left, not by walking every contact", async () => {
    const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
    await explain.connect();
    try {
      if (await isCitus(explain)) return; // there the plans are the workers'; the index is the same
      const many = await signupOrg(api);
      await herald.db.raw(
        `INSERT INTO contacts (organization_id, name, email, unsubscribed)
         SELECT ?, 'Many ' || i, 'many' || i || '@example.com',
                CASE WHEN i % 2000 = 0 THEN '{"email": {"at": "2026-01-01T00:00:00.000Z", "source": "api"}}'::jsonb ELSE '{}' END
         FROM generate_series(1, 20000) i`,
        [many.orgId],
      );
      // As autovacuum would leave it: statistics and the visibility map current.
      await herald.db.raw('VACUUM ANALYZE contacts');
      const { result, statements } = await tenantStatementsOf(herald.db, () => api.get('/contacts?unsubscribed=email&limit=5', { token: many.token }));
      expect(result.status).toBe(200);
      expect(result.body).toHaveLength(5);
      expect(result.headers.get('x-total-count')).toBe('10');
      const filtered = statements.filter((s) => s.sql.includes('unsubscribed ->'));
      expect(filtered).toHaveLength(2); // the page and its count
      // One organization's table is small for a planner: a sequential scan would still be cheaper.
      await explain.query('SET enable_seqscan = off');
      for (const s of filtered) {
        const { rows } = await explain.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${s.sql}`, s.bindings);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        expect(plan).toContain('contacts_org_email_unsubscribed_idx');
        expect(plan).not.toContain('contacts_org_created_idx');
      }
    } finally {
      await explain.end();
    }
  });
});

describe('GET /u/:token', () => {
  test("shows the organization's name and the channel with an Unsubscribe button, and changes nothing", async () => {
    const c = await makeContact(api, admin);
    const before = await stored(c._id);
    for (let i = 0; i < 3; i++) {
      const html = await expectPage(await page(contactLink(org.orgId, c._id)), 200);
      expect(html).toMatch(/Unsubscribe from Acme [0-9a-f]{8}&#39;s email messages\?/);
      expect(html).toMatch(/<form method="post">[\s\S]*<input type="hidden" name="confirm" value="1">[\s\S]*<button type="submit">Unsubscribe<\/button>[\s\S]*<\/form>/);
    }
    expect(await page(contactLink(org.orgId, c._id), { method: 'HEAD' }).then((r) => r.status)).toBe(200);
    expect(await stored(c._id)).toEqual(before);
    expect((await api.get(`/contacts/${c._id}`, admin)).body.subscriptions).toEqual(ALL_SUBSCRIBED);
  });

  test('names each channel; an already unsubscribed recipient is told so, without a form', async () => {
    const c = await makeContact(api, admin, { phone: uniquePhone(), subscriptions: { sms: 'unsubscribed' } });
    const sms = await expectPage(await page(contactLink(org.orgId, c._id, 'sms')), 200);
    expect(sms).toContain('already unsubscribed');
    expect(sms).toContain('SMS messages');
    expect(sms).not.toContain('<form');
    const whatsapp = await expectPage(await page(contactLink(org.orgId, c._id, 'whatsapp')), 200);
    expect(whatsapp).toContain('WhatsApp messages?');
    expect(whatsapp).toContain('<form method="post">');
  });

  test("escapes what it prints: the organization's name", async () => {
    const odd = await signupOrg(api, { companyName: `<b>Tom & "Jerry"</b> ${randomBytes(3).toString('hex')}` });
    const c = await makeContact(api, { token: odd.token });
    const html = await expectPage(await page(contactLink(odd.orgId, c._id)), 200);
    expect(html).toContain('&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;/b&gt;');
    expect(html).not.toContain('<b>Tom');
  });
});

describe('POST /u/:token', () => {
  test('the form unsubscribes (source link) and confirms; the page then says so', async () => {
    const c = await makeContact(api, admin);
    const before = await stored(c._id);
    const html = await expectPage(await confirm(contactLink(org.orgId, c._id)), 200);
    expect(html).toContain('You are unsubscribed from');
    expect(html).toContain('email messages');
    const after = await stored(c._id);
    expect(after!.unsubscribed).toEqual({ email: { at: expect.stringMatching(ISO_MS), source: 'link' } });
    expect(after!.updated_at.getTime()).toBeGreaterThan(before!.updated_at.getTime());
    expect((await api.get(`/contacts/${c._id}`, admin)).body.subscriptions).toEqual({ email: left('link'), sms: SUBSCRIBED, whatsapp: SUBSCRIBED });
    expect(await expectPage(await page(contactLink(org.orgId, c._id)), 200)).toContain('already unsubscribed');
  });

  test('RFC 8058 one-click unsubscribes (source one-click); repeating it, or the form after it, keeps the first time and source', async () => {
    const c = await makeContact(api, admin);
    const path = contactLink(org.orgId, c._id);
    const res = await oneClick(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const first = (await stored(c._id))!;
    expect(first.unsubscribed).toEqual({ email: { at: expect.stringMatching(ISO_MS), source: 'one-click' } });
    await new Promise((r) => setTimeout(r, 5));
    expect((await oneClick(path)).status).toBe(200);
    expect((await confirm(path)).status).toBe(200);
    expect(await stored(c._id)).toEqual(first);
  });

  test('one-click as multipart/form-data, as RFC 8058 prefers', async () => {
    const c = await makeContact(api, admin, { phone: uniquePhone() });
    const body = new FormData();
    body.set('List-Unsubscribe', 'One-Click');
    const res = await page(contactLink(org.orgId, c._id, 'whatsapp'), { method: 'POST', body });
    expect(res.status).toBe(200);
    expect((await stored(c._id))!.unsubscribed).toEqual({ whatsapp: { at: expect.stringMatching(ISO_MS), source: 'one-click' } });
  });

  test('a body neither the form nor one-click sends: 400; not a form: 415; over 1 KiB: 413; nothing changes', async () => {
    const c = await makeContact(api, admin);
    const path = contactLink(org.orgId, c._id);
    const reply = async (res: Response): Promise<Reply> => ({ status: res.status, headers: res.headers, body: await res.json() });
    expectError(await reply(await form(path, 'List-Unsubscribe=Two-Clicks')), 400);
    expectError(await reply(await page(path, { method: 'POST' })), 400);
    expectError(await reply(await form(path, '{"confirm":"1"}', 'application/json')), 415, 'Content-Type must be application/x-www-form-urlencoded or multipart/form-data');
    expectError(await reply(await form(path, `confirm=1&pad=${'x'.repeat(1100)}`)), 413);
    expectError(await reply(await page(path, { method: 'PUT' })), 405);
    expect((await stored(c._id))!.unsubscribed).toEqual({});
  });

  test('a contact deleted since: 200, nothing to change and nothing created', async () => {
    const c = await makeContact(api, admin);
    await api.delete(`/contacts/${c._id}`, admin);
    const before = await rowsOf(org.orgId);
    expect((await oneClick(contactLink(org.orgId, c._id))).status).toBe(200);
    await expectPage(await confirm(contactLink(org.orgId, c._id)), 200);
    expect(await rowsOf(org.orgId)).toEqual(before);
  });
});

describe('address links', () => {
  test('an address no contact has: a contact holding it is created, unsubscribed, once', async () => {
    const address = uniqueAddress();
    const path = link({ orgId: org.orgId, channel: 'email', address: address.toUpperCase() });
    expect(await expectPage(await page(path), 200)).toContain('Unsubscribe from');
    expect(await herald.db('contacts').where({ organization_id: org.orgId, email: address })).toEqual([]);

    await Promise.all([oneClick(path), oneClick(path), confirm(path)]);
    const rows = await herald.db('contacts').where({ organization_id: org.orgId, email: address });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: address, email: address, phone: null });
    expect(Object.keys(rows[0].unsubscribed)).toEqual(['email']);
    expect(await expectPage(await page(path), 200)).toContain('already unsubscribed');
    expect(ids(await api.get('/contacts?limit=1000&unsubscribed=email', admin))).toContain(rows[0].id);
  });

  test("a phone's link unsubscribes every contact with that number, from that channel only", async () => {
    const phone = uniquePhone();
    const a = await makeContact(api, admin, { phone });
    const b = await makeContact(api, admin, { phone, subscriptions: { whatsapp: 'unsubscribed' } });
    const bBefore = (await stored(b._id))!.unsubscribed.whatsapp;
    const elsewhere = await makeContact(api, theirs, { phone });
    await expectPage(await confirm(link({ orgId: org.orgId, channel: 'whatsapp', address: phone })), 200);
    expect((await stored(a._id))!.unsubscribed).toEqual({ whatsapp: { at: expect.stringMatching(ISO_MS), source: 'link' } });
    expect((await stored(b._id))!.unsubscribed).toEqual({ whatsapp: bBefore });
    expect((await stored(elsewhere._id))!.unsubscribed).toEqual({});
    expect(await herald.db('contacts').where({ organization_id: org.orgId, phone })).toHaveLength(2);
  });
});

describe('links Herald did not sign', () => {
  test('forged, altered (one character) or signed with another secret: 404 "This link is not valid", nothing changes', async () => {
    const c = await makeContact(api, admin);
    const token = unsubscribeToken(TEST_JWT_SECRET, { orgId: org.orgId, channel: 'email', contactId: c._id });
    const middle = Math.floor(token.length / 2);
    const bad = [
      `/u/${randomBytes(40).toString('base64url')}`,
      `/u/${token.slice(0, middle)}${token[middle] === 'A' ? 'B' : 'A'}${token.slice(middle + 1)}`,
      link({ orgId: org.orgId, channel: 'email', contactId: c._id }, 'another secret of a different Herald altogether'),
      `/u/${token.slice(0, -4)}`,
      `/u/${token}!`,
      `/u/${'A'.repeat(2000)}`,
      link({ orgId: org.orgId, channel: 'email', address: uniqueAddress() }, 'another secret of a different Herald altogether'),
    ];
    const before = await rowsOf(org.orgId);
    for (const path of bad) {
      expect(await expectPage(await page(path), 404)).toContain('This link is not valid');
      expect(await expectPage(await oneClick(path), 404)).toContain('This link is not valid');
      expect((await confirm(path)).status).toBe(404);
    }
    expect(await rowsOf(org.orgId)).toEqual(before);
  });

  test('the token is judged before the body is read: a bad one with an oversized or odd body is still a 404', async () => {
    const path = `/u/${randomBytes(40).toString('base64url')}`;
    expect((await form(path, 'x'.repeat(20_000))).status).toBe(404);
    expect((await form(path, '{', 'application/json')).status).toBe(404);
  });

  test("an organization that no longer exists: 404", async () => {
    const path = link({ orgId: '00000000-0000-4000-8000-000000000000', channel: 'email', address: uniqueAddress() });
    await expectPage(await page(path), 404);
    await expectPage(await oneClick(path), 404);
  });
});

test("tenant isolation: a token of organization A naming B's contact changes nothing in B", async () => {
  const theirContact = await makeContact(api, theirs, { phone: uniquePhone() });
  const theirsBefore = await rowsOf(other.orgId);
  const oursBefore = await rowsOf(org.orgId);
  for (const channel of ['email', 'sms', 'whatsapp'] as const) {
    const path = contactLink(org.orgId, theirContact._id, channel);
    const html = await expectPage(await page(path), 200);
    expect(html).not.toContain('already');
    expect((await oneClick(path)).status).toBe(200);
    await expectPage(await confirm(path), 200);
  }
  expect(await rowsOf(other.orgId)).toEqual(theirsBefore);
  expect(await rowsOf(org.orgId)).toEqual(oursBefore);
});

test('every consent statement stays with the organization (one shard on Citus; filtered by it on Postgres)', async () => {
  const c = await makeContact(api, admin, { phone: uniquePhone() });
  const recorded: Statement[] = [];
  const record = async <T>(request: () => Promise<T>) => {
    const { result, statements } = await tenantStatementsOf(herald.db, request);
    recorded.push(...statements);
    return result;
  };
  await record(() => api.put(`/contacts/${c._id}`, { subscriptions: { email: 'unsubscribed', sms: 'unsubscribed' } }, admin));
  await record(() => api.put(`/contacts/${c._id}`, { subscriptions: { sms: 'subscribed' } }, admin));
  await record(() => api.get('/contacts?unsubscribed=sms&limit=1', admin));
  await record(() => page(contactLink(org.orgId, c._id, 'whatsapp')));
  await record(() => oneClick(contactLink(org.orgId, c._id, 'whatsapp')));
  const address = link({ orgId: org.orgId, channel: 'email', address: uniqueAddress() });
  await record(() => page(address));
  await record(() => confirm(address));
  await record(() => confirm(address));
  expect(recorded.length).toBeGreaterThan(8);

  // Citus evaluates a stable function on the coordinator (now()), but not one of the row's columns.
  for (const s of recorded) expect(s.sql).not.toMatch(/jsonb_build_object|to_jsonb|jsonb_set/);
  await expectStatementsStayWith(recorded, org.orgId);
});

test('random bodies, content types and tokens on /u/ never give a 5xx', async () => {
  const c = await makeContact(api, admin);
  const valid = contactLink(org.orgId, c._id).slice(3);
  const token = fc.oneof(fc.constant(valid), fc.string({ maxLength: 60 }).map(encodeURIComponent), fc.base64String({ maxLength: 80 }).map((s) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=/g, '')));
  const type = fc.constantFrom('application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'multipart/form-data', 'text/plain', 'application/json', '');
  const body = fc.oneof(fc.string({ maxLength: 300 }), fc.constantFrom('List-Unsubscribe=One-Click', 'confirm=1', '--x\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--x--\r\n', '%zz', ''));
  await fc.assert(
    fc.asyncProperty(token, type, body, fc.constantFrom('GET', 'POST'), async (t, contentType, payload, method) => {
      const res = await page(`/u/${t}`, method === 'GET' ? {} : { method, headers: contentType ? { 'content-type': contentType } : {}, body: payload });
      await res.arrayBuffer();
      return res.status < 500;
    }),
    { numRuns: 150, seed: 20261126 },
  );
});

describe('the consent history', () => {
  test('every change of every channel, with its source and time, newest first, in the person’s data; repeats add nothing', async () => {
    const c = await makeContact(api, admin, { phone: uniquePhone(), subscriptions: { sms: 'unsubscribed' } });
    expect((await oneClick(contactLink(org.orgId, c._id))).status).toBe(200);
    expect((await oneClick(contactLink(org.orgId, c._id))).status).toBe(200);
    expect((await api.put(`/contacts/${c._id}`, { subscriptions: { sms: 'subscribed', email: 'subscribed' } }, admin)).status).toBe(200);
    expect((await api.put(`/contacts/${c._id}`, { subscriptions: { sms: 'subscribed' } }, admin)).status).toBe(200);
    expect((await api.post('/contacts/bulk', { action: 'unsubscribe', ids: [c._id], channels: ['whatsapp'] }, admin)).status).toBe(200);
    const history = (await api.get(`/contacts/${c._id}/data`, admin)).body.contacts[0].consentHistory as { channel: string; status: string; source: string; at: string }[];
    const at = expect.stringMatching(ISO_MS);
    expect(history.map(({ channel, status, source }) => `${channel} ${status} ${source}`).sort()).toEqual(
      ['sms unsubscribed api', 'email unsubscribed one-click', 'sms subscribed api', 'email subscribed api', 'whatsapp unsubscribed api'].sort(),
    );
    expect(history.every((h) => ISO_MS.test(h.at))).toBe(true);
    expect(history[0]).toEqual({ channel: 'whatsapp', status: 'unsubscribed', source: 'api', at });
    expect(history.at(-1)).toEqual({ channel: 'sms', status: 'unsubscribed', source: 'api', at });
    expect([...history].sort((a, b) => b.at.localeCompare(a.at)).map((h) => h.at)).toEqual(history.map((h) => h.at));
    // Another organization's admin asks for the same contact: 403, and its history is its own.
    expect((await api.get(`/contacts/${c._id}/data`, theirs)).status).toBe(403);
  });

  test('an address unsubscribed by its link before any contact had it starts a contact whose history says so', async () => {
    const address = uniqueAddress();
    expect((await oneClick(link({ orgId: org.orgId, channel: 'email', address }))).status).toBe(200);
    const doc = (await api.get(`/contacts/data?address=${encodeURIComponent(address)}`, admin)).body;
    expect(doc.contacts.map((x: any) => x.consentHistory)).toEqual([[{ channel: 'email', status: 'unsubscribed', source: 'one-click', at: expect.stringMatching(ISO_MS) }]]);
  });
});
