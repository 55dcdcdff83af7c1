import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithOrgs, waitFor, type Client, type Credential, type Org } from '../helpers/herald.js';

/**
 * A message that is not saved yet, rendered for one recipient (`POST /campaigns/preview`,
 * `previewMessage`), and the attribute keys a message can name (`GET /contacts/attribute-keys`,
 * `contactAttributeKeys`): both doors, any member, another organization's contact refused, the
 * render the very one a send produces, the variables left empty, Liquid errors with their place.
 */

let herald: Herald, api: Client, org: Org, other: Org;
let ann: any, bob: any, theirs: any;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  const cred = { token: org.token };
  ann = (await api.post('/contacts', { name: 'Ann Wanjiru', phone: '+254711000101', email: 'ann@example.com', attributes: { plan: 'gold', points: 120 } }, cred)).body;
  // The newest contact: the one a preview without a contact renders for.
  bob = (await api.post('/contacts', { name: 'Bob Otieno', phone: '+254711000102', attributes: { city: 'Kisumu' } }, cred)).body;
  theirs = (await api.post('/contacts', { name: 'Theirs', phone: '+254711000103', attributes: { secret_key: 'x' } }, { token: other.token })).body;
}, 60_000);
afterAll(() => herald?.stop());

const preview = (body: Record<string, unknown>, cred: Credential = { token: org.token }) => api.post('/campaigns/preview', body, cred);

const PREVIEW_FIELDS = 'contactId recipient subject body html length segments encoding cost emptyVariables error';

describe('POST /campaigns/preview and previewMessage', () => {
  const sms = 'Hi {{ contact.firstName }}, your {{ contact.attributes.plan }} plan has {{ contact.attributes.points }} points. {{ campaign.name }}';

  test('renders for the contact named, with segments and cost; the GraphQL answer is the same', async () => {
    const rest = await preview({ channel: 'sms', content: sms, contactId: ann._id, campaignName: 'Spring sale' });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({
      contactId: ann._id,
      recipient: ann.phone,
      subject: null,
      body: 'Hi Ann, your gold plan has 120 points. Spring sale',
      html: false,
      length: 50,
      segments: 1,
      encoding: 'GSM-7',
      cost: herald.deps.config.costs.smsSegment,
      emptyVariables: [],
      error: null,
    });
    const gql = await api.gql(
      `query($input: MessagePreviewInput!) { previewMessage(input: $input) { ${PREVIEW_FIELDS} } }`,
      { input: { channel: 'sms', content: sms, contactId: ann._id, campaignName: 'Spring sale' } },
      { token: org.token },
    );
    expect(gql.body).toEqual({ data: { previewMessage: rest.body } });
  });

  test('names the contact variables that render empty; without a contact it renders for the newest', async () => {
    const res = await preview({ channel: 'sms', content: `Hello {{ contact.firstName }}{% if contact.attributes.plan %}, {{ contact.attributes.plan }}{% endif %} {{ contact.email | default: "" }} {{ contact.attributes.city }}` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ contactId: bob._id, recipient: bob.phone, body: 'Hello Bob  Kisumu' });
    expect(res.body.emptyVariables).toEqual(['contact.attributes.plan', 'contact.email']);

    // An address no contact has: an empty contact but for the address, as a test send to it renders.
    const stranger = await preview({ channel: 'email', subject: 'For {{ contact.name }}', content: 'Hello {{ contact.firstName }}, write to {{ contact.email }}', to: 'QA@Example.com' });
    expect(stranger.body).toMatchObject({ contactId: null, recipient: 'qa@example.com', subject: 'For ', body: 'Hello , write to qa@example.com', cost: herald.deps.config.costs.email });
    expect(stranger.body.emptyVariables).toEqual(['contact.name', 'contact.firstName']);
    // The address of a contact renders as that contact.
    const known = await preview({ channel: 'email', subject: 'For {{ contact.name }}', content: 'Hello {{ contact.firstName }}', to: 'ann@example.com' });
    expect(known.body).toMatchObject({ contactId: ann._id, subject: 'For Ann Wanjiru', body: 'Hello Ann', html: false, emptyVariables: [] });
    // Markup makes an HTML email; the preview carries no tracking (a send adds it per recipient).
    const html = await preview({ channel: 'email', subject: 'News', content: '<p>Hi <strong>{{ contact.firstName }}</strong>, <a href="https://example.com/sale">the sale</a></p>', contactId: ann._id });
    expect(html.body).toMatchObject({ body: '<p>Hi <strong>Ann</strong>, <a href="https://example.com/sale">the sale</a></p>', html: true });
  });

  test('renders exactly what a send of the same text produces', async () => {
    const email = { subject: '{{ contact.firstName }}, {{ campaign.name }}', content: 'Dear {{ contact.name }},\nyour {{ contact.attributes.plan | upcase }} plan.\n{{ organization.name }}' };
    const created = await api.post(
      '/campaigns',
      { name: 'Same render', type: 'targeted', channels: ['sms', 'email'], recipients: { contacts: [ann._id] }, messages: { sms: { content: sms }, email } },
      { token: org.token },
    );
    expect(created.status).toBe(201);
    const [smsPreview, emailPreview] = await Promise.all([
      preview({ channel: 'sms', content: sms, contactId: ann._id, campaignName: 'Same render' }),
      preview({ channel: 'email', ...email, contactId: ann._id, campaignName: 'Same render' }),
    ]);
    expect((await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token })).status).toBe(200);
    const sent = await waitFor(
      async () => (await api.get('/sandbox/outbox?limit=100', { token: org.token })).body as any[],
      (all) => all.filter((m) => m.recipient === ann.phone || m.recipient === ann.email).length >= 2,
    );
    const smsSent = sent.find((m) => m.channel === 'sms' && m.recipient === ann.phone);
    const emailSent = sent.find((m) => m.channel === 'email' && m.recipient === ann.email);
    expect(smsPreview.body.body).toBe(smsSent.body);
    expect(emailPreview.body).toMatchObject({ subject: emailSent.subject, body: emailSent.body });
    expect(emailSent.body).toMatch(/^Dear Ann Wanjiru,\nyour GOLD plan\.\n.+/);
  });

  test('any member and either kind of API key may preview; nothing is sent or logged', async () => {
    const member = await addUser(api, org, 'user');
    const key = await createApiKey(api, org, 'user');
    const logs = async () => (await api.get('/message-logs?limit=1000', { token: org.token })).body.length;
    const before = await logs();
    for (const cred of [{ token: member.token }, { apiKey: key.key }]) {
      const res = await preview({ channel: 'whatsapp', content: 'Hi {{ contact.firstName }}', contactId: ann._id }, cred);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ body: 'Hi Ann', segments: null, encoding: null, cost: herald.deps.config.costs.whatsapp });
    }
    expect(await logs()).toBe(before);
  });

  test("another organization's contact is 404, as is an unknown one, on both doors", async () => {
    const notFound = { statusCode: 404, message: 'Contact not found', error: 'Not Found' };
    expect(await preview({ channel: 'sms', content: 'Hi {{ contact.name }}', contactId: theirs._id })).toMatchObject({ status: 404, body: notFound });
    expect(await preview({ channel: 'sms', content: 'Hi', contactId: '00000000-0000-4000-8000-000000000000' })).toMatchObject({ status: 404, body: notFound });
    const gql = await api.gql(
      `query($input: MessagePreviewInput!) { previewMessage(input: $input) { body } }`,
      { input: { channel: 'sms', content: 'Hi {{ contact.name }}', contactId: theirs._id } },
      { token: org.token },
    );
    expect(gql.body.data).toBeNull();
    expect(gql.body.errors![0].extensions).toMatchObject({ code: 'NOT_FOUND', statusCode: 404 });
    expect(JSON.stringify(gql.body)).not.toContain('Theirs');
  });

  test('a text that is not Liquid is a 400 naming the field, line and column; other rules of the input too', async () => {
    const broken = await preview({ channel: 'email', subject: 'Hi {{ contact.name', content: 'Hello\n{% if contact.name %}open' });
    expect(broken.status).toBe(400);
    expect(broken.body.details).toEqual([
      { field: 'subject', message: expect.stringMatching(/^subject is not a valid template: line 1, column 4: /) },
      { field: 'content', message: expect.stringMatching(/^content is not a valid template: line 2, column 1: /) },
    ]);
    const gql = await api.gql(`query { previewMessage(input: { channel: sms, content: "Hi {{ contact.name" }) { body } }`, {}, { token: org.token });
    expect(gql.body.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
    expect(gql.body.errors![0].message).toMatch(/line 1, column 4/);

    const rules = await preview({ channel: 'sms', subject: 'No', content: 'x'.repeat(1601), to: 'someone@example.com' });
    expect(rules.status).toBe(400);
    expect(rules.body.details.map((d: any) => d.field).sort()).toEqual(['content', 'subject', 'to']);
    expect((await preview({ channel: 'sms', content: 'Hi', to: '+254711000101', contactId: ann._id })).body.details).toEqual([{ field: 'to', message: 'give either contactId or to' }]);
  });

  test('a render that fails is answered as the error a send would fail with', async () => {
    const res = await preview({ channel: 'sms', content: '{{ contact.attributes.plan }}{% for i in (1..2000) %}xx{% endfor %}', contactId: ann._id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ body: null, error: expect.stringMatching(/sms takes at most 1600/) });
  });
});

describe('GET /contacts/attribute-keys and contactAttributeKeys', () => {
  test("the keys of the organization's contacts, sorted, never another organization's; any member", async () => {
    const member = await addUser(api, org, 'user');
    const rest = await api.get('/contacts/attribute-keys', { token: member.token });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(['city', 'plan', 'points']);
    const gql = await api.gql('{ contactAttributeKeys }', {}, { apiKey: (await createApiKey(api, org, 'user')).key });
    expect(gql.body).toEqual({ data: { contactAttributeKeys: ['city', 'plan', 'points'] } });
    expect((await api.get('/contacts/attribute-keys', { token: other.token })).body).toEqual(['secret_key']);
    expect((await api.get('/contacts/attribute-keys')).status).toBe(401);
  });
});
