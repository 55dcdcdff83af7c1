import type { Herald } from '../../src/server.js';
import { smsShape } from '../../src/delivery/cost.js';
import { makeContact, nextLink } from '../helpers/contacts-groups.js';
import { createApiKey, addUser, heraldWithClient, signupOrg, type Client, type Org, UUID_RE } from '../helpers/herald.js';

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient()));
afterAll(() => herald?.stop());

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
const setCredits = (org: Org, n: number) => herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits: n });
const outbox = async (org: Org) => (await api.get('/sandbox/outbox?limit=1000', { token: org.token })).body as any[];
const logs = async (org: Org, query = '') => (await api.get(`/message-logs${query}`, { token: org.token })).body as any[];

describe('segment counting', () => {
  test.each([
    ['a'.repeat(160), 'GSM-7', 1],
    ['a'.repeat(161), 'GSM-7', 2],
    ['a'.repeat(306), 'GSM-7', 2],
    ['a'.repeat(307), 'GSM-7', 3],
    ['{'.repeat(80), 'GSM-7', 1],
    ['{'.repeat(81), 'GSM-7', 2],
    ['é'.repeat(160), 'GSM-7', 1],
    ['ć'.repeat(70), 'UCS-2', 1],
    ['ć'.repeat(71), 'UCS-2', 2],
    ['😀'.repeat(35), 'UCS-2', 1],
    ['😀'.repeat(36), 'UCS-2', 2],
  ])('%#: %s', (message, encoding, segments) => {
    expect(smsShape(message)).toMatchObject({ encoding, segments });
  });
});

describe('POST /notifications/send', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('one recipient: 200 { recipient, status }, logged, charged one segment, in the outbox', async () => {
    const before = await credits(org);
    const res = await api.post('/notifications/send', { type: 'sms', to: '0712345678', message: 'Hello there' }, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ recipient: '+254712345678', status: 'success' });
    expect(await credits(org)).toBe(before - 1);
    const [log] = await logs(org, '?channel=sms&limit=1');
    expect(log).toMatchObject({
      channel: 'sms',
      senderUserId: org.user._id,
      senderOrgId: org.orgId,
      network: 'sandbox',
      recipients: [{ recipient: '+254712345678', status: 'success' }],
      messagePreview: 'Hello there',
      messageLength: 11,
      cost: 1,
      campaignId: null,
    });
    expect((await outbox(org)).find((m) => m.recipient === '+254712345678')).toMatchObject({ channel: 'sms', body: 'Hello there', status: 'success' });
  });

  test('one failing recipient: 502 naming the reason, logged as failed, not charged', async () => {
    const before = await credits(org);
    const res = await api.post('/notifications/send', { type: 'sms', to: '+254712340000', message: 'Hi' }, { token: org.token });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ statusCode: 502, message: 'Sandbox: delivery to a reserved failing address', error: 'Bad Gateway' });
    expect(await credits(org)).toBe(before);
    const [log] = await logs(org, '?status=failed&limit=1');
    expect(log.recipients).toEqual([{ recipient: '+254712340000', status: 'failed', error: 'Sandbox: delivery to a reserved failing address' }]);
    expect(log.cost).toBe(0);
  });

  test('an invalid single address is 400 and nothing is logged', async () => {
    const count = (await logs(org, '?limit=1000')).length;
    const res = await api.post('/notifications/send', { type: 'email', to: 'not-an-email', subject: 'S', message: 'M' }, { token: org.token });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/to must be a valid email/);
    expect((await logs(org, '?limit=1000')).length).toBe(count);
  });

  test('many recipients: 200 with one item each, duplicates once, failures included', async () => {
    const before = await credits(org);
    const res = await api.post(
      '/notifications/send',
      { type: 'email', to: ['a@example.com', 'A@Example.com', 'b@fail.invalid', 'nope'], subject: 'Hello', message: '<p>Hi</p>' },
      { token: org.token },
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { recipient: 'a@example.com', status: 'success' },
      { recipient: 'b@fail.invalid', status: 'failed', error: 'Sandbox: delivery to a reserved failing address' },
      { recipient: 'nope', status: 'failed', error: 'Invalid email address' },
    ]);
    expect(await credits(org)).toBe(before - 0.5);
  });

  test('every recipient failing is still 200 for an array', async () => {
    const res = await api.post('/notifications/send', { type: 'whatsapp', to: ['+254712340000', 'xyz'], message: 'Hi' }, { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body.map((r: any) => r.status)).toEqual(['failed', 'failed']);
  });

  test('validation: type, to, message, subject for email, attachments only for email, lengths, unknown fields', async () => {
    const bad = [
      [{ to: 'x', message: 'm' }, /type is required/],
      [{ type: 'fax', to: 'x', message: 'm' }, /type must be one of sms, email, whatsapp/],
      [{ type: 'sms', message: 'm' }, /to is required/],
      [{ type: 'sms', to: [], message: 'm' }, /to /],
      [{ type: 'sms', to: '0712345678' }, /message is required/],
      [{ type: 'email', to: 'a@example.com', message: 'm' }, /subject is required for email/],
      [{ type: 'sms', to: '0712345678', message: 'x'.repeat(1601) }, /message must be at most 1600 characters/],
      [{ type: 'sms', to: '0712345678', message: 'm', attachments: [{ filename: 'a.txt', content: 'aGk=', contentType: 'text/plain' }] }, /attachments are only for email/],
      [{ type: 'sms', to: '0712345678', message: 'm', cost: 0 }, /cost is not allowed/],
    ] as const;
    for (const [body, message] of bad) {
      const res = await api.post('/notifications/send', body, { token: org.token });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body).sort()).toEqual(['details', 'error', 'message', 'statusCode']);
      expect(res.body.message).toMatch(message);
    }
  });

  test('email attachments are recorded with their size', async () => {
    const content = Buffer.from('hello attachment').toString('base64');
    const res = await api.post(
      '/notifications/send',
      { type: 'email', to: 'att@example.com', subject: 'Files', message: 'See attached', attachments: [{ filename: 'a.txt', content, contentType: 'text/plain' }] },
      { token: org.token },
    );
    expect(res.status).toBe(200);
    const sent = (await outbox(org)).find((m) => m.recipient === 'att@example.com');
    expect(sent).toMatchObject({ subject: 'Files', attachments: [{ filename: 'a.txt', contentType: 'text/plain', size: 16 }] });
  });

  test('402 when credits are short, and nothing is sent or logged', async () => {
    const poor = await signupOrg(api);
    await setCredits(poor, 1);
    const res = await api.post('/notifications/send', { type: 'sms', to: ['0712345671', '0712345672'], message: 'Hi' }, { token: poor.token });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ statusCode: 402, error: 'Payment Required' });
    expect(await logs(poor)).toEqual([]);
    expect(await outbox(poor)).toEqual([]);
    expect(await credits(poor)).toBe(1);
  });

  test('a two-segment SMS costs 2 credits per recipient', async () => {
    const before = await credits(org);
    await api.post('/notifications/send', { type: 'sms', to: ['0712345673', '0712345674'], message: 'a'.repeat(161) }, { token: org.token });
    expect(await credits(org)).toBe(before - 4);
  });

  test('20 concurrent sends racing for the last credits never overdraw', async () => {
    const racer = await signupOrg(api);
    await setCredits(racer, 5);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post('/notifications/send', { type: 'sms', to: `07123456${String(i).padStart(2, '0')}`, message: 'race' }, { token: racer.token }),
      ),
    );
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(5);
    expect(results.filter((r) => r.status === 402).length).toBe(15);
    expect(await credits(racer)).toBe(0);
    expect((await outbox(racer)).length).toBe(5);
  });

  test('recipients with quotes, backslashes, braces and commas are logged exactly as given', async () => {
    const odd = ['we"ird\\,{x}', 'a}"b\\"', 'NULL', ''.padEnd(3, ',')];
    const res = await api.post('/notifications/send', { type: 'email', to: ['odd@example.com', ...odd], subject: 's', message: 'm' }, { token: org.token });
    expect(res.status).toBe(200);
    const [log] = await logs(org, '?channel=email&limit=1');
    expect(log.recipients).toEqual([
      { recipient: 'odd@example.com', status: 'success' },
      ...odd.map((recipient) => ({ recipient, status: 'failed', error: 'Invalid email address' })),
    ]);
  });

  test('a user-role caller and API keys (header and query) may send', async () => {
    const user = await addUser(api, org, 'user');
    const { key } = await createApiKey(api, org, 'user');
    expect((await api.post('/notifications/send', { type: 'sms', to: '0712345690', message: 'u' }, { token: user.token })).status).toBe(200);
    expect((await api.post('/notifications/send', { type: 'sms', to: '0712345691', message: 'k' }, { apiKey: key })).status).toBe(200);
    expect((await api.post('/notifications/send', { type: 'sms', to: '0712345692', message: 'q' }, { queryKey: key })).status).toBe(200);
  });
});

describe('Idempotency-Key', () => {
  test('a repeat returns the first answer and sends nothing; another body is 422', async () => {
    const org = await signupOrg(api);
    const body = { type: 'sms', to: ['0712345601', '0712345602'], message: 'once' };
    const first = await api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'abc-1' });
    const again = await api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'abc-1' });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await outbox(org)).length).toBe(2);
    const other = await api.post('/notifications/send', { ...body, message: 'twice' }, { token: org.token }, { 'idempotency-key': 'abc-1' });
    expect(other.status).toBe(422);
    expect(other.body.error).toBe('Unprocessable Entity');
    // Keys belong to one organization: another may use the same key.
    const org2 = await signupOrg(api);
    expect((await api.post('/notifications/send', body, { token: org2.token }, { 'idempotency-key': 'abc-1' })).status).toBe(200);
  });

  test('a failed single send is replayed as the same 502', async () => {
    const org = await signupOrg(api);
    const body = { type: 'sms', to: '0712340000', message: 'fails' };
    const first = await api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'f-1' });
    const again = await api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'f-1' });
    expect(first.status).toBe(502);
    expect(again).toMatchObject({ status: 502, body: first.body });
    expect((await outbox(org)).length).toBe(1);
  });

  test('a repeat while the first is running is 409', async () => {
    const org = await signupOrg(api);
    const many = Array.from({ length: 300 }, (_, i) => `+2547123${String(i).padStart(5, '0')}`);
    const body = { type: 'sms', to: many, message: 'slow' };
    await setCredits(org, 1000);
    const [a, b] = await Promise.all([
      api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'slow-1' }),
      new Promise((r) => setTimeout(r, 5)).then(() => api.post('/notifications/send', body, { token: org.token }, { 'idempotency-key': 'slow-1' })),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
  });
});

describe('POST /notifications/send-to-all', () => {
  test('every contact with an address for the channel, once; none is 200 []', async () => {
    const org = await signupOrg(api);
    expect((await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'x' }, { token: org.token })).body).toEqual([]);
    for (const c of [
      { name: 'A', phone: '0712345611', email: 'a@example.com' },
      { name: 'B', phone: '+254712345611' },
      { name: 'C', email: 'c@example.com' },
    ]) {
      expect((await api.post('/contacts', c, { token: org.token })).status).toBe(201);
    }
    const sms = await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'Hi all' }, { token: org.token });
    expect(sms.status).toBe(200);
    expect(sms.body).toEqual([{ recipient: '+254712345611', status: 'success' }]);
    const email = await api.post('/notifications/send-to-all', { type: 'email', to: 'all', subject: 'S', message: 'Hi' }, { token: org.token });
    expect(email.body.map((r: any) => r.recipient).sort()).toEqual(['a@example.com', 'c@example.com']);
    expect((await api.post('/notifications/send-to-all', { type: 'sms', to: ['x'], message: 'x' }, { token: org.token })).status).toBe(400);
  });
});

describe('message logs', () => {
  test('filters combine, invalid values are 400, and other organizations see nothing', async () => {
    const org = await signupOrg(api);
    await api.post('/notifications/send', { type: 'sms', to: ['0712345621', '0712340000'], message: 'mixed' }, { token: org.token });
    await api.post('/notifications/send', { type: 'email', to: 'ok@example.com', subject: 'S', message: 'fine' }, { token: org.token });
    expect((await logs(org)).length).toBe(2);
    expect((await logs(org, '?channel=sms')).map((l) => l.channel)).toEqual(['sms']);
    expect((await logs(org, '?status=failed')).map((l) => l.channel)).toEqual(['sms']);
    expect((await logs(org, '?status=success')).length).toBe(2);
    expect((await logs(org, '?channel=email&status=failed')).length).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    expect((await logs(org, `?dateFrom=${today}&dateTo=${today}`)).length).toBe(2);
    expect((await logs(org, '?dateTo=2000-01-01')).length).toBe(0);
    expect((await logs(org, `?dateFrom=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).length).toBe(0);
    expect((await logs(org, '?campaignId=00000000-0000-4000-8000-000000000000')).length).toBe(0);
    for (const q of ['?channel=fax', '?status=maybe', '?dateFrom=yesterday', '?campaignId=12', '?limit=0', '?cursor=zzz', '?bogus=1']) {
      const res = await api.get(`/message-logs${q}`, { token: org.token });
      expect(res.status).toBe(400);
    }
    const other = await signupOrg(api);
    expect(await logs(other)).toEqual([]);
    expect(await outbox(other)).toEqual([]);
    const [log] = await logs(org);
    const foreign = await api.get(`/message-logs/${log._id}`, { token: other.token });
    expect(foreign.status).toBe(403);
    expect(JSON.stringify(foreign.body)).not.toContain(log._id);
    expect((await api.get(`/message-logs/${log._id}`, { token: org.token })).body._id).toBe(log._id);
  });

  test('the same through GraphQL', async () => {
    const org = await signupOrg(api);
    const send = await api.gql(
      'mutation($i: SendNotificationInput!) { sendNotification(input: $i) { recipient status error } }',
      { i: { type: 'sms', to: ['0712345631', '0712340000'], message: 'gql' } },
      { token: org.token },
    );
    expect(send.body.data.sendNotification).toEqual([
      { recipient: '+254712345631', status: 'success', error: null },
      { recipient: '+254712340000', status: 'failed', error: 'Sandbox: delivery to a reserved failing address' },
    ]);
    const res = await api.gql(
      '{ messageLogs(filter: { status: failed }) { totalCount edges { node { channel cost recipients { recipient status } } } } sandboxOutbox { totalCount } }',
      undefined,
      { token: org.token },
    );
    expect(res.body.data.messageLogs.totalCount).toBe(1);
    expect(res.body.data.messageLogs.edges[0].node).toMatchObject({ channel: 'sms', cost: 1 });
    expect(res.body.data.sandboxOutbox.totalCount).toBe(2);
    const bad = await api.gql('{ messageLogs(filter: { dateFrom: "soon" }) { totalCount } }', undefined, { token: org.token });
    expect(bad.body.errors![0].extensions).toMatchObject({ statusCode: 400 });
  });
});

describe('sandbox outbox', () => {
  // Recorded one row per delivery call, read one item per message: pages may end inside a call.
  test('one item per message, newest first, paged by Link headers and GraphQL cursors, filtered', async () => {
    const org = await signupOrg(api);
    const first = ['0712345641', '0712345642', '0712340000', '0712345644', '0712345645'];
    await api.post('/notifications/send', { type: 'sms', to: first, message: 'first' }, { token: org.token });
    await api.post('/notifications/send', { type: 'email', to: ['a@example.com', 'b@fail.invalid'], subject: 'S', message: 'second' }, { token: org.token });
    const all = await outbox(org);
    expect(all.length).toBe(7);
    expect(new Set(all.map((m) => m._id)).size).toBe(7);
    for (const m of all) expect(m._id).toMatch(UUID_RE);
    expect(all.slice(0, 2).map((m) => m.body)).toEqual(['second', 'second']);
    expect(all.filter((m) => m.status === 'failed').map((m) => [m.recipient, m.error])).toEqual(
      expect.arrayContaining([
        ['+254712340000', 'Sandbox: delivery to a reserved failing address'],
        ['b@fail.invalid', 'Sandbox: delivery to a reserved failing address'],
      ]),
    );

    const paged: any[] = [];
    for (let path: string | null = '/sandbox/outbox?limit=2'; path; ) {
      const res = await api.get(path, { token: org.token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total-count')).toBe('7');
      paged.push(...res.body);
      path = nextLink(res);
    }
    expect(paged).toEqual(all);

    const seen: string[] = [];
    let after: string | null = null;
    do {
      const res: any = await api.gql(
        'query($after: String) { sandboxOutbox(first: 3, after: $after, channel: sms) { totalCount edges { node { _id recipient } } pageInfo { hasNextPage endCursor } } }',
        { after },
        { token: org.token },
      );
      const page = res.body.data.sandboxOutbox;
      expect(page.totalCount).toBe(5);
      seen.push(...page.edges.map((e: any) => e.node._id));
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toEqual(all.filter((m) => m.channel === 'sms').map((m) => m._id));

    const one = await api.get('/sandbox/outbox?recipient=%2B254712345644', { token: org.token });
    expect(one.body.map((m: any) => [m.recipient, m.body, m.status])).toEqual([['+254712345644', 'first', 'success']]);
    expect((await api.get('/sandbox/outbox?channel=email', { token: org.token })).body.map((m: any) => m.recipient).sort()).toEqual(['a@example.com', 'b@fail.invalid']);
  });

  test('the recipient filter normalises the address as sends do, in both doors', async () => {
    const org = await signupOrg(api);
    await api.post('/notifications/send', { type: 'sms', to: ['0712345655'], message: 'local form' }, { token: org.token });
    await api.post('/notifications/send', { type: 'email', to: ['Mixed@Example.com'], subject: 'Hi', message: 'x' }, { token: org.token });
    for (const written of ['0712345655', '254712345655', '+254 712 345 655']) {
      const res = await api.get(`/sandbox/outbox?recipient=${encodeURIComponent(written)}`, { token: org.token });
      expect(res.body.map((m: any) => [m.recipient, m.body])).toEqual([['+254712345655', 'local form']]);
    }
    expect((await api.get('/sandbox/outbox?recipient=MIXED%40example.com', { token: org.token })).body.map((m: any) => m.recipient)).toEqual(['mixed@example.com']);
    const gql: any = await api.gql('{ sandboxOutbox(recipient: "0712345655") { edges { node { recipient } } } }', {}, { token: org.token });
    expect(gql.body.data.sandboxOutbox.edges.map((e: any) => e.node.recipient)).toEqual(['+254712345655']);
  });

  test("a personalised send to all shows each recipient's own text; only a bulk email carries headers", async () => {
    const org = await signupOrg(api);
    const cred = { token: org.token };
    await makeContact(api, cred, { name: 'Ada Lovelace', phone: '+254712345661', email: 'ada.outbox@example.com' });
    await makeContact(api, cred, { name: 'Bob Marley', phone: '+254712345662', email: 'bob.outbox@example.com' });
    const sms = await api.post('/notifications/send-to-all', { type: 'sms', to: 'all', message: 'Hi {{ contact.firstName }}' }, cred);
    expect(sms.status).toBe(200);
    const mail = await api.post('/notifications/send-to-all', { type: 'email', to: 'all', subject: 'For {{ contact.firstName }}', message: 'Hello {{ contact.name }}' }, cred);
    expect(mail.status).toBe(200);
    const items = (await outbox(org)).map((m) => [m.channel, m.recipient, m.subject, m.body, Object.keys(m.headers)]).sort((a, b) => `${a[0]}${a[1]}`.localeCompare(`${b[0]}${b[1]}`));
    expect(items).toEqual([
      ['email', 'ada.outbox@example.com', 'For Ada', 'Hello Ada Lovelace', ['List-Unsubscribe', 'List-Unsubscribe-Post']],
      ['email', 'bob.outbox@example.com', 'For Bob', 'Hello Bob Marley', ['List-Unsubscribe', 'List-Unsubscribe-Post']],
      ['sms', '+254712345661', null, 'Hi Ada', []],
      ['sms', '+254712345662', null, 'Hi Bob', []],
    ]);
  });
});
