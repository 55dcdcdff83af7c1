import { randomUUID } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { compareNewestFirst, expectError, expectGqlError, expectValidation, FORBIDDEN_BODY, NOT_FOUND_BODY, nextLink, sorted } from '../helpers/contacts-groups.js';
import { addUser, createApiKey, heraldWithOrgs, ISO_MS, signupOrg, UUID_RE, type Client, type Credential, type Org } from '../helpers/herald.js';
import { sleep } from '../helpers/time.js';

let herald: Herald, api: Client;
let org: Org, other: Org;
let admin: Credential, otherAdmin: Credential, user: Credential, userKey: Credential, adminKey: Credential;

const TEMPLATE_KEYS = ['_id', 'channel', 'content', 'createdAt', 'name', 'organization', 'subject', 'updatedAt'];
const FIELDS = '_id name channel subject content organization createdAt updatedAt';
const uniq = () => randomUUID().slice(0, 8);

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  admin = { token: org.token };
  otherAdmin = { token: other.token };
  user = { token: (await addUser(api, org, 'user')).token };
  userKey = { apiKey: (await createApiKey(api, org, 'user')).key };
  adminKey = { apiKey: (await createApiKey(api, org, 'admin')).key };
});
afterAll(() => herald?.stop());

const count = async (orgId: string) => Number((await herald.db('message_templates').where({ organization_id: orgId }).count({ n: '*' }).first())!.n);

async function makeTemplate(cred: Credential, overrides: Record<string, unknown> = {}) {
  const res = await api.post('/templates', { name: `Template ${uniq()}`, channel: 'sms', content: 'Hi {{ contact.name }}', ...overrides }, cred);
  if (res.status !== 201) throw new Error(`create template failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A 400 naming exactly `field`, its message naming the line and column of the Liquid problem. */
function expectLiquidError(res: { status: number; body: any }, field: string, line: number, column: number) {
  expectValidation(res as any, [field]);
  expect(res.body.details).toEqual([{ field, message: expect.stringMatching(new RegExp(`^${field} is not a valid template: line ${line}, column ${column}: `)) }]);
}

describe('POST /templates', () => {
  test('201 for each channel; the template reads back the same', async () => {
    const name = `Welcome ${uniq()}`;
    const res = await api.post('/templates', { name, channel: 'email', subject: 'Hello {{ contact.name }}', content: '<p>Welcome, {{ contact.name | upcase }}</p>' }, admin);
    expect(res.status).toBe(201);
    const t = res.body;
    expect(sorted(t)).toEqual(TEMPLATE_KEYS);
    expect(t).toMatchObject({ name, channel: 'email', subject: 'Hello {{ contact.name }}', content: '<p>Welcome, {{ contact.name | upcase }}</p>', organization: org.orgId });
    expect(t._id).toMatch(UUID_RE);
    expect(t.createdAt).toMatch(ISO_MS);
    expect(t.updatedAt).toBe(t.createdAt);
    expect((await api.get(`/templates/${t._id}`, admin)).body).toEqual(t);

    for (const channel of ['sms', 'whatsapp']) {
      const plain = await api.post('/templates', { name: `${channel} ${uniq()}`, channel, content: 'No markup at all' }, adminKey);
      expect(plain.status).toBe(201);
      expect(plain.body).toMatchObject({ channel, subject: null, content: 'No markup at all' });
    }
  });

  test('fields are required and validated, all in one answer; nothing is stored on a 400', async () => {
    const before = await count(org.orgId);
    expectValidation(await api.post('/templates', {}, admin), ['name', 'channel', 'content']);
    expectValidation(await api.post('/templates', { name: ' ', channel: 'fax', content: '' }, admin), ['name', 'channel', 'content']);
    expectValidation(await api.post('/templates', { name: 'x'.repeat(101), channel: 'sms', content: 'c' }, admin), ['name']);
    expectValidation(await api.post('/templates', { name: `S ${uniq()}`, channel: 'email', subject: 's'.repeat(256), content: 'c' }, admin), ['subject']);
    expectValidation(await api.post('/templates', { name: `S ${uniq()}`, channel: 'email', subject: 'ok', content: 'c'.repeat(1_000_001) }, admin), ['content']);
    expectValidation(await api.post('/templates', { name: `S ${uniq()}`, channel: 'sms', content: 'c'.repeat(10_001) }, admin), ['content']);
    expectValidation(await api.post('/templates', { name: `S ${uniq()}`, channel: 'whatsapp', content: 'c'.repeat(10_001) }, admin), ['content']);
    expectValidation(await api.post('/templates', { name: `S ${uniq()}`, channel: 'sms', content: 'bad \u0000 text' }, admin), ['content']);
    for (const field of ['organization', '_id', 'createdAt', 'variables']) {
      expectValidation(await api.post('/templates', { name: `Extra ${uniq()}`, channel: 'sms', content: 'c', [field]: other.orgId }, admin), [field]);
    }
    expect(await count(org.orgId)).toBe(before);
    // The longest allowed bodies are stored.
    expect((await api.post('/templates', { name: `Long ${uniq()}`, channel: 'sms', content: 'c'.repeat(10_000) }, admin)).status).toBe(201);
  });

  test('subject: required for email, refused for SMS and WhatsApp', async () => {
    const before = await count(org.orgId);
    const missing = await api.post('/templates', { name: `E ${uniq()}`, channel: 'email', content: 'c' }, admin);
    expectValidation(missing, ['subject']);
    expect(missing.body.message).toBe('subject is required for email');
    expectValidation(await api.post('/templates', { name: `E ${uniq()}`, channel: 'email', subject: '   ', content: 'c' }, admin), ['subject']);
    expectValidation(await api.post('/templates', { name: `E ${uniq()}`, channel: 'email', subject: null, content: 'c' }, admin), ['subject']);
    for (const channel of ['sms', 'whatsapp']) {
      const res = await api.post('/templates', { name: `T ${uniq()}`, channel, subject: 'Hi', content: 'c' }, admin);
      expectValidation(res, ['subject']);
      expect(res.body.message).toBe(`subject is only for email, not ${channel}`);
    }
    expect(await count(org.orgId)).toBe(before);
  });

  test('content and subject must parse as Liquid: 400 naming the field, line and column; nothing stored', async () => {
    const before = await count(org.orgId);
    expectLiquidError(await api.post('/templates', { name: `L ${uniq()}`, channel: 'sms', content: 'Hi\n{% if contact.name %}no end' }, admin), 'content', 2, 1);
    expectLiquidError(await api.post('/templates', { name: `L ${uniq()}`, channel: 'email', subject: 'Hi {{ contact.name', content: 'fine' }, admin), 'subject', 1, 4);
    // An unknown filter and a tag that reads another template are refused as well.
    const filter = await api.post('/templates', { name: `L ${uniq()}`, channel: 'sms', content: 'Hi {{ contact.name | shout }}' }, admin);
    expectLiquidError(filter, 'content', 1, 4);
    expect(filter.body.message).toMatch(/shout/);
    const include = await api.post('/templates', { name: `L ${uniq()}`, channel: 'whatsapp', content: 'a\nb {% include "secrets" %}' }, admin);
    expectLiquidError(include, 'content', 2, 3);
    expect(include.body.message).toMatch(/include/);
    // Both fields broken, and another field too: one answer names them all.
    const all = await api.post('/templates', { name: '', channel: 'email', subject: '{% endif %}', content: '{{ x | nope }}' }, admin);
    expectValidation(all, ['name', 'subject', 'content']);
    expect(await count(org.orgId)).toBe(before);
  });

  test('names are unique within an organization, case-insensitively; another organization may reuse them', async () => {
    const name = `Reminder ${uniq()}`;
    await makeTemplate(admin, { name });
    const before = await count(org.orgId);
    for (const dup of [name, name.toUpperCase(), `  ${name.toLowerCase()}  `]) {
      expectError(await api.post('/templates', { name: dup, channel: 'whatsapp', content: 'c' }, admin), 400, 'A template with this name already exists');
    }
    expect(await count(org.orgId)).toBe(before);
    const elsewhere = await api.post('/templates', { name, channel: 'sms', content: 'c' }, otherAdmin);
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.organization).toBe(other.orgId);
  });
});

describe('roles', () => {
  test('the user role and user-role keys read but never write (403); admin keys write', async () => {
    const t = await makeTemplate(adminKey);
    const before = await count(org.orgId);
    for (const cred of [user, userKey]) {
      expect((await api.get('/templates', cred)).status).toBe(200);
      expect((await api.get(`/templates/${t._id}`, cred)).body).toEqual(t);
      for (const res of [
        await api.post('/templates', { name: `Nope ${uniq()}`, channel: 'sms', content: 'c' }, cred),
        await api.put(`/templates/${t._id}`, { name: 'Nope' }, cred),
        await api.delete(`/templates/${t._id}`, cred),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual(FORBIDDEN_BODY);
      }
      expectGqlError(await api.gql(`mutation { createTemplate(input: { name: "Nope", channel: sms, content: "c" }) { _id } }`, undefined, cred), 403, 'FORBIDDEN');
      expectGqlError(await api.gql(`mutation ($id: ID!) { deleteTemplate(id: $id) { message } }`, { id: t._id }, cred), 403, 'FORBIDDEN');
      expect((await api.gql(`query ($id: ID!) { template(id: $id) { _id } }`, { id: t._id }, cred)).body.data.template._id).toBe(t._id);
    }
    expect(await count(org.orgId)).toBe(before);
    expect((await api.get(`/templates/${t._id}`, admin)).body).toEqual(t);
    expect((await api.get('/templates')).status).toBe(401);
  });
});

describe('GET /templates', () => {
  test('newest first with X-Total-Count, paged with limit and cursor; other organizations never listed', async () => {
    const fresh = await signupOrg(api);
    const cred = { token: fresh.token };
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await makeTemplate(cred, { name: `List ${i}` }));
    await makeTemplate(otherAdmin);
    const expected = [...made].sort(compareNewestFirst).map((t) => t._id);

    const res = await api.get('/templates', cred);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-total-count')).toBe('5');
    expect(res.body.map((t: any) => t._id)).toEqual(expected);
    for (const t of res.body) expect(sorted(t)).toEqual(TEMPLATE_KEYS);

    const seen: string[] = [];
    let path: string | null = '/templates?limit=2';
    while (path) {
      const page = await api.get(path, cred);
      expect(page.status).toBe(200);
      expect(page.headers.get('x-total-count')).toBe('5');
      seen.push(...page.body.map((t: any) => t._id));
      path = nextLink(page);
    }
    expect(seen).toEqual(expected);
    expectValidation(await api.get('/templates?limit=0', cred), ['limit']);
    expectError(await api.get('/templates?cursor=nonsense', cred), 400);

    const first = await api.gql(`{ templates(first: 2) { totalCount pageInfo { hasNextPage endCursor } edges { node { _id } } } }`, undefined, cred);
    expect(first.body.data.templates).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });
    const rest = await api.gql(`query ($a: String) { templates(first: 10, after: $a) { pageInfo { hasNextPage } edges { node { _id } } } }`, { a: first.body.data.templates.pageInfo.endCursor }, cred);
    expect([...first.body.data.templates.edges, ...rest.body.data.templates.edges].map((e: any) => e.node._id)).toEqual(expected);
    expect(rest.body.data.templates.pageInfo.hasNextPage).toBe(false);
  });
});

describe('GET, PUT and DELETE /templates/:id', () => {
  test('a non-UUID or unknown id is 404', async () => {
    for (const id of ['nope', '42', randomUUID()]) {
      for (const res of [await api.get(`/templates/${id}`, admin), await api.put(`/templates/${id}`, { name: 'X' }, admin), await api.delete(`/templates/${id}`, admin)]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(NOT_FOUND_BODY);
      }
    }
  });

  test("another organization's template is 403, reveals nothing, stays unchanged and is never listed", async () => {
    const theirs = await makeTemplate(otherAdmin, { name: `Their secret ${uniq()}`, content: 'top secret offer' });
    for (const res of [
      await api.get(`/templates/${theirs._id}`, admin),
      await api.put(`/templates/${theirs._id}`, { name: 'Hijacked', content: 'owned' }, admin),
      await api.delete(`/templates/${theirs._id}`, admin),
      await api.get(`/templates/${theirs._id}`, adminKey),
      await api.delete(`/templates/${theirs._id}`, adminKey),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN_BODY);
    }
    expectGqlError(await api.gql(`query ($id: ID!) { template(id: $id) { _id content } }`, { id: theirs._id }, admin), 403, 'FORBIDDEN', 'Insufficient permissions');
    expectGqlError(await api.gql(`mutation ($id: ID!) { updateTemplate(id: $id, input: { name: "Hijacked" }) { _id } }`, { id: theirs._id }, admin), 403, 'FORBIDDEN');
    expectGqlError(await api.gql(`mutation ($id: ID!) { deleteTemplate(id: $id) { message } }`, { id: theirs._id }, admin), 403, 'FORBIDDEN');
    const listed = await api.get('/templates?limit=1000', admin);
    expect(JSON.stringify(listed.body)).not.toMatch(/Their secret|top secret/);
    const gqlList = await api.gql(`{ templates(first: 1000) { edges { node { _id } } } }`, undefined, admin);
    expect(gqlList.body.data.templates.edges.map((e: any) => e.node._id)).not.toContain(theirs._id);
    expect((await api.get(`/templates/${theirs._id}`, otherAdmin)).body).toEqual(theirs);
  });

  test('PUT is partial; the merged template must obey the channel rules and parse as Liquid', async () => {
    const a = await makeTemplate(admin, { name: `Alpha ${uniq()}`, channel: 'email', subject: 'Hi', content: 'Body' });
    const b = await makeTemplate(admin, { name: `Beta ${uniq()}` });
    await sleep(5);
    const res = await api.put(`/templates/${a._id}`, { content: 'Dear {{ contact.name }}' }, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...a, content: 'Dear {{ contact.name }}', updatedAt: res.body.updatedAt });
    expect(res.body.updatedAt > a.updatedAt).toBe(true);
    const current = res.body;

    for (const name of [b.name, b.name.toUpperCase()]) expectError(await api.put(`/templates/${a._id}`, { name }, admin), 400, 'A template with this name already exists');
    expect((await api.put(`/templates/${a._id}`, { name: a.name.toUpperCase() }, admin)).body.name).toBe(a.name.toUpperCase());
    await api.put(`/templates/${a._id}`, { name: a.name }, admin);

    // Off email with the subject kept, or without a subject to email: the merged result breaks the rule.
    expectValidation(await api.put(`/templates/${a._id}`, { channel: 'sms' }, admin), ['subject']);
    expectValidation(await api.put(`/templates/${a._id}`, { subject: null }, admin), ['subject']);
    expectValidation(await api.put(`/templates/${b._id}`, { channel: 'email' }, admin), ['subject']);
    expectValidation(await api.put(`/templates/${b._id}`, { subject: 'Only for email' }, admin), ['subject']);
    expectValidation(await api.put(`/templates/${b._id}`, { content: 'c'.repeat(10_001) }, admin), ['content']);
    expectLiquidError(await api.put(`/templates/${a._id}`, { content: 'x {{ a | nope }}' }, admin), 'content', 1, 3);
    expectLiquidError(await api.put(`/templates/${a._id}`, { subject: '{% for x in y %}' }, admin), 'subject', 1, 1);
    expectValidation(await api.put(`/templates/${a._id}`, { organization: other.orgId }, admin), ['organization']);
    expectValidation(await api.put(`/templates/${a._id}`, { channel: 'fax' }, admin), ['channel']);
    expect((await api.get(`/templates/${a._id}`, admin)).body).toMatchObject({ ...current, updatedAt: expect.any(String) });

    // A long email body can not move to SMS.
    const long = await makeTemplate(admin, { channel: 'email', subject: 'S', content: 'c'.repeat(10_001) });
    expectValidation(await api.put(`/templates/${long._id}`, { channel: 'sms', subject: null }, admin), ['content']);

    // The moves that keep the rule.
    const toSms = await api.put(`/templates/${a._id}`, { channel: 'sms', subject: null }, admin);
    expect(toSms.status).toBe(200);
    expect(toSms.body).toMatchObject({ channel: 'sms', subject: null, content: 'Dear {{ contact.name }}' });
    const toEmail = await api.put(`/templates/${b._id}`, { channel: 'email', subject: 'Now {{ contact.name }}' }, adminKey);
    expect(toEmail.status).toBe(200);
    expect(toEmail.body).toMatchObject({ channel: 'email', subject: 'Now {{ contact.name }}' });
  });

  test('DELETE answers a message and the template is gone', async () => {
    const t = await makeTemplate(admin);
    const res = await api.delete(`/templates/${t._id}`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Template deleted successfully' });
    expect((await api.get(`/templates/${t._id}`, admin)).status).toBe(404);
    expect((await api.delete(`/templates/${t._id}`, admin)).status).toBe(404);
  });
});

describe('GraphQL', () => {
  test('create, read, list, update and delete through the GraphQL door, with the same rules', async () => {
    const name = `Gql ${uniq()}`;
    const created = await api.gql(
      `mutation ($i: CreateTemplateInput!) { createTemplate(input: $i) { ${FIELDS} } }`,
      { i: { name, channel: 'email', subject: 'Hi {{ contact.name }}', content: 'Body' } },
      admin,
    );
    const t = created.body.data.createTemplate;
    expect(t).toMatchObject({ name, channel: 'email', subject: 'Hi {{ contact.name }}', content: 'Body', organization: org.orgId });
    expect((await api.get(`/templates/${t._id}`, admin)).body).toEqual(t);
    expect((await api.gql(`query ($id: ID!) { template(id: $id) { ${FIELDS} } }`, { id: t._id }, admin)).body.data.template).toEqual(t);
    const list = await api.gql(`{ templates(first: 1000) { totalCount edges { node { _id } } } }`, undefined, admin);
    expect(list.body.data.templates.edges.map((e: any) => e.node._id)).toContain(t._id);

    const dup = await api.gql(`mutation ($i: CreateTemplateInput!) { createTemplate(input: $i) { _id } }`, { i: { name: name.toLowerCase(), channel: 'sms', content: 'c' } }, admin);
    expectGqlError(dup, 400, 'BAD_REQUEST', 'A template with this name already exists');
    const liquid = await api.gql(`mutation ($i: CreateTemplateInput!) { createTemplate(input: $i) { _id } }`, { i: { name: `x ${uniq()}`, channel: 'sms', content: '{% if %}' } }, admin);
    expect(expectGqlError(liquid, 400, 'BAD_REQUEST').message).toMatch(/^content is not a valid template: line 1, column 6: /);
    const noSubject = await api.gql(`mutation { createTemplate(input: { name: "No subject", channel: email, content: "c" }) { _id } }`, undefined, admin);
    expect(expectGqlError(noSubject, 400, 'BAD_REQUEST').message).toBe('subject is required for email');

    // A field left out is kept; an explicit null subject takes it away.
    const kept = await api.gql(`mutation ($id: ID!) { updateTemplate(id: $id, input: { content: "New" }) { subject content } }`, { id: t._id }, admin);
    expect(kept.body.data.updateTemplate).toEqual({ subject: 'Hi {{ contact.name }}', content: 'New' });
    expectGqlError(await api.gql(`mutation ($id: ID!) { updateTemplate(id: $id, input: { channel: sms }) { _id } }`, { id: t._id }, admin), 400, 'BAD_REQUEST');
    const moved = await api.gql(`mutation ($id: ID!) { updateTemplate(id: $id, input: { channel: whatsapp, subject: null }) { channel subject } }`, { id: t._id }, admin);
    expect(moved.body.data.updateTemplate).toEqual({ channel: 'whatsapp', subject: null });

    const del = await api.gql(`mutation ($id: ID!) { deleteTemplate(id: $id) { message } }`, { id: t._id }, admin);
    expect(del.body.data.deleteTemplate).toEqual({ message: 'Template deleted successfully' });
    expectGqlError(await api.gql(`query ($id: ID!) { template(id: $id) { _id } }`, { id: t._id }, admin), 404, 'NOT_FOUND', 'Resource not found');
  });
});
