import { randomBytes } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../fakes/smtp-sink.js';
import { expectGqlError, expectValidation, makeContact } from '../helpers/contacts-groups.js';
import { expectError } from '../helpers/expect.js';
import { liveOrg as liveOrgOf } from '../helpers/live-org.js';
import { heraldWithClient, type Client, type Credential, type Org } from '../helpers/herald.js';

/*
 * platform.md, "Personalised messages" and "Consent", for ad hoc sends and send-to-all, through both
 * doors, on a live-mode Herald: emails reach a real SMTP server (the sink), SMS the gateway fake, so
 * what each recipient is sent is read where a provider would receive it.
 */

let herald: Herald, api: Client, sink: SmtpSink, gateway: SmsGatewayFake;

beforeAll(async () => {
  [sink, gateway] = await Promise.all([startSmtpSink(), startSmsGatewayFake({ apikey: 'key-1', partnerID: '42' })]);
  // No workers: nothing here goes through the queue, and this live Herald must not take other files' jobs.
  ({ herald, api } = await heraldWithClient({ DELIVERY_MODE: 'live', WORKERS: 'false', SMS_API_URL: gateway.url, PROVIDER_TIMEOUT_MS: '2000' }));
});
afterAll(async () => {
  await herald?.stop();
  await Promise.all([sink?.stop(), gateway?.stop()]);
});

/** A fresh organization with its SMS and email credentials set, as its admin would; `cred` is its admin's. */
async function liveOrg(): Promise<Org & { cred: Credential; name: string }> {
  const org = await liveOrgOf(api, { sink });
  const name = (await api.get('/organizations/current', { token: org.token })).body.name as string;
  return { ...org, cred: { token: org.token }, name };
}

const uniqueEmail = (label: string) => `${label}.${randomBytes(4).toString('hex')}@example.com`;
const uniquePhone = () => `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
const logs = async (org: Org) => (await api.get('/message-logs?limit=1000', { token: org.token })).body as any[];
const unitCosts = async (org: Org) => (await herald.db('message_logs').where({ organization_id: org.orgId }).orderBy('created_at')).map((l) => Number(l.unit_cost));

/** The emails the SMTP server received for `to`. */
const mailTo = (to: string): SinkMessage[] => sink.messages.filter((m) => m.envelopeTo.includes(to));
/** A plain-text email's text as written (the parser ends it with a line break). */
const textOf = (m: SinkMessage | undefined) => m?.text?.replace(/\n$/, '');
/** The texts the SMS gateway received for `to` (a sendsms call, or an item of a sendbulk list). */
const smsTo = (to: string): string[] =>
  gateway.calls.flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body])).filter((m: any) => m?.mobile === to.slice(1)).map((m: any) => m.message);

const SEND_GQL = 'mutation($i: SendNotificationInput!) { sendNotification(input: $i) { recipient status error } }';
const TO_ALL_GQL = 'mutation($i: SendToAllInput!) { sendToAll(input: $i) { recipient status error } }';

describe('ad hoc sends: each recipient rendered with its address alone', () => {
  test('REST: an email per recipient, subject and text its own, to the SMTP server; transactional, so no List-Unsubscribe', async () => {
    const org = await liveOrg();
    const [a, b] = [uniqueEmail('ada'), uniqueEmail('bob')];
    // Ada is a contact, with a name: an ad hoc send still knows nothing but the address.
    await makeContact(api, org.cred, { name: 'Ada Lovelace', email: a, attributes: { plan: 'pro' } });
    const before = await credits(org);
    const res = await api.post(
      '/notifications/send',
      { type: 'email', to: [a, b], subject: 'For {{ contact.email }}', message: '<p>Hello {{ contact.email }}{{ contact.name }}{{ contact.attributes.plan }}, from {{ organization.name }}</p>' },
      org.cred,
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { recipient: a, status: 'success' },
      { recipient: b, status: 'success' },
    ]);
    for (const to of [a, b]) {
      const [mail] = mailTo(to);
      // An ad hoc HTML email carries its recipient's open pixel (tracking is on by default: tests/tracking.test.ts).
      expect(mail).toMatchObject({ subject: `For ${to}`, html: expect.stringMatching(/^<p>Hello [^<]+<\/p><img src="[^"]+\/t\/o\/[A-Za-z0-9_-]+" width="1" height="1" alt="" border="0">$/) });
      expect(mail!.html).toContain(`<p>Hello ${to}, from ${org.name}</p>`);
      expect(mail!.headers['list-unsubscribe']).toBeUndefined();
      expect(mail!.headers['list-unsubscribe-post']).toBeUndefined();
    }
    expect(await credits(org)).toBe(before - 1);
    const [log] = await logs(org);
    expect(log).toMatchObject({ cost: 1, messagePreview: `<p>Hello ${a}, from ${org.name}</p>`.slice(0, 100) });
  });

  test('GraphQL: an SMS per recipient; the one whose text crosses 160 characters costs 2 segments, the other 1', async () => {
    const org = await liveOrg();
    const [long, short] = [uniquePhone(), uniquePhone()];
    const padding = 'x'.repeat(150);
    const before = await credits(org);
    const res = await api.gql(
      SEND_GQL,
      { i: { type: 'sms', to: [long, short], message: `Code for {{ contact.phone }}{% if contact.phone == "${long}" %} ${padding}{% endif %}` } },
      org.cred,
    );
    expect(res.body.data.sendNotification).toEqual([
      { recipient: long, status: 'success', error: null },
      { recipient: short, status: 'success', error: null },
    ]);
    expect(smsTo(long)).toEqual([`Code for ${long} ${padding}`]);
    expect(smsTo(short)).toEqual([`Code for ${short}`]);
    expect(await credits(org)).toBe(before - 3);
    const [log] = await logs(org);
    // A personalised log shows its first recipient's text, its longest text's length and its dearest recipient's cost.
    expect(log).toMatchObject({ cost: 3, messagePreview: `Code for ${long} ${padding}`.slice(0, 100), messageLength: `Code for ${long} ${padding}`.length });
    expect(await unitCosts(org)).toEqual([2]);
  });

  test('a long personalised email (not held between pricing and sending) still reaches each recipient with its own text', async () => {
    const org = await liveOrg();
    const to = [uniqueEmail('long1'), uniqueEmail('long2')];
    const filler = 'lorem ipsum '.repeat(500);
    const res = await api.post('/notifications/send', { type: 'email', to, subject: 'Long', message: `Dear {{ contact.email }}, ${filler}` }, org.cred);
    expect(res.body.map((r: any) => r.status)).toEqual(['success', 'success']);
    for (const address of to) expect(mailTo(address).map(textOf)).toEqual([`Dear ${address}, ${filler}`]);
    const [log] = await logs(org);
    expect(log).toMatchObject({ cost: 1, messagePreview: `Dear ${to[0]}, ${filler}`.slice(0, 100), messageLength: `Dear ${to[0]}, ${filler}`.length });
  });

  test('a message that reads only the organization is rendered once and sent alike to every recipient', async () => {
    const org = await liveOrg();
    const to = [uniquePhone(), uniquePhone()];
    const res = await api.post('/notifications/send', { type: 'sms', to, message: 'News from {{ organization.name }}' }, org.cred);
    expect(res.body.map((r: any) => r.status)).toEqual(['success', 'success']);
    for (const phone of to) expect(smsTo(phone)).toEqual([`News from ${org.name}`]);
    const [log] = await logs(org);
    expect(log).toMatchObject({ cost: 2, messagePreview: `News from ${org.name}`, messageLength: `News from ${org.name}`.length });
  });
});

describe('send-to-all: each contact rendered with its contact, consent respected', () => {
  test('REST email and GraphQL SMS: first name and plan per contact; an unsubscribed contact is skipped, uncharged; emails carry one-click List-Unsubscribe', async () => {
    const org = await liveOrg();
    const ada = { name: 'Ada Lovelace', email: uniqueEmail('ada'), phone: uniquePhone(), attributes: { plan: 'pro' } };
    const grace = { name: 'Grace Hopper', email: uniqueEmail('grace'), phone: uniquePhone(), attributes: { plan: 'free' } };
    const leaver = { name: 'Lee Ver', email: uniqueEmail('leaver'), phone: uniquePhone(), attributes: { plan: 'pro' }, subscriptions: { email: 'unsubscribed', sms: 'unsubscribed' } };
    const adaContact = await makeContact(api, org.cred, ada);
    await makeContact(api, org.cred, grace);
    await makeContact(api, org.cred, leaver);

    let before = await credits(org);
    const email = await api.post(
      '/notifications/send-to-all',
      { type: 'email', to: 'all', subject: 'Hi {{ contact.firstName }}', message: 'Your plan: {{ contact.attributes.plan }}' },
      org.cred,
    );
    expect(email.status).toBe(200);
    expect(email.body).toEqual([ada.email, grace.email].sort().map((recipient) => ({ recipient, status: 'success' })));
    expect(await credits(org)).toBe(before - 1);
    expect(mailTo(leaver.email)).toEqual([]);
    const links: Record<string, string> = {};
    for (const [person, first] of [[ada, 'Ada'], [grace, 'Grace']] as const) {
      const [mail] = mailTo(person.email);
      expect(mail?.subject).toBe(`Hi ${first}`);
      expect(textOf(mail)).toBe(`Your plan: ${person.attributes.plan}`);
      expect(mail!.headers['list-unsubscribe']).toMatch(/^<http[^>]*\/u\/[^>]+>$/);
      expect(mail!.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
      links[first] = mail!.headers['list-unsubscribe']!.slice(1, -1);
    }
    // Each link is the recipient's own: Ada's one-click POST unsubscribes Ada alone.
    expect(links.Ada).not.toBe(links.Grace);
    const oneClick = await fetch(herald.url + new URL(links.Ada!).pathname, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBeLessThan(300);
    expect((await api.get(`/contacts/${adaContact._id}`, org.cred)).body.subscriptions.email.status).toBe('unsubscribed');

    before = await credits(org);
    const sms = await api.gql(TO_ALL_GQL, { i: { type: 'sms', message: 'Hi {{ contact.firstName }}, your plan is {{ contact.attributes.plan }}' } }, org.cred);
    expect(sms.body.data.sendToAll).toEqual([ada.phone, grace.phone].sort().map((recipient) => ({ recipient, status: 'success', error: null })));
    expect(smsTo(ada.phone)).toEqual(['Hi Ada, your plan is pro']);
    expect(smsTo(grace.phone)).toEqual(['Hi Grace, your plan is free']);
    expect(smsTo(leaver.phone)).toEqual([]);
    expect(await credits(org)).toBe(before - 2);

    // Ada left email since: the next send-to-all skips her too.
    const again = await api.post('/notifications/send-to-all', { type: 'email', to: 'all', subject: 'Again', message: 'Hello' }, org.cred);
    expect(again.body).toEqual([{ recipient: grace.email, status: 'success' }]);

    // An ad hoc send is transactional: it reaches the unsubscribed address, rendered with the address alone.
    const direct = await api.post('/notifications/send', { type: 'email', to: leaver.email, subject: 'Receipt', message: 'For {{ contact.email }}{{ contact.firstName }}' }, org.cred);
    expect(direct.body).toEqual({ recipient: leaver.email, status: 'success' });
    expect(mailTo(leaver.email).map(textOf)).toEqual([`For ${leaver.email}`]);
    const directSms = await api.gql(SEND_GQL, { i: { type: 'sms', to: [leaver.phone], message: 'Your code is 1234' } }, org.cred);
    expect(directSms.body.data.sendNotification).toEqual([{ recipient: leaver.phone, status: 'success', error: null }]);
    expect(smsTo(leaver.phone)).toEqual(['Your code is 1234']);
  });

  test('an address is skipped when any contact holding it left the channel', async () => {
    const org = await liveOrg();
    const shared = uniqueEmail('shared');
    await makeContact(api, org.cred, { name: 'Stays', email: shared });
    await makeContact(api, org.cred, { name: 'Left', email: shared.toUpperCase(), subscriptions: { email: 'unsubscribed' } });
    const other = await makeContact(api, org.cred, { name: 'Other', email: uniqueEmail('other') });
    const res = await api.post('/notifications/send-to-all', { type: 'email', to: 'all', subject: 'S', message: 'M' }, org.cred);
    expect(res.body).toEqual([{ recipient: other.email, status: 'success' }]);
  });
});

describe('templates that cannot be sent', () => {
  test('a syntax error, an unknown filter and an include are 400 naming the field, line and column, in both doors; nothing is sent', async () => {
    const org = await liveOrg();
    const to = uniquePhone();
    const cases = [
      [{ type: 'sms', to: [to], message: 'Hello\n{% if contact.name %}' }, 'message', 'line 2, column 1'],
      [{ type: 'email', to: [uniqueEmail('x')], subject: 'Hi {{ contact.name | shout }}', message: 'ok' }, 'subject', 'line 1, column 4'],
      [{ type: 'sms', to: [to], message: "a\nb {% include 'x' %}" }, 'message', 'line 2, column 3'],
      [{ type: 'sms', to: 'all', message: 'Hi {{ contact.name ' }, 'message', 'line 1, column 4'],
    ] as const;
    for (const [body, field, where] of cases) {
      const path = body.to === 'all' ? '/notifications/send-to-all' : '/notifications/send';
      const res = await api.post(path, body, org.cred);
      expectValidation(res, [field]);
      expect(res.body.details).toEqual([{ field, message: expect.stringMatching(new RegExp(`^${field} is not a valid template: ${where}: `)) }]);
    }
    const gql = await api.gql(SEND_GQL, { i: { type: 'sms', to: [to], message: 'Hi {{ contact.name | shout }}' } }, org.cred);
    expect(expectGqlError(gql, 400, 'BAD_REQUEST').message).toMatch(/^message is not a valid template: line 1, column 4: .*shout/);
    const gqlAll = await api.gql(TO_ALL_GQL, { i: { type: 'sms', message: "{% render 'x' %}" } }, org.cred);
    expect(expectGqlError(gqlAll, 400, 'BAD_REQUEST').message).toMatch(/^message is not a valid template: line 1, column 1: /);
    expect(smsTo(to)).toEqual([]);
    expect(await logs(org)).toEqual([]);
  });

  test('a render over its limits fails that recipient alone, uncharged; for a single recipient it is a 400 and nothing is logged', async () => {
    const org = await liveOrg();
    const [huge, fine] = [uniqueEmail('huge'), uniqueEmail('fine')];
    // Over a million characters for one recipient only.
    const message = `{% if contact.email == "${huge}" %}{% for i in (1..1001) %}${'y'.repeat(1000)}{% endfor %}{% endif %}ok`;
    const before = await credits(org);
    const res = await api.post('/notifications/send', { type: 'email', to: [huge, fine], subject: 'S', message }, org.cred);
    expect(res.body).toEqual([
      // Its output limit, or on a busy machine the render time limit first: either way that recipient alone fails.
      { recipient: huge, status: 'failed', error: expect.stringMatching(/^Template could not be rendered: (its output exceeds 1000000 characters|template render limit exceeded)$/) },
      { recipient: fine, status: 'success' },
    ]);
    expect(mailTo(huge)).toEqual([]);
    expect(mailTo(fine).map(textOf)).toEqual(['ok']);
    expect(await credits(org)).toBe(before - 0.5);
    const [log] = await logs(org);
    expect(log).toMatchObject({ cost: 0.5, messagePreview: 'ok', recipients: [{ recipient: huge, status: 'failed' }, { recipient: fine, status: 'success' }] });

    // A loop that outlasts the render time limit, and an SMS that renders past the 1600 characters SMS takes.
    const [slow, long, short] = [uniquePhone(), uniquePhone(), uniquePhone()];
    const sms = await api.gql(
      SEND_GQL,
      {
        i: {
          type: 'sms',
          to: [slow, long, short],
          message: `{% if contact.phone == "${slow}" %}{% for i in (1..1000000) %}x{% endfor %}{% endif %}{% if contact.phone == "${long}" %}{% for i in (1..17) %}${'z'.repeat(100)}{% endfor %}{% endif %}hi`,
        },
      },
      org.cred,
    );
    expect(sms.body.data.sendNotification).toEqual([
      { recipient: slow, status: 'failed', error: 'Template could not be rendered: template render limit exceeded' },
      { recipient: long, status: 'failed', error: 'The rendered message is 1702 characters; sms takes at most 1600' },
      { recipient: short, status: 'success', error: null },
    ]);
    expect([...smsTo(slow), ...smsTo(long)]).toEqual([]);
    expect(await credits(org)).toBe(before - 1.5);

    const count = (await logs(org)).length;
    const single = await api.post('/notifications/send', { type: 'email', to: huge, subject: 'S', message }, org.cred);
    expectError(single, 400, 'Template could not be rendered: its output exceeds 1000000 characters');
    expect((await logs(org)).length).toBe(count);
    expect(await credits(org)).toBe(before - 1.5);
  });
});

describe('templateId: a saved template instead of message and subject', () => {
  test('its text is copied and rendered per recipient, in both doors; another organization’s, another channel’s or an unknown one is 400', async () => {
    const org = await liveOrg();
    const other = await liveOrg();
    const smsTemplate = (await api.post('/templates', { name: 'Code', channel: 'sms', content: 'Hi {{ contact.phone }}, from {{ organization.name }}' }, org.cred)).body;
    const emailTemplate = (await api.post('/templates', { name: 'Welcome', channel: 'email', subject: 'Welcome {{ contact.firstName }}', content: 'Plan {{ contact.attributes.plan }}' }, org.cred)).body;
    const theirs = (await api.post('/templates', { name: 'Theirs', channel: 'sms', content: 'Not yours' }, other.cred)).body;

    const phone = uniquePhone();
    const rest = await api.post('/notifications/send', { type: 'sms', to: phone, templateId: smsTemplate._id }, org.cred);
    expect(rest.body).toEqual({ recipient: phone, status: 'success' });
    expect(smsTo(phone)).toEqual([`Hi ${phone}, from ${org.name}`]);

    const ada = await makeContact(api, org.cred, { name: 'Ada Lovelace', email: uniqueEmail('ada'), attributes: { plan: 'pro' } });
    const all = await api.gql(TO_ALL_GQL, { i: { type: 'email', templateId: emailTemplate._id } }, org.cred);
    expect(all.body.data.sendToAll).toEqual([{ recipient: ada.email, status: 'success', error: null }]);
    expect(mailTo(ada.email).map((m) => [m.subject, textOf(m)])).toEqual([['Welcome Ada', 'Plan pro']]);

    const refused = [
      [{ type: 'sms', to: phone, templateId: theirs._id }, 'templateId', /^templateId must name one of the organization's templates$/],
      [{ type: 'sms', to: phone, templateId: '00000000-0000-4000-8000-000000000000' }, 'templateId', /^templateId must name one of the organization's templates$/],
      [{ type: 'email', to: [uniqueEmail('x')], templateId: smsTemplate._id }, 'templateId', /^templateId names a sms template; this send is email$/],
      [{ type: 'sms', to: phone, templateId: smsTemplate._id, message: 'both' }, 'templateId', /^templateId replaces message/],
      [{ type: 'email', to: 'all', templateId: emailTemplate._id, subject: 'mine' }, 'subject', /^subject comes from the template/],
      [{ type: 'sms', to: phone }, 'message', /^message is required, or a templateId$/],
      [{ type: 'sms', to: phone, templateId: 'nope' }, 'templateId', /^templateId must be a valid id$/],
    ] as const;
    for (const [body, field, message] of refused) {
      const res = await api.post(body.to === 'all' ? '/notifications/send-to-all' : '/notifications/send', body, org.cred);
      expectValidation(res, [field]);
      expect(res.body.details).toEqual([{ field, message: expect.stringMatching(message) }]);
    }
    const gql = await api.gql(SEND_GQL, { i: { type: 'sms', to: [phone], templateId: theirs._id } }, org.cred);
    expect(expectGqlError(gql, 400, 'BAD_REQUEST').message).toBe("templateId must name one of the organization's templates");
    expect(smsTo(phone)).toHaveLength(1);
  });
});
