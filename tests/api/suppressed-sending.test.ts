import type { Herald } from '../../src/server.js';
import { client, signupOrg, startTestHerald, type Client, type Org } from '../helpers/herald.js';

/*
 * What the suppression list does to sending (sandbox delivery): a campaign, its estimate and a send
 * to every contact leave the listed addresses out (counted as suppressed, never charged); a send to
 * given recipients fails at once, uncharged, for an address that bounced for good, and goes to one
 * suppressed for another reason.
 */

let herald: Herald;
let api: Client;

beforeAll(async () => {
  herald = await startTestHerald({ DELIVERY_MODE: 'sandbox', CAMPAIGN_INLINE_LIMIT: '1000' });
  api = client(herald.url);
}, 60_000);
afterAll(() => herald?.stop());

async function suppress(org: Org, address: string, reason: 'bounce' | 'complaint' | 'manual', bounceType: 'hard' | 'soft' | null = null, detail: string | null = null) {
  await herald.db('suppressions').insert({ organization_id: org.orgId, channel: 'email', address, reason, bounce_type: bounceType, detail });
}

const credits = async (org: Org) => (await api.get('/organizations/current', { token: org.token })).body.credits as number;
const outboxTo = async (org: Org) => ((await api.get('/sandbox/outbox?channel=email&limit=1000', { token: org.token })).body as { recipient: string }[]).map((m) => m.recipient).sort();

test('a campaign and a send to every contact leave listed addresses out, counted as suppressed and never charged', async () => {
  const org = await signupOrg(api);
  for (const [name, email] of [['Asha', 'asha@example.com'], ['Baraka', 'Baraka@Example.com'], ['Chege', 'chege@example.com'], ['Dalia', 'dalia@example.com']]) {
    expect((await api.post('/contacts', { name, email }, { token: org.token })).status).toBe(201);
  }
  await suppress(org, 'baraka@example.com', 'bounce', 'hard', '5.1.1 user unknown');
  await suppress(org, 'chege@example.com', 'complaint');
  // Both unsubscribed and listed: counted once, as unsubscribed.
  const dalia = (await api.get('/contacts?search=dalia', { token: org.token })).body[0];
  await api.put(`/contacts/${dalia._id}`, { subscriptions: { email: 'unsubscribed' } }, { token: org.token });
  await suppress(org, 'dalia@example.com', 'manual');

  const created = await api.post(
    '/campaigns',
    { name: 'Newsletter', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'News', content: 'Hello' } } },
    { token: org.token },
  );
  const id = created.body._id as string;
  const estimate = (await api.get(`/campaigns/${id}/estimate`, { token: org.token })).body;
  expect(estimate).toMatchObject({ recipients: 1, suppressed: 3, channels: [{ channel: 'email', recipients: 1, suppressed: { unsubscribed: 1, listed: 2 } }] });
  const before = await credits(org);
  const launched = await api.post(`/campaigns/${id}/launch`, {}, { token: org.token });
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 1, failed: 0, suppressed: 3 } });
  expect(await credits(org)).toBe(before - 0.5);
  expect(await outboxTo(org)).toEqual(['asha@example.com']);

  const all = await api.post('/notifications/send-to-all', { type: 'email', subject: 'All', message: 'Hi', to: 'all' }, { token: org.token });
  expect(all.body.map((o: { recipient: string }) => o.recipient)).toEqual(['asha@example.com']);

  // Named by hand (and through a contact chosen): the same.
  const asha = (await api.get('/contacts?search=asha', { token: org.token })).body[0];
  const chosen = (
    await api.post(
      '/campaigns',
      { name: 'Chosen', type: 'broadcast', channels: ['email'], recipients: { contacts: [asha._id], manual: ['baraka@example.com', 'new@example.com'] }, messages: { email: { subject: 'News', content: 'Hello' } } },
      { token: org.token },
    )
  ).body;
  expect((await api.get(`/campaigns/${chosen._id}/estimate`, { token: org.token })).body).toMatchObject({ recipients: 2, channels: [{ suppressed: { unsubscribed: 0, listed: 1 } }] });

  // Removed from the list: the next campaign reaches the address again.
  await herald.db('suppressions').where({ organization_id: org.orgId, address: 'chege@example.com' }).delete();
  const again = (await api.post('/campaigns', { name: 'Again', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'News', content: 'Hello' } } }, { token: org.token })).body;
  expect((await api.post(`/campaigns/${again._id}/launch`, {}, { token: org.token })).body.analytics).toMatchObject({ sent: 2, suppressed: 2 });
});

test('a send to a hard-bounced address fails at once with the reason, uncharged; other suppressions do not stop a send to given recipients', async () => {
  const org = await signupOrg(api);
  await suppress(org, 'gone@example.com', 'bounce', 'hard', '5.1.1 user unknown');
  await suppress(org, 'full@example.com', 'bounce', 'soft');
  await suppress(org, 'angry@example.com', 'complaint');
  const before = await credits(org);

  const single = await api.post('/notifications/send', { type: 'email', to: 'Gone@Example.com', subject: 'Reset', message: 'Your code is 1234' }, { token: org.token });
  expect(single.status).toBe(502);
  expect(single.body.message).toBe('Address suppressed: it bounced permanently (5.1.1 user unknown)');
  expect(await credits(org)).toBe(before);

  const many = await api.post('/notifications/send', { type: 'email', to: ['gone@example.com', 'full@example.com', 'angry@example.com'], subject: 'Reset', message: 'Code 1234' }, { token: org.token });
  expect(many.body).toEqual([
    { recipient: 'gone@example.com', status: 'failed', error: 'Address suppressed: it bounced permanently (5.1.1 user unknown)' },
    { recipient: 'full@example.com', status: 'success' },
    { recipient: 'angry@example.com', status: 'success' },
  ]);
  expect(await credits(org)).toBe(before - 1);
  expect(await outboxTo(org)).toEqual(['angry@example.com', 'full@example.com']);
});
