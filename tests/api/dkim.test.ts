import { authenticate } from 'mailauth';
import type { Herald } from '../../src/server.js';
import { startDnsTxtServer, type DnsTxtServer } from '../fakes/dns-txt-server.js';
import { startSmtpSink, type SmtpSink } from '../fakes/smtp-sink.js';
import { addUser, client, signupOrg, startTestHerald, type Client } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';

/*
 * DKIM as an admin meets it (live delivery to an SMTP server of its own, a DNS server on loopback
 * standing for the domain's zone): a key made for the sending domain, its record published, the
 * check saying so, and every email from the domain signed so that `mailauth`'s verifier, reading
 * the published record, passes it, List-Unsubscribe among the signed headers.
 */

let herald: Herald;
let api: Client;
let sink: SmtpSink;
let dns: DnsTxtServer;

beforeAll(async () => {
  [sink, dns] = await Promise.all([startSmtpSink(), startDnsTxtServer()]);
  herald = await startTestHerald({ DELIVERY_MODE: 'live', DNS_SERVERS: dns.address, CAMPAIGN_INLINE_LIMIT: '1000' });
  api = client(herald.url);
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await Promise.all([sink?.stop(), dns?.stop()]);
});

/** mailauth's verdict on a message, its DNS read from the loopback zone. */
const verify = (raw: Buffer) =>
  authenticate(raw, { ip: '127.0.0.1', helo: 'herald.test', sender: 'noreply@acme-mail.test', mta: 'mx.test', resolver: async (name: string, rr: string) => (rr === 'TXT' ? dns.lookup(name) : Promise.reject(Object.assign(new Error('none'), { code: 'ENOTFOUND' }))) });

test('a key for the sending domain: its record, the check before and after publishing, and signed email that mailauth verifies', async () => {
  const org = await liveOrg(api, { sink }, { email_from: 'noreply@acme-mail.test' });
  const created = await api.post('/dkim-keys', { domain: 'ACME-mail.test', selector: 's2026' }, { token: org.token });
  expect(created.status).toBe(201);
  const key = created.body;
  expect(key).toMatchObject({ domain: 'acme-mail.test', selector: 's2026', algorithm: 'rsa', dnsName: 's2026._domainkey.acme-mail.test', dnsType: 'TXT', published: null });
  expect(key.record).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/);
  expect(JSON.stringify(key)).not.toMatch(/PRIVATE KEY/);
  expect((await api.post('/dkim-keys', { domain: 'acme-mail.test', selector: 's2026' }, { token: org.token })).status).toBe(409);

  // Not published yet: the check says so.
  const before = await api.post(`/dkim-keys/${key._id}/check`, {}, { token: org.token });
  expect(before.body).toMatchObject({ published: false, matches: false, problem: 'No TXT record at s2026._domainkey.acme-mail.test', key: { published: false } });

  dns.set(key.dnsName, key.record);
  const after = await api.post(`/dkim-keys/${key._id}/check`, {}, { token: org.token });
  expect(after.body).toMatchObject({ published: true, matches: true, problem: null, key: { published: true, checkedAt: expect.any(String) } });

  // A campaign's email: signed by the domain, List-Unsubscribe among the signed headers, verified.
  const to = `reader.${Date.now()}@example.com`;
  const campaign = (await api.post('/campaigns', { name: 'Signed news', type: 'broadcast', channels: ['email'], recipients: { manual: [to] }, messages: { email: { subject: 'News', content: '<p>Hello</p>' } } }, { token: org.token })).body;
  expect((await api.post(`/campaigns/${campaign._id}/launch`, {}, { token: org.token })).body.status).toBe('completed');
  const message = sink.messages.find((m) => m.envelopeTo.includes(to))!;
  const signature = message.headers['dkim-signature']!;
  expect(signature).toMatch(/d=acme-mail\.test/);
  expect(signature).toMatch(/s=s2026/);
  expect(signature).toMatch(/c=relaxed\/relaxed/);
  expect(signature.replace(/\s+/g, '')).toMatch(/h=[^;]*List-Unsubscribe:List-Unsubscribe-Post/i);
  const { dkim } = await verify(message.raw);
  expect(dkim.results.map((r: any) => [r.signingDomain, r.status.result])).toEqual([['acme-mail.test', 'pass']]);

  // Another key published at the name: the check and the verifier both refuse.
  const other = (await api.post('/dkim-keys', { domain: 'acme-mail.test', selector: 'other' }, { token: org.token })).body;
  dns.set(key.dnsName, other.record);
  expect((await api.post(`/dkim-keys/${key._id}/check`, {}, { token: org.token })).body).toMatchObject({ matches: false, problem: 'The record at s2026._domainkey.acme-mail.test is another key\'s' });
  expect((await verify(message.raw)).dkim.results[0].status.result).toBe('fail');
});

test('email from a domain without a key goes unsigned; keys are admins’ and their organization’s alone, through both doors', async () => {
  const org = await liveOrg(api, { sink }, { email_from: 'noreply@plain-mail.test' });
  const to = `plain.${Date.now()}@example.com`;
  expect((await api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Plain' }, { token: org.token })).status).toBe(200);
  expect(sink.messages.find((m) => m.envelopeTo.includes(to))!.headers['dkim-signature']).toBeUndefined();

  const gql = async (query: string, token: string) => (await api.post('/graphql', { query }, { token })).body;
  const made = await gql('mutation { createDkimKey(domain: "plain-mail.test") { _id selector dnsName record } }', org.token);
  expect(made.data.createDkimKey.selector).toMatch(/^herald\d{8}$/);
  const member = await addUser(api, org, 'user');
  expect((await api.get('/dkim-keys', { token: member.token })).status).toBe(403);
  const other = await signupOrg(api);
  expect((await api.get(`/dkim-keys/${made.data.createDkimKey._id}`, { token: other.token })).status).toBe(403);
  expect((await api.get('/dkim-keys', { token: other.token })).body).toEqual([]);
  expect((await gql('{ dkimKeys { domain } }', org.token)).data.dkimKeys).toEqual([{ domain: 'plain-mail.test' }]);
  const audit = (await api.get('/audit-log?action=dkim.', { token: org.token })).body;
  expect(audit.map((e: { action: string }) => e.action)).toEqual(['dkim.created']);
});
