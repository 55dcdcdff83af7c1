import { createClient } from 'graphql-ws';
import pg from 'pg';
import WebSocket from 'ws';
import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithOrgs, signupOrg, startIsolatedHerald, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';
import { expectGqlError, expectValidation, makeContact, makeGroup } from '../helpers/contacts-groups.js';
import { expectStatementsStayWith, named, type Statement } from '../helpers/statements.js';
import * as importSql from '../../src/modules/contact-imports/sql.js';

/**
 * `POST /contacts/import` and `startContactImport` (platform.md, "Contacts in bulk"): files as people
 * write them, merged into the organization's contacts by a worker, with progress and row errors.
 */

let herald: Herald, api: Client, org: Org, other: Org;
let admin: Credential;
beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true }));
  admin = { token: org.token };
});
afterAll(() => herald?.stop());

/** Uploads CSV as a `text/csv` body; `query` holds the options. */
const upload = (cred: Credential, csv: string | Buffer, query = '') =>
  api.raw('POST', `/contacts/import${query ? `?${query}` : ''}`, csv, cred, { 'content-type': 'text/csv' });

/** Uploads CSV as `multipart/form-data`, with `fields` before the file. */
async function uploadForm(cred: Credential, csv: string, fields: Record<string, string> = {}, fileName = 'people.csv') {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([csv], { type: 'text/csv' }), fileName);
  const res = await fetch(`${herald.url}/contacts/import`, { method: 'POST', body: form, headers: cred && 'token' in cred ? { authorization: `Bearer ${cred.token}` } : {} });
  return { status: res.status, body: (await res.json()) as any };
}

/** The import once it has ended. */
async function finished(cred: Credential, id: string) {
  const res = await waitFor(
    () => api.get(`/contact-imports/${id}`, cred),
    (r) => ['completed', 'failed', 'canceled'].includes(r.body.status),
  );
  return res.body;
}

/** Uploads and waits for the end. */
async function imported(cred: Credential, csv: string | Buffer, query = '') {
  const res = await upload(cred, csv, query);
  expect(res.status).toBe(202);
  return finished(cred, res.body._id);
}

const contactsOf = async (cred: Credential, query = '') => (await api.get(`/contacts?limit=1000${query ? `&${query}` : ''}`, cred)).body as any[];
const bySearch = async (cred: Credential, text: string) => contactsOf(cred, `search=${encodeURIComponent(text)}`);

describe('POST /contacts/import', () => {
  test('creates contacts with fields, attributes, tags and groups; 202 at once, completed later', async () => {
    const group = await makeGroup(api, admin, { name: 'Imported' });
    const csv = 'Name,Email,Phone,attributes.plan,tags\nAda,ada.imp@example.com,0712000001,gold,vip|early\nBob,BOB.IMP@example.com,,42,\n';
    const res = await upload(admin, csv, `groups=${group._id}&tags=csv`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'queued', matchBy: 'email', existing: 'update', rowsRead: 0, delimiter: ',', groups: [group._id], tags: ['csv'] });
    expect(res.body.columns).toEqual([
      { column: 'Name', field: 'name' },
      { column: 'Email', field: 'email' },
      { column: 'Phone', field: 'phone' },
      { column: 'attributes.plan', field: 'attributes.plan' },
      { column: 'tags', field: 'tags' },
    ]);
    const done = await finished(admin, res.body._id);
    expect(done).toMatchObject({ status: 'completed', rowsTotal: 2, rowsRead: 2, created: 2, updated: 0, skipped: 0, failed: 0, errors: [], failure: null });
    expect(done.startedAt).toEqual(expect.any(String));
    expect(done.finishedAt).toEqual(expect.any(String));
    const contacts = await contactsOf(admin, `group=${group._id}`);
    expect(contacts.find((c) => c.name === 'Ada')).toMatchObject({ email: 'ada.imp@example.com', phone: '+254712000001', attributes: { plan: 'gold' }, tags: ['vip', 'early', 'csv'] });
    expect(contacts.find((c) => c.name === 'Bob')).toMatchObject({ email: 'bob.imp@example.com', phone: null, attributes: { plan: 42 }, tags: ['csv'] });
  });

  test('a BOM, `;` separators, CRLF, quoted fields with separators, quotes and newlines', async () => {
    const csv = '\uFEFFname;email;attributes.note\r\n"Smith; Jane";jane.bom@example.com;"said ""hi""\r\nthen left"\r\nZed;zed.bom@example.com;plain\r\n';
    const done = await imported(admin, csv);
    expect(done).toMatchObject({ status: 'completed', delimiter: ';', created: 2, failed: 0 });
    const [jane] = await bySearch(admin, 'jane.bom@');
    expect(jane).toMatchObject({ name: 'Smith; Jane', attributes: { note: 'said "hi"\r\nthen left' } });
  });

  test('invalid rows are reported with their line numbers; the rest is imported', async () => {
    const csv = [
      'name,email,phone',
      'Good One,good1.lines@example.com,',
      'Bad Email,not-an-email,',
      '"Multi',
      'Line",good2.lines@example.com,',
      'Bad Phone,,12',
      'Nobody,,',
      'Too,many.lines@example.com,,extra',
      'Good Two,good3.lines@example.com,+254712000009',
      'Nul\u0000Byte,nul.lines@example.com,',
    ].join('\n');
    const done = await imported(admin, csv);
    expect(done).toMatchObject({ status: 'completed', rowsTotal: 8, created: 3, failed: 5 });
    expect(done.errors).toEqual([
      { line: 3, column: 'email', message: 'email must be a valid email' },
      { line: 6, column: 'phone', message: 'phone must be a valid phone number' },
      { line: 7, column: null, message: 'email or phone is required' },
      { line: 8, column: null, message: 'has 4 fields, the header has 3' },
      { line: 10, column: 'name', message: 'name must not contain a NUL character' },
    ]);
    expect((await bySearch(admin, 'lines@example.com')).map((c) => c.name).sort()).toEqual(['Good One', 'Good Two', 'Multi\nLine']);
  });

  test('duplicate rows: the last row of an address wins, the others are skipped; a re-run updates, never duplicates', async () => {
    const csv = 'name,email,attributes.n\nFirst,dup.once@example.com,1\nSecond,DUP.ONCE@example.com,2\nOther,dup.other@example.com,3\n';
    expect(await imported(admin, csv)).toMatchObject({ created: 2, updated: 0, skipped: 1 });
    expect(await bySearch(admin, 'dup.once@')).toEqual([expect.objectContaining({ name: 'Second', attributes: { n: 2 } })]);
    expect(await imported(admin, csv)).toMatchObject({ created: 0, updated: 2, skipped: 1 });
    expect(await bySearch(admin, 'dup.')).toHaveLength(2);
  });

  test('existing contacts: update merges (empty cells keep values, attributes merge, tags add); skip leaves them alone', async () => {
    await makeContact(api, admin, { name: 'Existing', email: 'exists.merge@example.com', phone: '+254712000100', tags: ['old'], attributes: { a: 1, b: 'x' } });
    const update = await imported(admin, 'email,name,phone,attributes.b,tags\nexists.merge@example.com,Renamed,,y,new\n', 'tags=batch');
    expect(update).toMatchObject({ created: 0, updated: 1 });
    expect((await bySearch(admin, 'exists.merge@'))[0]).toMatchObject({ name: 'Renamed', phone: '+254712000100', attributes: { a: 1, b: 'y' }, tags: ['old', 'new', 'batch'] });
    const skip = await imported(admin, 'email,name\nexists.merge@example.com,Ignored\nnew.skip@example.com,Fresh\n', 'existing=skip');
    expect(skip).toMatchObject({ created: 1, updated: 0, skipped: 1 });
    expect((await bySearch(admin, 'exists.merge@'))[0].name).toBe('Renamed');
  });

  test('match by phone, national numbers read with the organization’s country or the row’s country code', async () => {
    await makeContact(api, admin, { name: 'By Phone', phone: '+254712000200' });
    const done = await imported(admin, 'phone,name,countryCode\n0712000200,Phone Renamed,\n7911123456,In London,GB\n', 'matchBy=phone');
    expect(done).toMatchObject({ matchBy: 'phone', created: 1, updated: 1 });
    expect((await bySearch(admin, '+254712000200'))[0].name).toBe('Phone Renamed');
    expect((await bySearch(admin, '+447911123456'))[0]).toMatchObject({ name: 'In London', countryCode: 'GB' });
  });

  test('consent columns: unsubscribed rows are imported as such, never re-subscribed by a file', async () => {
    const csv = 'name,email,subscriptions.email,unsubscribed\nLeft Mail,left.mail@example.com,unsubscribed,\nLeft All,left.all@example.com,,yes\nStays,stays@example.com,subscribed,no\n';
    expect(await imported(admin, csv)).toMatchObject({ created: 3, failed: 0 });
    const [mail] = await bySearch(admin, 'left.mail@');
    expect(mail.subscriptions.email).toMatchObject({ status: 'unsubscribed', source: 'import' });
    expect(mail.subscriptions.sms.status).toBe('subscribed');
    const [all] = await bySearch(admin, 'left.all@');
    expect([all.subscriptions.email.status, all.subscriptions.sms.status, all.subscriptions.whatsapp.status]).toEqual(['unsubscribed', 'unsubscribed', 'unsubscribed']);
    // An existing contact that a row says left now leaves; a `subscribed` cell does not bring one back.
    expect(await imported(admin, 'email,subscriptions.sms\nstays@example.com,unsubscribed\nleft.mail@example.com,subscribed\n')).toMatchObject({ updated: 2 });
    expect((await bySearch(admin, 'stays@'))[0].subscriptions.sms).toMatchObject({ status: 'unsubscribed', source: 'import' });
    expect((await bySearch(admin, 'left.mail@'))[0].subscriptions.email.status).toBe('unsubscribed');
    // Each contact's consent history says what the imports did, created or updated.
    const historyOf = async (id: string) =>
      ((await api.get(`/contacts/${id}/data`, admin)).body.contacts[0].consentHistory as { channel: string; status: string; source: string }[]).map((h) => `${h.channel} ${h.status} ${h.source}`).sort();
    expect(await historyOf(all._id)).toEqual(['email unsubscribed import', 'sms unsubscribed import', 'whatsapp unsubscribed import']);
    expect(await historyOf(mail._id)).toEqual(['email unsubscribed import']);
    expect(await historyOf((await bySearch(admin, 'stays@'))[0]._id)).toEqual(['sms unsubscribed import']);
  });

  test('a column mapping: headers to fields and attributes, columns ignored', async () => {
    const csv = 'Full Name,E-mail address,Plan,Internal\nMapped,mapped@example.com,pro,secret\n';
    const res = await upload(admin, csv, `mapping=${encodeURIComponent(JSON.stringify({ 'Full Name': 'name', 'E-mail address': 'email', Plan: 'attributes.plan', Internal: '' }))}`);
    expect(res.status).toBe(202);
    expect(res.body.columns.map((c: any) => c.field)).toEqual(['name', 'email', 'attributes.plan', null]);
    await finished(admin, res.body._id);
    expect((await bySearch(admin, 'mapped@'))[0]).toMatchObject({ name: 'Mapped', attributes: { plan: 'pro' } });
  });

  test('a new contact needs a name: rows without one are reported', async () => {
    const done = await imported(admin, 'email,name\nnoname@example.com,\n');
    expect(done).toMatchObject({ created: 0, failed: 1, errors: [{ line: 2, column: null, message: 'name is required for a new contact' }] });
  });

  test('multipart/form-data: options as fields before the file, the file name kept', async () => {
    const res = await uploadForm(admin, 'name,email\nForm,form.upload@example.com\n', { tags: 'form,web' }, 'list.csv');
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ fileName: 'list.csv', tags: ['form', 'web'] });
    expect(await finished(admin, res.body._id)).toMatchObject({ created: 1 });
    expect((await bySearch(admin, 'form.upload@'))[0].tags).toEqual(['form', 'web']);
  });

  test('a malformed file fails as a whole, nothing merged', async () => {
    const done = await imported(admin, 'name,email\nOk,malformed.ok@example.com\n"Unclosed,malformed.bad@example.com\n');
    expect(done.status).toBe('failed');
    expect(done.failure).toMatch(/not valid CSV/);
    expect(await bySearch(admin, 'malformed.')).toEqual([]);
  });

  test('400s: no header, an empty file, a mapping naming a missing column or an unknown field, no address column, unknown groups, bad options', async () => {
    expectValidation(await upload(admin, ''), ['file']);
    expectValidation(await upload(admin, 'name,email\n', `mapping=${encodeURIComponent('{"Nope":"email"}')}`), ['mapping']);
    expectValidation(await upload(admin, 'name,email\n', `mapping=${encodeURIComponent('{"email":"shoe_size"}')}`), ['mapping']);
    expectValidation(await upload(admin, 'name,company\nA,B\n'), ['mapping']);
    expectValidation(await upload(admin, 'name,email\n', 'matchBy=phone'), ['matchBy']);
    expectValidation(await upload(admin, 'name,email\n', 'groups=00000000-0000-4000-8000-000000000000'), ['groups']);
    expectValidation(await upload(admin, 'name,email\n', 'existing=replace&color=red'), ['existing', 'color']);
    expectValidation(await upload(admin, 'name,attributes.bad key\nA,x\n'), ['mapping']);
    const tooBig = await upload(admin, `name,email\n${'x'.repeat(101 * 1024 * 1024)}`);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
    const other = await api.raw('POST', '/contacts/import', '{"name":"x"}', admin, { 'content-type': 'application/json' });
    expect(other.status).toBe(415);
    const noFile = await uploadForm(admin, '', {}, '');
    expect(noFile.status).toBe(400);
  });

  test('roles: admins and admin keys import; users 403; no credential 401 before the body is read', async () => {
    const user = await addUser(api, org, 'user');
    expect((await upload({ token: user.token }, 'name,email\nA,a@example.com\n')).status).toBe(403);
    const { key } = await createApiKey(api, org, 'admin');
    const viaKey = await upload({ apiKey: key }, 'name,email\nKeyed,keyed.import@example.com\n');
    expect(viaKey.status).toBe(202);
    expect(viaKey.body.createdByApiKeyId).toEqual(expect.any(String));
    expect((await upload(undefined, 'name,email\nA,a@example.com\n')).status).toBe(401);
    // Users read imports.
    expect((await api.get(`/contact-imports/${viaKey.body._id}`, { token: user.token })).status).toBe(200);
  });

  test('tenant isolation: another organization’s import is 403, its list and contacts its own', async () => {
    const mine = await imported(admin, 'name,email\nMine,mine.iso@example.com\n');
    expect((await api.get(`/contact-imports/${mine._id}`, { token: other.token })).status).toBe(403);
    expect((await api.post(`/contact-imports/${mine._id}/cancel`, undefined, { token: other.token })).status).toBe(403);
    const theirs = (await api.get('/contact-imports', { token: other.token })).body;
    expect(theirs.every((i: any) => i.organization === other.orgId)).toBe(true);
    expect(await bySearch({ token: other.token }, 'mine.iso@')).toEqual([]);
  });

  test('GET /contact-imports pages newest first with X-Total-Count', async () => {
    const res = await api.get('/contact-imports?limit=2', admin);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(Number(res.headers.get('x-total-count'))).toBeGreaterThan(2);
    expect(res.headers.get('link')).toMatch(/rel="next"/);
  });
});

describe('waiting, cancelling, in parallel', () => {
  const big = (prefix: string, n: number) => ['name,email', ...Array.from({ length: n }, (_, i) => `P ${i},${prefix}${i}@example.com`)].join('\n');

  test('a second import of the organization waits for the first; imports of two organizations run side by side', async () => {
    const [a, b, c] = await Promise.all([upload(admin, big('wait.a.', 30_000)), upload(admin, big('wait.b.', 10)), upload({ token: other.token }, big('par.c.', 20_000))]);
    expect([a.status, b.status, c.status]).toEqual([202, 202, 202]);
    const seen = new Set<string>();
    // Never two running at once in one organization.
    const doneA = await waitFor(
      async () => {
        const list = (await api.get('/contact-imports?limit=5', admin)).body as any[];
        if (list.filter((i) => i.status === 'running').length > 1) seen.add('two running');
        return list.find((i) => i._id === a.body._id);
      },
      (i) => i.status === 'completed',
      60_000,
    );
    expect(seen.has('two running')).toBe(false);
    const doneB = await finished(admin, b.body._id);
    const doneC = await finished({ token: other.token }, c.body._id);
    expect([doneA.created, doneB.created, doneC.created]).toEqual([30_000, 10, 20_000]);
    // One ran after the other.
    const [first, second] = [doneA, doneB].sort((x, y) => Date.parse(x.startedAt) - Date.parse(y.startedAt));
    expect(Date.parse(second!.startedAt)).toBeGreaterThanOrEqual(Date.parse(first!.finishedAt));
  }, 90_000);

  test('cancel: a queued import never starts; an ended one is 409', async () => {
    const first = await upload(admin, big('cancel.first.', 20_000));
    const second = await upload(admin, big('cancel.second.', 5));
    const canceled = await api.post(`/contact-imports/${second.body._id}/cancel`, undefined, admin);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    await finished(admin, first.body._id);
    expect((await finished(admin, second.body._id)).status).toBe('canceled');
    expect(await bySearch(admin, 'cancel.second.')).toEqual([]);
    expect((await api.post(`/contact-imports/${first.body._id}/cancel`, undefined, admin)).status).toBe(409);
  }, 60_000);

  test('cancel of a running import stops it between batches: whole batches only', async () => {
    const res = await upload(admin, big('cancel.run.', 150_000));
    await waitFor(() => api.get(`/contact-imports/${res.body._id}`, admin), (r) => r.body.status === 'running' && r.body.rowsTotal !== null, 60_000);
    const canceled = await api.post(`/contact-imports/${res.body._id}/cancel`, undefined, admin);
    expect(canceled.status).toBe(200);
    const done = await finished(admin, res.body._id);
    expect(done.status).toBe('canceled');
    const [{ n }] = (await herald.db.raw(`SELECT count(*)::int AS n FROM contacts WHERE organization_id = ? AND email LIKE 'cancel.run.%'`, [org.orgId])).rows;
    expect(n).toBe(done.created);
    expect(n).toBeLessThan(150_000);
    expect(n % 20_000).toBe(0);
    // The file and the staging rows go once the worker sees the cancel.
    const staged = () => herald.db('contact_import_rows').where({ organization_id: org.orgId, import_id: res.body._id }).count({ n: '*' }).first();
    expect(Number((await waitFor(staged, (r) => Number(r!.n) === 0))!.n)).toBe(0);
  }, 90_000);
});

describe('GraphQL', () => {
  const START = `mutation($input: StartContactImportInput!) { startContactImport(input: $input) { _id status matchBy columns { column field } } }`;
  const GET = `query($id: ID!) { contactImport(id: $id) { _id status created updated failed errors { line column message } } }`;

  test('contactImportProgress: the state now, changes, and the last event completed', async () => {
    const rows = ['name,email', ...Array.from({ length: 60_000 }, (_, i) => `Live ${i},live.${i}@example.com`)].join('\n');
    const res = await upload(admin, rows);
    const socket = createClient({ url: `${herald.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${org.token}` }, retryAttempts: 0 });
    try {
      const events: any[] = [];
      const feed = socket.iterate<{ contactImportProgress: any }>({ query: `subscription($id: ID!) { contactImportProgress(id: $id) { status rowsRead created } }`, variables: { id: res.body._id } });
      for await (const event of feed) events.push(event.data!.contactImportProgress);
      expect(events.at(-1)).toMatchObject({ status: 'completed', rowsRead: 60_000, created: 60_000 });
      expect(events.length).toBeGreaterThan(2);
      // Counts only grow.
      expect(events.map((e) => e.created)).toEqual([...events.map((e) => e.created)].sort((a, b) => a - b));
    } finally {
      await socket.dispose();
    }
  }, 60_000);

  test('startContactImport from CSV text, contactImport, contactImports, cancelContactImport', async () => {
    const started = await api.gql(START, { input: { csv: 'name,mail\nGql,gql.import@example.com\nBad,nope\n', mapping: { mail: 'email' }, tags: ['gql'] } }, admin);
    expect(started.body.errors).toBeUndefined();
    const id = started.body.data.startContactImport._id;
    expect(started.body.data.startContactImport).toMatchObject({ status: 'queued', matchBy: 'email', columns: [{ column: 'name', field: 'name' }, { column: 'mail', field: 'email' }] });
    const done = await waitFor(() => api.gql(GET, { id }, admin), (r) => r.body.data?.contactImport.status === 'completed');
    expect(done.body.data.contactImport).toMatchObject({ created: 1, failed: 1, errors: [{ line: 3, column: 'mail', message: 'mail must be a valid email' }] });
    const list = await api.gql(`{ contactImports(first: 1) { totalCount edges { node { _id } } } }`, {}, admin);
    expect(list.body.data.contactImports.edges[0].node._id).toBe(id);
    expectGqlError(await api.gql(`mutation($id: ID!) { cancelContactImport(id: $id) { status } }`, { id }, admin), 409, 'CONFLICT');
    expectGqlError(await api.gql(GET, { id }, { token: other.token }), 403, 'FORBIDDEN');
    const bad = await api.gql(START, { input: { csv: 'name,company\nA,B\n' } }, admin);
    expect(bad.body.errors![0].extensions).toMatchObject({ statusCode: 400 });
  });
});

test('each import statement stays with its organization', async () => {
  const importId = (await imported(admin, 'name,email\nStatements,statements@example.com\n'))._id as string;
  const now = new Date();
  const key = { orgId: org.orgId, importId };
  const batch = { ...key, after: '', upto: 'z' };
  const statements = [
    named(importSql.claimImport, { ...key, now, leasedUntil: now }),
    named(importSql.stagingProgress, { ...key, attempt: 1, rowsRead: 1, now, leasedUntil: now }),
    named(importSql.markStaged, { ...key, attempt: 1, rows: 1, failed: 0, errors: '[]', now, leasedUntil: now }),
    named(importSql.lockImport, key),
    named(importSql.batchEnd, { ...key, after: '', size: 10 }),
    ...(['email', 'phone'] as const).flatMap((by) => [
      named(importSql.updateMatched(by), { ...batch, tags: ['t'], groups: [], now }),
      named(importSql.countMatched(by), batch),
      named(importSql.insertUnmatched(by), { ...batch, tags: [], groups: [], now, left: '{}' }),
      named(importSql.nameless(by), batch),
    ]),
    named(importSql.batchMerged, { ...key, upto: 'z', created: 0, updated: 0, skipped: 0, failed: 0, errors: '[]', now, leasedUntil: now }),
    named(importSql.finishImport, { ...key, attempt: 1, status: 'completed', failure: null, now }),
    named(importSql.cancelImport, { ...key, now }),
    named(importSql.dropStaging, key),
    named(importSql.readChunk, { ...key, seq: 0 }),
    named(importSql.nextQueued, { orgId: org.orgId }),
  ];
  await expectStatementsStayWith(statements, org.orgId);
});

describe('an import and sending', () => {
  /**
   * Imports are a lane of workers of their own: an import that takes long (here, made to wait for
   * the contacts table, which this test holds) never holds a slot that sends. In one lane it held
   * the only one, and a campaign launched meanwhile waited for the import to end.
   */
  test('a campaign is sent while an import runs', async () => {
    const isolated = await startIsolatedHerald('imports_lane', { WORKERS: 'true', WORKER_CONCURRENCY: '1', CAMPAIGN_INLINE_LIMIT: '0' });
    const holder = new pg.Client({ connectionString: isolated.db.url });
    try {
      const o = await signupOrg(isolated.api);
      const cred = { token: o.token };
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE contacts IN SHARE ROW EXCLUSIVE MODE');
      const started = await isolated.api.raw('POST', '/contacts/import', 'name,phone\nAda,+254712340051\n', cred, { 'content-type': 'text/csv' });
      expect(started.status).toBe(202);
      const running = await waitFor(() => isolated.api.get(`/contact-imports/${started.body._id}`, cred), (r) => r.body.status === 'running', 10_000);
      expect(running.body.status).toBe('running');

      const created = await isolated.api.post(
        '/campaigns',
        { name: 'Beside an import', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } }, recipients: { manual: ['+254712340052'] } },
        cred,
      );
      expect((await isolated.api.post(`/campaigns/${created.body._id}/launch`, {}, cred)).status).toBe(200);
      const campaign = await waitFor(() => isolated.api.get(`/campaigns/${created.body._id}`, cred).then((r) => r.body), (c) => c.status === 'completed', 5_000);
      expect(campaign).toMatchObject({ status: 'completed', analytics: { sent: 1 } });
      expect((await isolated.api.get(`/contact-imports/${started.body._id}`, cred)).body.status).toBe('running');

      await holder.query('ROLLBACK');
      const done = await waitFor(() => isolated.api.get(`/contact-imports/${started.body._id}`, cred), (r) => r.body.status === 'completed', 15_000);
      expect(done.body).toMatchObject({ status: 'completed' });
    } finally {
      await holder.end().catch(() => undefined);
      await isolated.stop();
    }
  }, 60_000);
});
