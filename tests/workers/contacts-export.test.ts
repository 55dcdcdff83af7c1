import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import express from 'express';
import type { Knex } from 'knex';
import pg from 'pg';
import { copyOut } from '../../src/db/copy-out.js';
import { createDb, poolUse } from '../../src/db/database.js';
import { redactUrl } from '../../src/http/app.js';
import { errorHandler } from '../../src/http/errors.js';
import { restRouter } from '../../src/http/rest.js';
import { exportToken } from '../../src/modules/contacts/export-links.js';
import type { Herald } from '../../src/server.js';
import { makeContact, makeGroup } from '../helpers/contacts-groups.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { addUser, createApiKey, heraldWithOrgs, signupOrg, TEST_JWT_SECRET, waitFor, type Client, type Credential, type Org, type Reply } from '../helpers/herald.js';
import { expectStatementsStayWith, isCitus, tenantStatementsOf } from '../helpers/statements.js';
import { expectQuiet, sleep } from '../helpers/time.js';

/**
 * platform.md, "Contacts in bulk": `GET /contacts/export` streams the filtered contacts as CSV, in
 * the vocabulary the import reads (src/modules/contacts/csv-columns.ts), and GraphQL's
 * `contactExport` answers a short-lived signed link to the same download.
 */

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true, signup: { country: 'KE' } }));
  admin = { token: org.token };
});
afterAll(() => herald?.stop());

const FIXED = ['id', 'name', 'email', 'phone', 'countryCode', 'organization', 'tags', 'timezone', 'groups', 'subscriptions.email', 'subscriptions.sms', 'subscriptions.whatsapp'];
const TIMES = ['createdAt', 'updatedAt'];

type Row = Record<string, string>;
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** The CSV of a reply, as records keyed by the header (and the header itself). */
function csvOf(res: Reply): { header: string[]; rows: Row[] } {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
  const records = parse(res.body as string, { relax_column_count: false }) as string[][];
  const [header, ...rest] = records;
  return { header: header!, rows: rest.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!]))) };
}

const exportOf = async (query: string, cred: Credential = admin) => csvOf(await api.get(`/contacts/export${query}`, cred));

/** A fresh organization with contacts of its own, for tests that read a whole export. */
async function freshOrg() {
  const o = await signupOrg(api, { country: 'KE' });
  return { org: o, cred: { token: o.token } as Credential };
}

describe('GET /contacts/export', () => {
  test('one row per contact with its fields, groups by name, consent and one column per attribute key; an attachment named by the day', async () => {
    const { org: o, cred } = await freshOrg();
    const vip = await makeGroup(api, cred, { name: 'VIP' });
    const leads = await makeGroup(api, cred, { name: 'Leads' });
    const ada = await makeContact(api, cred, {
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '0712345678',
      countryCode: 'KE',
      organization: 'Analytical Engines',
      tags: ['vip', 'math'],
      groups: [vip._id, leads._id],
      attributes: { plan: 'pro', seats: 3, trial: false, ratio: 1.5 },
      subscriptions: { sms: 'unsubscribed' },
    });
    const bob = await makeContact(api, cred, { name: 'Bob', email: null, phone: '+254700000001', attributes: { zone: 'B' } });

    const res = await api.get('/contacts/export', cred);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="contacts-${new Date().toISOString().slice(0, 10)}.csv"`);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const { header, rows } = csvOf(res);
    expect(header).toEqual([...FIXED, 'attributes.plan', 'attributes.ratio', 'attributes.seats', 'attributes.trial', 'attributes.zone', ...TIMES]);
    // Newest first, as the list.
    expect(rows.map((r) => r.id)).toEqual([bob._id, ada._id]);
    expect(rows[1]).toEqual({
      id: ada._id,
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+254712345678',
      countryCode: 'KE',
      organization: 'Analytical Engines',
      tags: 'vip|math',
      // Ada's zone is her phone's, not her own: the export leaves it out.
      timezone: '',
      groups: 'Leads|VIP',
      'subscriptions.email': 'subscribed',
      'subscriptions.sms': 'unsubscribed',
      'subscriptions.whatsapp': 'subscribed',
      'attributes.plan': 'pro',
      'attributes.ratio': '1.5',
      'attributes.seats': '3',
      'attributes.trial': 'false',
      'attributes.zone': '',
      createdAt: ada.createdAt,
      updatedAt: ada.updatedAt,
    });
    expect(rows[0]).toMatchObject({ name: 'Bob', email: '', phone: '+254700000001', tags: '', groups: '', 'attributes.plan': '', 'attributes.zone': 'B' });
  });

  test('the list filters narrow the rows, and the attribute columns are those of the rows exported', async () => {
    const { cred } = await freshOrg();
    const vip = await makeGroup(api, cred, { name: 'VIP' });
    const a = await makeContact(api, cred, { name: 'Alpha One', tags: ['gold'], groups: [vip._id], attributes: { plan: 'pro' } });
    const b = await makeContact(api, cred, { name: 'Beta Two', tags: ['gold'], attributes: { plan: 'basic', extra: 'x' } });
    const c = await makeContact(api, cred, { name: 'Gamma Three', attributes: { seats: 30 }, subscriptions: { email: 'unsubscribed' } });
    const ids = async (query: string) => (await exportOf(query, cred)).rows.map((r) => r.id).sort();

    expect(await ids(`?group=${vip._id}`)).toEqual([a._id]);
    expect(await ids('?tag=gold')).toEqual([a._id, b._id].sort());
    expect(await ids('?search=beta')).toEqual([b._id]);
    expect(await ids('?attributes.plan=pro')).toEqual([a._id]);
    expect(await ids('?attributes.seats=30')).toEqual([c._id]);
    expect(await ids('?unsubscribed=email')).toEqual([c._id]);
    expect(await ids('?tag=gold&search=alpha')).toEqual([a._id]);
    expect((await exportOf(`?group=${vip._id}`, cred)).header).toEqual([...FIXED, 'attributes.plan', ...TIMES]);
    expect((await exportOf('?unsubscribed=email', cred)).header).toEqual([...FIXED, 'attributes.seats', ...TIMES]);
    // Nothing matches: the header alone.
    const none = await api.get('/contacts/export?tag=nobody', cred);
    expect(none.body).toBe(`${[...FIXED, ...TIMES].join(',')}\n`);
  });

  test('commas, quotes, line breaks and non-ASCII text are quoted and read back exactly by csv-parse', async () => {
    const { cred } = await freshOrg();
    const tricky = {
      name: 'Smith, "Jo"\nthe second',
      email: 'jo@example.com',
      organization: 'A "quoted", company\r\nwith lines',
      tags: ['a,b', 'say "hi"'],
      attributes: { note: 'first line\nsecond, line', emoji: 'Zoë 🎉', quote: '"' },
    };
    const c = await makeContact(api, cred, tricky);
    const group = await makeGroup(api, cred, { name: 'Group, "one"' });
    await api.put(`/contacts/${c._id}`, { groups: [group._id] }, cred);
    const { rows } = await exportOf('', cred);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      name: tricky.name,
      organization: tricky.organization,
      tags: 'a,b|say "hi"',
      groups: 'Group, "one"',
      'attributes.note': tricky.attributes.note,
      'attributes.emoji': tricky.attributes.emoji,
      'attributes.quote': '"',
    });
  });

  test("a row's exact bytes: an empty text and a missing one are both an empty cell, never a quoted one", async () => {
    const { org: o, cred } = await freshOrg();
    const group = await makeGroup(api, cred, { name: 'Émigrés, "old"' });
    // Written as they are stored, empty texts and nulls side by side (the API would not store an empty company).
    const created = '2026-02-03 04:05:06.789+00';
    const {
      rows: [row],
    } = (await herald.db.raw(
      `INSERT INTO contacts (organization_id, name, email, phone, country_code, company, tags, attributes, unsubscribed, created_at, updated_at)
       VALUES (?, 'Ann', '', '+254700000009', NULL, '', '{}', ?::jsonb, ?::jsonb, ?, '2026-02-03 04:05:06.7896+00')
       RETURNING id`,
      [o.orgId, JSON.stringify({ plan: '', seats: 3, note: 'a \\ b' }), JSON.stringify({ sms: { at: created, source: 'api' } }), created],
    )) as { rows: { id: string }[] };
    await herald.db.raw('INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at) VALUES (?, ?, ?, ?)', [o.orgId, row!.id, group._id, created]);
    const res = await api.get('/contacts/export', cred);
    expect(res.status).toBe(200);
    expect(res.body).toBe(
      `${[...FIXED, 'attributes.note', 'attributes.plan', 'attributes.seats', ...TIMES].join(',')}\n` +
        `${row!.id},Ann,,+254700000009,,,,,"Émigrés, ""old""",subscribed,unsubscribed,subscribed,a \\ b,,3,2026-02-03T04:05:06.789Z,2026-02-03T04:05:06.790Z\n`,
    );
  });

  test('filter values with quotes, backslashes and % are matched as written', async () => {
    const { cred } = await freshOrg();
    const tricky = "O'Brien \\ 100%_x";
    const hit = await makeContact(api, cred, { name: `Pat ${tricky}`, email: 'pat@example.com', tags: ["it's \\ 50%"], attributes: { note: `say "hi" \\ it's 10%` } });
    // Each differs from what a pattern would match were the filter's quote, backslash, % or _ read as SQL.
    await makeContact(api, cred, { name: "Pat O'Brien \\ 1000x", email: 'p1@example.com', tags: ["it's \\ 50x"], attributes: { note: 'say "hi" \\ it\'s 10x' } });
    await makeContact(api, cred, { name: "Pat O'Brien  100%_x", email: 'p2@example.com', tags: ["it's  50%"], attributes: { note: `say "hi"  it's 10%` } });
    await makeContact(api, cred, { name: "Pat O'Brien \\ 100%yx", email: 'p3@example.com', tags: ['its \\ 50%'] });
    const ids = async (query: string) => (await exportOf(query, cred)).rows.map((r) => r.id);
    expect(await ids(`?search=${encodeURIComponent(tricky)}`)).toEqual([hit._id]);
    expect(await ids(`?tag=${encodeURIComponent("it's \\ 50%")}`)).toEqual([hit._id]);
    expect(await ids(`?attributes.note=${encodeURIComponent(`say "hi" \\ it's 10%`)}`)).toEqual([hit._id]);
    expect(await ids(`?search=${encodeURIComponent("'")}&tag=${encodeURIComponent("it's \\ 50%")}`)).toEqual([hit._id]);
  });

  test('the export parsed back matches the contacts the list answers, field for field', async () => {
    const { cred } = await freshOrg();
    const group = await makeGroup(api, cred, { name: 'Readers' });
    for (let i = 0; i < 30; i++) {
      await makeContact(api, cred, {
        name: `Reader ${i}`,
        email: i % 3 ? `reader${i}@example.com` : undefined,
        phone: i % 3 ? undefined : `+2547000001${String(i).padStart(2, '0')}`,
        tags: i % 2 ? ['odd'] : [],
        groups: i % 5 ? [] : [group._id],
        attributes: i % 4 ? { n: i, even: i % 2 === 0 } : {},
        subscriptions: i % 7 ? {} : { whatsapp: 'unsubscribed' },
      });
    }
    const listed = (await api.get('/contacts?limit=1000', cred)).body as any[];
    const { rows } = await exportOf('', cred);
    expect(rows.map((r) => r.id)).toEqual(listed.map((c) => c._id));
    const text = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));
    for (const [i, c] of listed.entries()) {
      const r = rows[i]!;
      expect(r).toEqual({
        id: c._id,
        name: c.name,
        email: text(c.email),
        phone: text(c.phone),
        countryCode: text(c.countryCode),
        organization: text(c.organization),
        tags: c.tags.join('|'),
        timezone: '',
        groups: c.groups.length ? 'Readers' : '',
        'subscriptions.email': c.subscriptions.email.status,
        'subscriptions.sms': c.subscriptions.sms.status,
        'subscriptions.whatsapp': c.subscriptions.whatsapp.status,
        'attributes.even': text(c.attributes.even),
        'attributes.n': text(c.attributes.n),
        createdAt: c.createdAt,
        updatedAt: c.updatedAt,
      });
    }
  });

  test('any role reads it, with a token, an API key in the header or the query (the key never in the file name)', async () => {
    await makeContact(api, admin, { name: 'Visible' });
    const user = await addUser(api, org, 'user');
    const key = await createApiKey(api, org, 'user');
    for (const cred of [{ token: user.token }, { apiKey: key.key }, { queryKey: key.key }] as Credential[]) {
      const { rows } = await exportOf('', cred);
      expect(rows.some((r) => r.name === 'Visible')).toBe(true);
    }
  });

  test('refusals come before the first byte, as the documented JSON errors', async () => {
    expectError(await api.get('/contacts/export'), 401);
    expectError(await api.get('/contacts/export', { token: 'nope' }), 401, 'Invalid token');
    expectValidation(await api.get('/contacts/export?group=not-a-uuid', admin), ['group']);
    expectValidation(await api.get('/contacts/export?unsubscribed=fax', admin), ['unsubscribed']);
    expectValidation(await api.get('/contacts/export?attributes.bad-key=1', admin), ['attributes']);
    expectValidation(await api.get('/contacts/export?limit=10', admin), ['limit']);
    expectValidation(await api.get('/contacts/export?colour=red', admin), ['colour']);
  });

  test('an organization exports only its own contacts', async () => {
    const mine = await makeContact(api, admin, { name: 'Mine', tags: ['shared-tag'] });
    const theirs = await makeContact(api, { token: other.token }, { name: 'Theirs', tags: ['shared-tag'] });
    const ours = (await exportOf('?tag=shared-tag')).rows.map((r) => r.id);
    const others = (await exportOf('?tag=shared-tag', { token: other.token })).rows.map((r) => r.id);
    expect(ours).toEqual([mine._id]);
    expect(others).toEqual([theirs._id]);
    // A group of another organization names nothing of this one.
    const theirGroup = await makeGroup(api, { token: other.token });
    expect((await exportOf(`?group=${theirGroup._id}`)).rows).toEqual([]);
  });

  test('every statement of an export stays with the organization', async () => {
    const group = await makeGroup(api, admin);
    await makeContact(api, admin, { groups: [group._id], attributes: { plan: 'x' } });
    const { result, statements } = await tenantStatementsOf(herald.db, () => api.get(`/contacts/export?group=${group._id}&attributes.plan=x&unsubscribed=sms&tag=t&search=a`, admin));
    expect(result.status).toBe(200);
    expect(statements.length).toBeGreaterThanOrEqual(2);
    await expectStatementsStayWith(statements, org.orgId);
  });

  test("a page's groups are read beside it in the list's order, not looked up contact by contact", async () => {
    const { org: o, cred } = await freshOrg();
    const groups = await Promise.all(['North', 'South', 'VIP'].map((name) => makeGroup(api, cred, { name })));
    await herald.db.raw(
      `INSERT INTO contacts (organization_id, name, email, created_at)
       SELECT ?, 'Planned ' || i, 'planned' || i || '@example.com', timestamptz '2026-01-01' + i * interval '1 ms' FROM generate_series(1, 12000) AS i`,
      [o.orgId],
    );
    await herald.db.raw(
      `INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
       SELECT c.organization_id, c.id, g.id, c.created_at FROM contacts c JOIN unnest(?::uuid[]) WITH ORDINALITY AS g(id, n) ON g.n = 1 + abs(hashtext(c.id::text)) % 3
       WHERE c.organization_id = ?`,
      [groups.map((g) => g._id), o.orgId],
    );
    await herald.db.raw('VACUUM ANALYZE contacts, contact_groups');
    const { result, statements } = await tenantStatementsOf(herald.db, () => api.get('/contacts/export', cred));
    expect(csvOf(result).rows).toHaveLength(12_000);
    // The first page and those after it (they start after the previous page's last contact).
    const pages = statements.filter((s) => s.sql.includes('array_to_string'));
    expect(pages).toHaveLength(3);
    const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
    await explain.connect();
    try {
      if (await isCitus(explain)) return; // the shard's plan is the worker's; plain Postgres shows the same statement's
      for (const page of pages.slice(0, 2)) {
        const { rows } = await explain.query(`EXPLAIN (FORMAT JSON) ${page.sql}`, page.bindings);
        const reads: { index?: string; perContact: boolean }[] = [];
        const walk = (node: PlanNode, perContact: boolean) => {
          if (node['Relation Name'] === 'contact_groups') reads.push({ index: node['Index Name'], perContact });
          // Under a subplan, or the inner side of a nested loop, a scan runs once per outer row.
          node.Plans?.forEach((child, i) => walk(child, perContact || child['Parent Relationship'] === 'SubPlan' || (node['Node Type'] === 'Nested Loop' && i === 1)));
        };
        walk(rows[0]['QUERY PLAN'][0].Plan, false);
        expect(reads).toEqual([{ index: 'contact_groups_list_order_idx', perContact: false }]);
      }
    } finally {
      await explain.end();
    }
  });

  test('20,000 contacts stream out in pages: every one once, newest first, the response chunked', async () => {
    const { org: o, cred } = await freshOrg();
    const groups = await Promise.all(['North', 'South'].map((name) => makeGroup(api, cred, { name })));
    await herald.db.raw(
      `INSERT INTO contacts (organization_id, name, email, tags, attributes, created_at)
       SELECT ?, 'Bulk ' || i, 'bulk' || i || '@example.com', ARRAY['t' || (i % 3)], jsonb_build_object('n', i, 'plan', 'p' || (i % 2)),
              timestamptz '2026-01-01' + (i % 5000) * interval '1 second'
       FROM generate_series(1, 20000) AS i`,
      [o.orgId],
    );
    await herald.db.raw(
      `INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
       SELECT organization_id, id, ?, created_at FROM contacts WHERE organization_id = ? AND name LIKE 'Bulk %'`,
      [groups[0]._id, o.orgId],
    );
    const res = await fetch(`${herald.url}/contacts/export`, { headers: { authorization: `Bearer ${o.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    let chunks = 0;
    let text = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      chunks++;
      text += Buffer.from(chunk).toString('utf8');
    }
    expect(chunks).toBeGreaterThan(3);
    const records = parse(text) as string[][];
    const [header, ...rows] = records;
    expect(header).toEqual([...FIXED, 'attributes.n', 'attributes.plan', ...TIMES]);
    expect(rows).toHaveLength(20_000);
    expect(new Set(rows.map((r) => r[0])).size).toBe(20_000);
    expect(rows.every((r) => r[header!.indexOf('groups')] === 'North')).toBe(true);
    // Newest first across page boundaries, ties (many share a second) broken by id.
    const keys = rows.map((r) => `${r[header!.indexOf('createdAt')]}|${r[0]}`);
    expect(keys).toEqual([...keys].sort().reverse());
  });

  test('a client that goes away mid-download stops the export (no page is read after); the server goes on answering', async () => {
    const { org: o, cred } = await freshOrg();
    await herald.db.raw(`INSERT INTO contacts (organization_id, name, email) SELECT ?, 'Gone ' || i, 'gone' || i || '@example.com' FROM generate_series(1, 40000) AS i`, [o.orgId]);
    const pages: string[] = [];
    const listener = (q: { sql: string }) => {
      if (q.sql.includes('array_to_string')) pages.push(q.sql);
    };
    herald.db.on('query', listener);
    try {
      const controller = new AbortController();
      const res = await fetch(`${herald.url}/contacts/export`, { headers: { authorization: `Bearer ${o.token}` }, signal: controller.signal });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      await expect(reader.read()).rejects.toThrow();
      // The pages already asked for when the client went start within this while; then no more.
      await sleep(500);
      const read = await expectQuiet(() => pages.length);
      // 40,000 contacts are 8 pages of 5,000: the export stopped before its end.
      expect(read).toBeLessThan(8);
    } finally {
      herald.db.removeListener('query', listener);
    }
    expect((await api.get('/contacts?limit=1', cred)).status).toBe(200);
    expect((await exportOf('?search=gone 39999', cred)).rows).toHaveLength(1);
  });
});

describe('the exported file imports again unchanged (POST /contacts/import)', () => {
  /** Imports CSV text into an organization and waits for the import to end. */
  async function importCsv(cred: Credential, csv: string) {
    const started = await api.raw('POST', '/contacts/import', csv, cred, { 'content-type': 'text/csv' });
    expect(started.status).toBe(202);
    const done = await waitFor(
      () => api.get(`/contact-imports/${started.body._id}`, cred),
      (r) => ['completed', 'failed', 'canceled'].includes(r.body.status),
    );
    expect(done.body).toMatchObject({ status: 'completed', failed: 0 });
    return done.body;
  }
  /** The rows without what an import never sets (the id, the times) nor groups (an import is told its groups apart), by email. */
  const comparable = (rows: Row[]) =>
    rows.map(({ id: _id, createdAt: _c, updatedAt: _u, groups: _g, ...rest }) => rest).sort((a, b) => a.email!.localeCompare(b.email!));

  test('into another organization, and into its own (matched by email: every contact as it was)', async () => {
    const { cred: source } = await freshOrg();
    await makeContact(api, source, { name: 'Round, "Trip"\nOne', email: 'one@example.com', phone: '0712000001', countryCode: 'KE', organization: 'A, B', tags: ['x', 'y z'], attributes: { plan: 'pro', seats: 3, trial: false } });
    await makeContact(api, source, { name: 'Two', email: 'two@example.com', subscriptions: { email: 'unsubscribed', whatsapp: 'unsubscribed' }, attributes: { note: 'line one\nline "two"' } });
    await makeContact(api, source, { name: 'Three', email: 'three@example.com' });
    const file = (await api.get('/contacts/export', source)).body as string;
    const before = comparable(csvOf({ status: 200, headers: new Headers({ 'content-type': 'text/csv; charset=utf-8' }), body: file }).rows);

    const { cred: target } = await freshOrg();
    await importCsv(target, file);
    expect(comparable((await exportOf('', target)).rows)).toEqual(before);

    await importCsv(source, file);
    expect(comparable((await exportOf('', source)).rows)).toEqual(before);
    expect((await exportOf('', source)).rows).toHaveLength(3);
  });
});

describe('GraphQL contactExport: a signed link to the download', () => {
  const LINK = `query ($filter: ContactFilter) { contactExport(filter: $filter) { url path expiresAt } }`;

  async function linkFor(cred: Credential, filter?: Record<string, unknown>) {
    const res = await api.gql(LINK, { filter }, cred);
    expect(res.body.errors).toBeUndefined();
    return res.body.data.contactExport as { url: string; path: string; expiresAt: string };
  }

  test('the link downloads the filtered export with no other credential, for 10 minutes', async () => {
    const { cred } = await freshOrg();
    const a = await makeContact(api, cred, { name: 'Linked', attributes: { plan: 'pro' } });
    await makeContact(api, cred, { name: 'Other', attributes: { plan: 'free' } });
    const before = Date.now();
    const link = await linkFor(cred, { attributes: { plan: 'pro' } });
    expect(link.path).toMatch(/^\/contacts\/export\?token=[A-Za-z0-9_-]+$/);
    expect(link.url).toMatch(/^https?:\/\/[^/]+\/contacts\/export\?token=/);
    expect(link.url.endsWith(link.path)).toBe(true);
    const lifetime = Date.parse(link.expiresAt) - before;
    expect(lifetime).toBeGreaterThan(9.9 * 60_000);
    expect(lifetime).toBeLessThanOrEqual(10 * 60_000 + 1000);
    const res = await api.get(link.path);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="contacts-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(csvOf(res).rows.map((r) => r.id)).toEqual([a._id]);
    // A user and an API key can make one as well.
    const user = await addUser(api, org, 'user');
    expect(csvOf(await api.get((await linkFor({ token: user.token })).path)).rows.length).toBeGreaterThan(0);
    const key = await createApiKey(api, org, 'user');
    expect(csvOf(await api.get((await linkFor({ apiKey: key.key })).path)).rows.length).toBeGreaterThan(0);
  });

  test('a forged, altered, expired or foreign-secret token is refused with 401; extra parameters and credentials with 400', async () => {
    const link = await linkFor(admin);
    const token = link.path.split('=')[1]!;
    const altered = `${token.slice(0, 10)}${token[10] === 'A' ? 'B' : 'A'}${token.slice(11)}`;
    expectError(await api.get(`/contacts/export?token=${altered}`), 401, 'Invalid export link');
    expectError(await api.get('/contacts/export?token=forged'), 401, 'Invalid export link');
    expectError(await api.get(`/contacts/export?token=${'A'.repeat(5000)}`), 401, 'Invalid export link');
    const asker = { kind: 'user' as const, id: org.user._id };
    const expired = exportToken(TEST_JWT_SECRET, { orgId: org.orgId, asker, filter: {}, expiresAt: new Date(Date.now() - 1000) })!;
    const res = await api.get(`/contacts/export?token=${expired}`);
    expectError(res, 401, 'Export link expired');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="herald"/);
    const foreign = exportToken('another secret of enough length for a test', { orgId: org.orgId, asker, filter: {}, expiresAt: new Date(Date.now() + 60_000) })!;
    expectError(await api.get(`/contacts/export?token=${foreign}`), 401, 'Invalid export link');
    // The link is the credential and carries the filter: nothing is added to it.
    expectValidation(await api.get(`${link.path}&tag=x`), ['tag']);
    expectError(await api.get(link.path, admin), 400, 'Provide exactly one credential');
    // The link is a credential while it lasts: the request log keeps its path only.
    expect(redactUrl(link.path)).toBe('/contacts/export?token=[REDACTED]');
  });

  test("a link exports its own organization only, and stops with its asker's access", async () => {
    const { org: o, cred } = await freshOrg();
    const mine = await makeContact(api, cred, { name: 'Own' });
    await makeContact(api, admin, { name: 'Not yours' });
    const link = await linkFor(cred);
    expect(csvOf(await api.get(link.path)).rows.map((r) => r.id)).toEqual([mine._id]);

    // A token naming another organization, signed for the asker of this one, is not a way in: the asker must be of that organization.
    const crossed = exportToken(TEST_JWT_SECRET, { orgId: org.orgId, asker: { kind: 'user', id: o.user._id }, filter: {}, expiresAt: new Date(Date.now() + 60_000) })!;
    expectError(await api.get(`/contacts/export?token=${crossed}`), 401, 'Invalid export link');

    const user = await addUser(api, o, 'user');
    const userLink = await linkFor({ token: user.token });
    expect((await api.get(userLink.path)).status).toBe(200);
    expect((await api.put(`/users/${user.user._id}/deactivate`, undefined, cred)).status).toBe(200);
    expectError(await api.get(userLink.path), 401, 'Invalid export link');

    const key = await createApiKey(api, o, 'user');
    const keyLink = await linkFor({ apiKey: key.key });
    expect((await api.get(keyLink.path)).status).toBe(200);
    expect((await api.put(`/api-keys/${key.apiKey._id}/revoke`, undefined, cred)).status).toBe(200);
    expectError(await api.get(keyLink.path), 401, 'Invalid export link');
  });

  test('a bad filter is BAD_REQUEST; no credential is UNAUTHENTICATED', async () => {
    const bad = await api.gql(LINK, { filter: { attributes: { 'bad key': 1 } } }, admin);
    expect(bad.body.errors![0].extensions).toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    const anonymous = await api.gql(LINK, {});
    expect(anonymous.body.errors![0].extensions).toMatchObject({ statusCode: 401 });
  });
});

describe('a route that streams (the route table)', () => {
  /** An app with one streaming route whose file is `chunks`, failing with `failAt` when given. */
  async function serve(chunks: string[], failAt?: number) {
    const app = express();
    async function* file() {
      for (const [i, chunk] of chunks.entries()) {
        if (i === failAt) throw new Error('the database went away');
        yield chunk;
      }
      if (failAt === chunks.length) throw new Error('the database went away');
    }
    const op = Object.assign(async () => ({ contentType: 'text/csv; charset=utf-8', filename: 'x.csv', stream: Readable.from(file()) }), {
      access: { public: true } as const,
    });
    app.use((req, _res, next) => {
      (req as any).log = { error() {}, warn() {} };
      next();
    });
    app.use(restRouter([{ method: 'get', path: '/file', op, stream: true, input: () => undefined }]));
    app.use(errorHandler);
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/file`, close: () => server.close() };
  }

  test('a failure before the first chunk is a JSON 500; one after it cuts the download short', async () => {
    const early = await serve(['a\n', 'b\n'], 0);
    try {
      const res = await fetch(early.url);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ statusCode: 500, message: 'Internal server error', error: 'Internal Server Error' });
    } finally {
      early.close();
    }
    const late = await serve(['a\n', 'b\n'], 1);
    try {
      const res = await fetch(late.url);
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
    } finally {
      late.close();
    }
    const whole = await serve(['a\n', 'b\n']);
    try {
      expect(await (await fetch(whole.url)).text()).toBe('a\nb\n');
    } finally {
      whole.close();
    }
  });
});

describe('copyOut (src/db/copy-out.ts): a query written by Postgres as CSV', () => {
  let db: Knex;
  beforeAll(() => {
    // One connection: a connection not given back would keep every later statement waiting.
    db = createDb(process.env.HERALD_TEST_DATABASE_URL!, 1);
  });
  afterAll(() => db?.destroy());

  test('values are written into the statement as they were bound: quotes, backslashes, %, ?, line breaks, numbers', async () => {
    const texts = ["it's", 'back\\slash', "both \\' and '\\", "''", '100% _x', 'what?', '$1', 'two\nlines', 'Zoë 🎉', ''];
    const query = db.select([
      ...texts.map((text, i) => db.raw(`?::text AS t${i}`, [text])),
      db.raw('10 -? AS difference', [-5]),
      db.raw('?::numeric * 2 AS doubled', [1.25]),
      db.raw(`'{"a": 1}'::jsonb \\? ? AS has_key`, ['a']),
    ]);
    const csv = (await copyOut(db, query)).toString('utf8');
    expect(parse(csv)).toEqual([[...texts, '15', '2.50', 't']]);
  });

  test('anything but a string or a finite number is refused before a connection is taken', async () => {
    for (const value of [null, true, new Date(), ['a'], { a: 1 }, Number.NaN, Number.POSITIVE_INFINITY, 'nul\0byte']) {
      await expect(copyOut(db, db.select(db.raw('? AS v', [value as string])))).rejects.toThrow(TypeError);
    }
    expect(poolUse(db)).toMatchObject({ used: 0 });
  });

  test('the connection goes back to the pool when the statement fails, before the copy or in the middle of it', async () => {
    await expect(copyOut(db, db.select(db.raw('no_such_function(?)', ['x'])))).rejects.toThrow(/no_such_function/);
    // Rows are sent before the failing one: the copy has begun when it fails.
    const failing = db.select(db.raw("repeat('x', 100), 1 / (n - 100000)")).from(db.raw('generate_series(1, 200000) AS n'));
    await expect(copyOut(db, failing)).rejects.toThrow(/division by zero/);
    expect(poolUse(db)).toMatchObject({ used: 0 });
    expect((await copyOut(db, db.select(db.raw('? AS one', [1])))).toString()).toBe('1\n');
  });

  test("knex's query listeners see the query, with its bindings, as knex would have run it", async () => {
    const seen: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings: unknown[] }) => seen.push({ sql: q.sql, bindings: q.bindings });
    db.on('query', listener);
    try {
      await copyOut(db, db('contacts').where('contacts.organization_id', org.orgId).select('contacts.id').limit(1));
    } finally {
      db.removeListener('query', listener);
    }
    expect(seen).toEqual([{ sql: 'select "contacts"."id" from "contacts" where "contacts"."organization_id" = $1 limit $2', bindings: [org.orgId, 1] }]);
  });
});
