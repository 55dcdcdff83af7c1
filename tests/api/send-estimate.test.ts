import type { Herald } from '../../src/server.js';
import { expectError, expectGqlError, expectValidation } from '../helpers/expect.js';
import { createApiKey, heraldWithClient, signupOrg, type Client, type Org } from '../helpers/herald.js';

/**
 * `POST /notifications/estimate` (GraphQL `notificationEstimate`): the send's body counted and
 * priced as the send would, with nothing sent, reserved or logged; the send that follows is charged
 * exactly the estimate.
 */

let herald: Herald, api: Client;
beforeAll(async () => ({ herald, api } = await heraldWithClient()));
afterAll(() => herald?.stop());

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
const logCount = async (org: Org) => Number((await api.get('/message-logs?limit=1', { token: org.token })).headers.get('x-total-count'));
const estimate = (org: Org, body: unknown) => api.post('/notifications/estimate', body, { token: org.token });

describe('POST /notifications/estimate', () => {
  let org: Org;
  beforeAll(async () => (org = await signupOrg(api)));

  test('counts distinct recipients and invalid ones, prices the valid ones, and sends nothing', async () => {
    const body = { type: 'sms', to: ['0712345601', '+254712345601', '0712345602', 'nope'], message: 'Hello there' };
    const res = await estimate(org, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ recipients: 3, invalid: 1, unitCost: 1, cost: 2, balance: 100 });
    expect(await credits(org)).toBe(100);
    expect(await logCount(org)).toBe(0);

    const sent = await api.post('/notifications/send', body, { token: org.token });
    expect(sent.status).toBe(200);
    expect(await credits(org)).toBe(100 - res.body.cost);
  });

  test('an SMS is priced by its segments; recipients whose texts differ are each priced as the send charges them', async () => {
    const long = await estimate(org, { type: 'sms', to: ['0712345603'], message: 'a'.repeat(161) });
    expect(long.body).toMatchObject({ recipients: 1, invalid: 0, unitCost: 2, cost: 2 });

    // 148 characters and the address: a Kenyan number (13 characters) takes 2 segments, a US one (12) 1.
    const body = { type: 'sms', to: ['+254712345604', '+12025550123'], message: `${'x'.repeat(148)}{{ contact.phone }}` };
    const res = await estimate(org, body);
    expect(res.body).toMatchObject({ recipients: 2, invalid: 0, unitCost: 2, cost: 3 });
    const before = await credits(org);
    expect(res.body.balance).toBe(before);
    await api.post('/notifications/send', body, { token: org.token });
    expect(await credits(org)).toBe(before - 3);
  });

  test('email: a permanently bounced address is invalid, as the send would fail it; a template is priced as the send prices it', async () => {
    await herald.db('suppressions').insert({ organization_id: org.orgId, channel: 'email', address: 'gone@example.com', reason: 'bounce', bounce_type: 'hard', detail: '550 5.1.1' });
    const res = await estimate(org, { type: 'email', to: ['ok@example.com', 'Gone@Example.com'], subject: 'Hi', message: '<p>Hi</p>' });
    expect(res.body).toMatchObject({ recipients: 2, invalid: 1, unitCost: 0.5, cost: 0.5 });

    const template = await api.post('/templates', { name: 'Welcome', channel: 'whatsapp', content: 'Welcome to {{ organization.name }}' }, { token: org.token });
    expect(template.status).toBe(201);
    const byTemplate = await estimate(org, { type: 'whatsapp', to: '0712345605', templateId: template.body._id });
    expect(byTemplate.body).toMatchObject({ recipients: 1, invalid: 0, unitCost: 1, cost: 1 });
  });

  test('a string `to` that is not an address counts as invalid; a cost above the balance is still answered', async () => {
    expect((await estimate(org, { type: 'sms', to: 'nope', message: 'Hi' })).body).toMatchObject({ recipients: 1, invalid: 1, unitCost: 0, cost: 0 });
    const poor = await signupOrg(api);
    await herald.db('organization_credits').where({ organization_id: poor.orgId }).update({ credits: 1 });
    const res = await estimate(poor, { type: 'sms', to: ['0712345606', '0712345607'], message: 'Hi' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ cost: 2, balance: 1 });
  });

  test('validation as the send: the body\'s shape, Liquid syntax, another channel\'s template', async () => {
    expectValidation(await estimate(org, { type: 'sms', to: [], message: 'm' }), ['to']);
    expect((await estimate(org, { type: 'email', to: 'a@example.com', message: 'm' })).body.message).toMatch(/subject is required for email/);
    const liquid = await estimate(org, { type: 'sms', to: '0712345608', message: 'Hi {{ contact.phone' });
    expect(liquid.status).toBe(400);
    expect(liquid.body.message).toMatch(/line 1, column 4/);
    const template = await api.post('/templates', { name: 'Mail', channel: 'email', subject: 'S', content: 'Body' }, { token: org.token });
    const wrong = await estimate(org, { type: 'sms', to: '0712345608', templateId: template.body._id });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toMatch(/templateId names a email template/);
  });

  test('any role and API keys; no credential is 401', async () => {
    const { key } = await createApiKey(api, org, 'user');
    const res = await api.post('/notifications/estimate', { type: 'sms', to: '0712345609', message: 'Hi' }, { apiKey: key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ recipients: 1, cost: 1 });
    expectError(await api.post('/notifications/estimate', { type: 'sms', to: '0712345609', message: 'Hi' }), 401);
  });
});

describe('GraphQL notificationEstimate', () => {
  test('answers as REST does, and refuses what the send refuses', async () => {
    const org = await signupOrg(api);
    const q = 'query($i: SendNotificationInput!) { notificationEstimate(input: $i) { recipients invalid unitCost cost balance } }';
    const res = await api.gql(q, { i: { type: 'sms', to: ['0712345610', 'x'], message: 'a'.repeat(200) } }, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.notificationEstimate).toEqual({ recipients: 2, invalid: 1, unitCost: 2, cost: 2, balance: 100 });
    expectGqlError(await api.gql(q, { i: { type: 'sms', to: ['0712345610'], message: 'Hi {{ x' } }, { token: org.token }), 400, 'BAD_REQUEST');
  });
});
