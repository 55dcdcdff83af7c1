import { randomBytes } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../fakes/smtp-sink.js';
import { liveOrg as liveOrgOf } from '../helpers/live-org.js';
import { client, isolatedDatabase, startTestHerald, type Client, type Org } from '../helpers/herald.js';

/**
 * Personalised campaigns and consent (platform.md, "Personalised messages" and "Consent") at the
 * real SMTP server and the SMS gateway fake: each recipient's own text, per-recipient SMS cost,
 * template errors, preview, estimate, suppression of unsubscribed contacts, and the unsubscribe
 * headers and link of a received campaign email.
 */

let db: { url: string; drop(): Promise<void> };
let herald: Herald;
let api: Client;
let gateway: SmsGatewayFake;
let sink: SmtpSink;

beforeAll(async () => {
  [gateway, sink] = await Promise.all([startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' }), startSmtpSink()]);
  db = await isolatedDatabase(`personal_${randomBytes(3).toString('hex')}`);
  herald = await startTestHerald({ DATABASE_URL: db.url, DELIVERY_MODE: 'live', SMS_API_URL: gateway.url, CAMPAIGN_INLINE_LIMIT: '1000' });
  api = client(herald.url);
}, 60_000);

afterAll(async () => {
  await herald?.stop();
  await Promise.all([gateway?.stop(), sink?.stop()]);
  await db?.drop();
});

beforeEach(() => {
  gateway.reset();
  gateway.calls.length = 0;
  sink.messages.length = 0;
});

/** A fresh organization with SMS and email credentials. */
const liveOrg = () => liveOrgOf(api, { sink });

let serial = 0;
const phone = () => `+25471${String(1_000_000 + serial++).padStart(7, '0')}`;

async function contact(org: Org, body: Record<string, unknown>) {
  const res = await api.post('/contacts', { phone: phone(), ...body }, { token: org.token });
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function campaign(org: Org, body: Record<string, unknown>) {
  return api.post('/campaigns', { name: 'Spring sale', type: 'broadcast', channels: ['sms'], ...body }, { token: org.token });
}

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;

/** The SMS texts the gateway received, by number (E.164). */
const smsTexts = () =>
  new Map<string, string>(
    gateway.calls.flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body])).map((m: any) => [`+${m.mobile}`, m.message]),
  );
const mailTo = (address: string) => sink.messages.find((m) => m.envelopeTo.includes(address)) as SinkMessage;

describe('a personalised campaign', () => {
  let org: Org;
  let ann: any;
  let bob: any;
  let long: any;

  beforeAll(async () => {
    org = await liveOrg();
    ann = await contact(org, { name: 'Ann Wanjiru', email: 'ann@example.com', attributes: { plan: 'gold' } });
    bob = await contact(org, { name: 'Bob Otieno', email: 'bob@example.com', attributes: { plan: 'basic' } });
    long = await contact(org, { name: 'Lucy Nyambura', attributes: { plan: 'silver', note: 'Thank you for twelve years with us: your loyalty gift is waiting for you at our shop on Moi Avenue.' } });
  });

  const text = 'Hi {{ contact.firstName }}, your {{ contact.attributes.plan | default: "free" }} plan renews soon. {{ organization.name }}';

  test('each recipient gets its own email and SMS; an SMS over 160 characters costs its segments', async () => {
    const created = await campaign(org, {
      channels: ['sms', 'email'],
      messages: {
        sms: { content: `${text} {{ contact.name }}{% if contact.attributes.note %} {{ contact.attributes.note }}{% endif %}` },
        email: { subject: '{{ contact.firstName }}, {{ campaign.name }}', content: `<p>${text}</p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>` },
      },
    });
    expect(created.status).toBe(201);
    const before = await credits(org);
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    expect(launched.status).toBe(200);
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 5, failed: 0, suppressed: 0 } });

    const texts = smsTexts();
    const organization = (await api.get('/organizations/current', { token: org.token })).body.name;
    expect(texts.get(ann.phone)).toBe(`Hi Ann, your gold plan renews soon. ${organization} Ann Wanjiru`);
    expect(texts.get(bob.phone)).toMatch(/^Hi Bob, your basic plan renews soon\. .+ Bob Otieno$/);
    expect(texts.get(long.phone)).toMatch(/^Hi Lucy, your silver plan renews soon\./);
    expect(texts.get(long.phone)!.length).toBeGreaterThan(160);

    await sink.waitForMessages(2);
    const annMail = mailTo('ann@example.com');
    expect(annMail.subject).toBe('Ann, Spring sale');
    expect(annMail.html).toContain('Hi Ann, your gold plan renews soon.');
    expect(mailTo('bob@example.com').html).toContain('Hi Bob, your basic plan renews soon.');

    // Email 1 credit each by default, SMS per segment: two one-segment texts and one of two.
    const logs = (await api.get(`/message-logs?campaignId=${created.body._id}&limit=100`, { token: org.token })).body as any[];
    const cost = logs.reduce((sum, l) => sum + l.cost, 0);
    const rates = herald.deps.config.costs;
    expect(cost).toBeCloseTo(2 * rates.email + 4 * rates.smsSegment, 5);
    expect(before - (await credits(org))).toBeCloseTo(cost, 5);
  });

  test('every campaign email carries List-Unsubscribe and one-click List-Unsubscribe-Post, and its link unsubscribes', async () => {
    const created = await campaign(org, { channels: ['email'], messages: { email: { subject: 'News', content: 'Plain news' } } });
    await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    await sink.waitForMessages(2);
    const mail = mailTo('bob@example.com');
    expect(mail.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    const link = /^<(https?:\/\/[^>]+\/u\/[A-Za-z0-9_-]+)>$/.exec(mail.headers['list-unsubscribe']!)![1]!;
    expect(link.startsWith(herald.deps.config.publicUrl)).toBe(true);
    const path = new URL(link).pathname;

    // The page changes nothing; the RFC 8058 POST unsubscribes at once.
    expect((await fetch(`${herald.url}${path}`)).status).toBe(200);
    expect((await api.get(`/contacts/${bob._id}`, { token: org.token })).body.subscriptions.email.status).toBe('subscribed');
    const oneClick = await fetch(`${herald.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect((await api.get(`/contacts/${bob._id}`, { token: org.token })).body.subscriptions.email).toMatchObject({ status: 'unsubscribed', source: 'one-click' });

    // The next campaign skips Bob: not sent, not charged, counted as suppressed (here and in the estimate).
    sink.messages.length = 0;
    const next = await campaign(org, { channels: ['email'], messages: { email: { subject: 'More news', content: 'More' } } });
    const estimate = await api.get(`/campaigns/${next.body._id}/estimate`, { token: org.token });
    expect(estimate.body).toMatchObject({ recipients: 1, suppressed: 1, channels: [{ channel: 'email', recipients: 1, suppressed: { unsubscribed: 1 } }] });
    const before = await credits(org);
    const launched = await api.post(`/campaigns/${next.body._id}/launch`, {}, { token: org.token });
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 1, suppressed: 1 } });
    await sink.waitForMessages(1);
    expect(sink.messages.map((m) => m.envelopeTo).flat()).toEqual(['ann@example.com']);
    expect(before - (await credits(org))).toBeCloseTo(herald.deps.config.costs.email, 5);
  });
});

describe('consent in campaigns', () => {
  test('an unsubscribed contact, and a manual address that is its number, are skipped, uncharged and counted', async () => {
    const org = await liveOrg();
    const stays = await contact(org, { name: 'Stays' });
    const leaves = await contact(org, { name: 'Leaves', subscriptions: { sms: 'unsubscribed' } });
    const created = await campaign(org, { recipients: { contacts: [stays._id], manual: [leaves.phone] }, messages: { sms: { content: 'Hello {{ contact.name }}' } } });
    const estimate = await api.get(`/campaigns/${created.body._id}/estimate`, { token: org.token });
    expect(estimate.body).toMatchObject({ recipients: 1, suppressed: 1, cost: herald.deps.config.costs.smsSegment });
    const before = await credits(org);
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    expect(launched.body.analytics).toMatchObject({ sent: 1, failed: 0, suppressed: 1 });
    expect([...smsTexts().keys()]).toEqual([stays.phone]);
    expect(before - (await credits(org))).toBeCloseTo(herald.deps.config.costs.smsSegment, 5);
  });
});

describe('templates in campaigns', () => {
  let org: Org;
  beforeAll(async () => {
    org = await liveOrg();
  });

  test.each([
    ['a syntax error', 'Hi {{ contact.name', /messages\.sms\.content is not a valid template: line 1, column \d+/],
    ['an unknown filter', 'Hi {{ contact.name | shout }}', /messages\.sms\.content is not a valid template: line 1, column \d+: .*shout/],
    ['an include', "Hi {% include 'header' %}", /messages\.sms\.content is not a valid template: line 1, column 4/],
  ])('%s is a 400 naming the field, line and column', async (_what, content, message) => {
    const res = await campaign(org, { messages: { sms: { content } } });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ field: 'messages.sms.content', message: expect.stringMatching(message) }]);
  });

  test('an email subject that is not a template is named too, on update as on create', async () => {
    const created = await campaign(org, { channels: ['email'], messages: { email: { subject: 'Hi', content: 'Body' } } });
    const res = await api.put(`/campaigns/${created.body._id}`, { messages: { email: { subject: '{% if %}', content: 'Body' } } }, { token: org.token });
    expect(res.status).toBe(400);
    expect(res.body.details[0]).toMatchObject({ field: 'messages.email.subject', message: expect.stringMatching(/is not a valid template: line 1, column \d+: /) });
  });

  test('a render over its limits fails that recipient, uncharged', async () => {
    await contact(org, { name: 'Looper' });
    const created = await campaign(org, { messages: { sms: { content: '{% for i in (1..2000000) %}{{ contact.name }}{% endfor %}' } } });
    expect(created.status).toBe(201);
    const before = await credits(org);
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 0, failed: 1 } });
    const [log] = (await api.get(`/message-logs?campaignId=${created.body._id}`, { token: org.token })).body;
    expect(log.recipients[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/^Template could not be rendered: /) });
    expect(gateway.calls).toHaveLength(0);
    expect(await credits(org)).toBe(before);
  });

  test('templateId through GraphQL: the saved text is copied, content and subject left null', async () => {
    const email = await api.post('/templates', { name: 'Digest', channel: 'email', subject: 'Digest for {{ contact.firstName }}', content: '<p>News</p>' }, { token: org.token });
    const res = await api.gql(
      `mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { messages { email { templateId subject content } } } }`,
      { input: { name: 'Digest', type: 'broadcast', channels: ['email'], messages: { email: { templateId: email.body._id, subject: null, content: null } } } },
      { token: org.token },
    );
    expect(res.body).toEqual({ data: { createCampaign: { messages: { email: { templateId: email.body._id, subject: 'Digest for {{ contact.firstName }}', content: '<p>News</p>' } } } } });
  });

  test('templateId: the saved template is copied, again at launch; another organization\'s is refused', async () => {
    const other = await liveOrg();
    const theirs = await api.post('/templates', { name: 'Theirs', channel: 'sms', content: 'Not yours' }, { token: other.token });
    const refused = await campaign(org, { messages: { sms: { templateId: theirs.body._id } } });
    expect(refused.status).toBe(400);
    expect(refused.body.details).toEqual([{ field: 'messages.sms.templateId', message: 'messages.sms.templateId is not a template of this organization' }]);

    const ours = await api.post('/templates', { name: 'Welcome', channel: 'sms', content: 'Welcome {{ contact.firstName }}' }, { token: org.token });
    const pinned = await contact(org, { name: 'Pat Kamau' });
    const created = await campaign(org, { recipients: { contacts: [pinned._id] }, messages: { sms: { templateId: ours.body._id } } });
    expect(created.status).toBe(201);
    expect(created.body.messages).toEqual({ sms: { templateId: ours.body._id, content: 'Welcome {{ contact.firstName }}' } });
    await api.put(`/templates/${ours.body._id}`, { content: 'Karibu {{ contact.firstName }}' }, { token: org.token });
    await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    expect(smsTexts().get(pinned.phone)).toBe('Karibu Pat');
    const launched = await api.get(`/campaigns/${created.body._id}`, { token: org.token });
    expect(launched.body.messages.sms.content).toBe('Karibu {{ contact.firstName }}');
  });
});

describe('launch prices a personalised SMS at its longest render', () => {
  const note = 'Thank you for twelve years with us: your loyalty gift is waiting for you at our shop on Moi Avenue, open every day from eight in the morning to six in the evening, Sundays too.';
  const text = 'Hi {{ contact.firstName }}{% if contact.attributes.note %}. {{ contact.attributes.note }}{% endif %}';

  /** An organization with two contacts whose texts take one segment and one whose text takes two. */
  async function orgWithLongText(on: Client) {
    const org = await liveOrgOf(on, { sink });
    for (const body of [{ name: 'Ann' }, { name: 'Bob' }, { name: 'Lucy', attributes: { note } }]) {
      const res = await on.post('/contacts', { phone: phone(), ...body }, { token: org.token });
      expect(res.status).toBe(201);
    }
    const created = await on.post('/campaigns', { name: 'Loyalty', type: 'broadcast', channels: ['sms'], messages: { sms: { content: text } } }, { token: org.token });
    expect(created.status).toBe(201);
    return { org, id: created.body._id as string };
  }

  test('every recipient is held at the longest render (two segments): a balance short of that is refused, 402, with nothing written', async () => {
    const segment = herald.deps.config.costs.smsSegment;
    const { org, id } = await orgWithLongText(api);
    // The texts as rendered cost 4 segments; the launch holds 2 for each of the 3 recipients.
    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 5 * segment });
    const refused = await api.post(`/campaigns/${id}/launch`, {}, { token: org.token });
    expect(refused.status).toBe(402);
    expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.status).toBe('draft');
    expect(await herald.db('campaign_batches').where({ organization_id: org.orgId, campaign_id: id })).toEqual([]);
    expect(gateway.calls).toHaveLength(0);

    await herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 6 * segment });
    const launched = await api.post(`/campaigns/${id}/launch`, {}, { token: org.token });
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 3, failed: 0 } });
    // Sent, the texts cost what they rendered to; the rest of what was held is given back.
    expect(await credits(org)).toBeCloseTo(2 * segment, 5);
    expect(smsTexts().size).toBe(3);
  });

  test('with a database pool of one connection, the price read beside the launch waits its turn instead of blocking it', async () => {
    const single = await startTestHerald({ DATABASE_URL: db.url, DELIVERY_MODE: 'live', SMS_API_URL: gateway.url, CAMPAIGN_INLINE_LIMIT: '1000', DATABASE_POOL_MAX: '1', WORKERS: 'false' });
    try {
      const on = client(single.url);
      const { org, id } = await orgWithLongText(on);
      await single.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 5 * single.deps.config.costs.smsSegment });
      expect((await on.post(`/campaigns/${id}/launch`, {}, { token: org.token })).status).toBe(402);
      await single.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: 100 });
      const launched = await on.post(`/campaigns/${id}/launch`, {}, { token: org.token });
      expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 3, failed: 0 } });
    } finally {
      await single.stop();
    }
  }, 30_000);
});

describe('preview and estimate, both doors', () => {
  test('preview renders for a contact or the first recipient, with segments and cost; the estimate counts without writing', async () => {
    const org = await liveOrg();
    const rose = await contact(org, { name: 'Rose Achieng', attributes: { points: 120 } });
    const created = await campaign(org, {
      recipients: { contacts: [rose._id] },
      messages: { sms: { content: 'Hi {{ contact.firstName }}, you have {{ contact.attributes.points }} points' } },
    });
    const id = created.body._id;
    const rest = await api.post(`/campaigns/${id}/preview`, { contactId: rose._id }, { token: org.token });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({
      contactId: rose._id,
      messages: [
        { channel: 'sms', recipient: rose.phone, subject: null, text: 'Hi Rose, you have 120 points', html: false, segments: 1, encoding: 'GSM-7', cost: herald.deps.config.costs.smsSegment, error: null, sendsAt: null },
      ],
    });
    const first = await api.post(`/campaigns/${id}/preview`, {}, { token: org.token });
    expect(first.body).toEqual(rest.body);

    const gql = await api.gql(
      `query($id: ID!, $contactId: ID) {
         campaignPreview(id: $id, contactId: $contactId) { contactId messages { channel recipient text segments cost error } }
         campaignEstimate(id: $id) { recipients suppressed capped waiting nextOpeningAt cost balance channels { channel recipients unitCost cost suppressed { unsubscribed listed } capped zones { timezone } } }
       }`,
      { id, contactId: rose._id },
      { token: org.token },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.campaignPreview.messages[0].text).toBe('Hi Rose, you have 120 points');
    expect(gql.body.data.campaignEstimate).toEqual({
      recipients: 1,
      suppressed: 0,
      capped: 0,
      waiting: 0,
      nextOpeningAt: null,
      cost: herald.deps.config.costs.smsSegment,
      balance: await credits(org),
      channels: [
        {
          channel: 'sms',
          recipients: 1,
          unitCost: herald.deps.config.costs.smsSegment,
          cost: herald.deps.config.costs.smsSegment,
          suppressed: { unsubscribed: 0, listed: 0 },
          capped: 0,
          zones: [],
        },
      ],
    });
    const restEstimate = await api.get(`/campaigns/${id}/estimate`, { token: org.token });
    expect(restEstimate.body).toEqual(gql.body.data.campaignEstimate);
    // Nothing was written: the campaign is still a draft.
    expect((await api.get(`/campaigns/${id}`, { token: org.token })).body.status).toBe('draft');
  });

  test('a test send renders as a launch would, is logged test: true under the campaign, charged, never in its analytics', async () => {
    const org = await liveOrg();
    const tess = await contact(org, { name: 'Tess Moraa', email: 'tess@example.com' });
    const created = await campaign(org, {
      channels: ['sms', 'email'],
      recipients: { contacts: [tess._id] },
      messages: { sms: { content: 'Hi {{ contact.firstName | default: "there" }}' }, email: { subject: 'For {{ contact.name | default: "you" }}', content: 'Hello' } },
    });
    const id = created.body._id;
    const before = await credits(org);
    const rest = await api.post(`/campaigns/${id}/test`, { to: [tess.phone, 'qa@example.com'] }, { token: org.token });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual([
      { recipient: tess.phone, status: 'success' },
      { recipient: 'qa@example.com', status: 'success' },
    ]);
    expect(smsTexts().get(tess.phone)).toBe('Hi Tess');
    await sink.waitForMessages(1);
    expect(mailTo('qa@example.com').subject).toBe('For you');
    expect(mailTo('qa@example.com').headers['list-unsubscribe']).toMatch(/\/u\//);

    const gql = await api.gql(
      'mutation($id: ID!, $to: [String!]!) { testCampaign(id: $id, to: $to) { recipient status } }',
      { id, to: ['+254799000111'] },
      { token: org.token },
    );
    expect(gql.body).toEqual({ data: { testCampaign: [{ recipient: '+254799000111', status: 'success' }] } });
    expect(smsTexts().get('+254799000111')).toBe('Hi there');

    const logs = (await api.get(`/message-logs?campaignId=${id}`, { token: org.token })).body as any[];
    expect(logs).toHaveLength(3);
    expect(logs.every((l) => l.test === true)).toBe(true);
    expect(before - (await credits(org))).toBeCloseTo(2 * herald.deps.config.costs.smsSegment + herald.deps.config.costs.email, 5);
    const after = await api.get(`/campaigns/${id}`, { token: org.token });
    expect(after.body).toMatchObject({ status: 'draft', analytics: { sent: 0, failed: 0 } });

    const tooMany = await api.post(`/campaigns/${id}/test`, { to: Array.from({ length: 11 }, (_, i) => `+2547990001${String(i).padStart(2, '0')}`) }, { token: org.token });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details[0].field).toBe('to');
  });

  test('another organization\'s contact is refused by preview, and its campaign is 403 to preview, estimate and test send', async () => {
    const [a, b] = [await liveOrg(), await liveOrg()];
    const theirs = await contact(b, { name: 'Theirs' });
    const created = await campaign(a, { messages: { sms: { content: 'Hi' } } });
    const preview = await api.post(`/campaigns/${created.body._id}/preview`, { contactId: theirs._id }, { token: a.token });
    expect(preview.status).toBe(400);
    expect(preview.body.details).toEqual([{ field: 'contactId', message: 'contactId is not a contact of this organization' }]);
    const forbidden = { statusCode: 403, message: 'Insufficient permissions', error: 'Forbidden' };
    expect((await api.get(`/campaigns/${created.body._id}/estimate`, { token: b.token })).body).toEqual(forbidden);
    expect((await api.post(`/campaigns/${created.body._id}/preview`, {}, { token: b.token })).body).toEqual(forbidden);
    expect((await api.post(`/campaigns/${created.body._id}/test`, { to: ['+254799000222'] }, { token: b.token })).body).toEqual(forbidden);
    expect(smsTexts().has('+254799000222')).toBe(false);
  });
});
