import { generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import type { Herald } from '../../src/server.js';
import { startDnsTxtServer, type DnsTxtServer } from '../fakes/dns-txt-server.js';
import { startSmtpSink, type SmtpSink } from '../fakes/smtp-sink.js';
import { addUser, client, signupOrg, startTestHerald, type Client } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';

/*
 * DKIM as an admin meets it (live delivery to an SMTP server of its own, a DNS server on loopback
 * standing for the domain's zone): a key made for the sending domain, RSA or Ed25519, its record
 * published, the check saying so, and every email from the domain signed by each of its keys so
 * that `mailauth`'s verifier, reading the published records, passes them, List-Unsubscribe among
 * the signed headers.
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
const verify = (raw: Buffer, { strict = false } = {}) =>
  authenticate(raw, { strict, ip: '127.0.0.1', helo: 'herald.test', sender: 'noreply@acme-mail.test', mta: 'mx.test', resolver: async (name: string, rr: string) => (rr === 'TXT' ? dns.lookup(name) : Promise.reject(Object.assign(new Error('none'), { code: 'ENOTFOUND' }))) });

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

/** The DKIM-Signature headers of a raw message, unfolded. */
const signaturesOf = (raw: Buffer) => {
  const head = raw.toString('utf8').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
  return head.split('\r\n').filter((line) => /^dkim-signature:/i.test(line));
};

/** The raw 32-byte Ed25519 public key of a record, and its SPKI form (the DER prefix of RFC 8410, then the key). */
const ed25519Forms = (record: string) => {
  const raw = Buffer.from(/p=([A-Za-z0-9+/=]+)$/.exec(record)![1]!, 'base64');
  return { raw, spki: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]) };
};

test('an Ed25519 key beside an RSA key: its record carries the raw key, the check tells it from others, and every email carries both signatures, which mailauth passes', async () => {
  const org = await liveOrg(api, { sink }, { email_from: 'noreply@both-mail.test' });
  expect((await api.post('/dkim-keys', { domain: 'both-mail.test', algorithm: 'dsa' }, { token: org.token })).status).toBe(400);
  const created = await api.post('/dkim-keys', { domain: 'both-mail.test', selector: 'ed2026', algorithm: 'ed25519' }, { token: org.token });
  expect(created.status).toBe(201);
  const ed = created.body;
  expect(ed).toMatchObject({ domain: 'both-mail.test', selector: 'ed2026', algorithm: 'ed25519', dnsName: 'ed2026._domainkey.both-mail.test', dnsType: 'TXT', published: null });
  expect(ed.record).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
  const { raw, spki } = ed25519Forms(ed.record);
  expect(raw).toHaveLength(32);
  expect((await api.get(`/dkim-keys/${ed._id}`, { token: org.token })).body).toMatchObject({ algorithm: 'ed25519', record: ed.record });

  // The SPKI form of the same key is not the record to publish, and the check says why.
  dns.set(ed.dnsName, `v=DKIM1; k=ed25519; p=${spki.toString('base64')}`);
  expect((await api.post(`/dkim-keys/${ed._id}/check`, {}, { token: org.token })).body).toMatchObject({
    published: true,
    matches: false,
    problem: 'The record at ed2026._domainkey.both-mail.test has this key in SPKI form; an Ed25519 record carries the raw 32-byte key, as shown',
  });
  // Published as shown, spaced and split as a zone file may have it: it matches.
  dns.set(ed.dnsName, ed.record.replace('p=', 'p= ').replace('; ', ';'));
  expect((await api.post(`/dkim-keys/${ed._id}/check`, {}, { token: org.token })).body).toMatchObject({ published: true, matches: true, problem: null, key: { published: true } });

  const rsa = (await api.post('/dkim-keys', { domain: 'both-mail.test', selector: 'rsa2026' }, { token: org.token })).body;
  expect(rsa.algorithm).toBe('rsa');
  dns.set(rsa.dnsName, rsa.record);
  expect((await api.post(`/dkim-keys/${rsa._id}/check`, {}, { token: org.token })).body).toMatchObject({ matches: true });
  // The RSA key's record at the Ed25519 key's name is another key's.
  dns.set(ed.dnsName, rsa.record);
  expect((await api.post(`/dkim-keys/${ed._id}/check`, {}, { token: org.token })).body).toMatchObject({ matches: false, problem: 'The record at ed2026._domainkey.both-mail.test is another key\'s' });
  dns.set(ed.dnsName, ed.record);

  const to = `both.${Date.now()}@example.com`;
  const content = '<p>Hello   there,</p>\n<p>news \t in brief: é</p>\n\n';
  const campaign = (await api.post('/campaigns', { name: 'Doubly signed', type: 'broadcast', channels: ['email'], recipients: { manual: [to] }, messages: { email: { subject: 'Nouvelles été', content } } }, { token: org.token })).body;
  expect((await api.post(`/campaigns/${campaign._id}/launch`, {}, { token: org.token })).body.status).toBe('completed');
  const message = sink.messages.find((m) => m.envelopeTo.includes(to))!;
  const signatures = signaturesOf(message.raw);
  expect(signatures).toHaveLength(2);
  for (const signature of signatures) {
    expect(signature).toMatch(/c=relaxed\/relaxed/);
    const signed = /h=([^;]*)/.exec(signature.replace(/\s+/g, ''))![1]!.toLowerCase().split(':');
    expect(signed).toEqual(expect.arrayContaining(['from', 'subject', 'list-unsubscribe', 'list-unsubscribe-post']));
  }
  const verdict = async (strict = false) => (await verify(message.raw, { strict })).dkim.results.map((r: any) => [r.selector, r.algo, r.status.result]).sort();
  expect(await verdict()).toEqual([
    ['ed2026', 'ed25519-sha256', 'pass'],
    ['rsa2026', 'rsa-sha256', 'pass'],
  ]);

  // Another Ed25519 key published at the name: the check refuses it, and so does the verifier, while the RSA signature still passes.
  const stranger = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  dns.set(ed.dnsName, `v=DKIM1; k=ed25519; p=${Buffer.from(stranger, 'base64url').toString('base64')}`);
  expect((await api.post(`/dkim-keys/${ed._id}/check`, {}, { token: org.token })).body).toMatchObject({ matches: false, problem: 'The record at ed2026._domainkey.both-mail.test is another key\'s', key: { published: false } });
  expect(await verdict()).toEqual([
    ['ed2026', 'ed25519-sha256', 'fail'],
    ['rsa2026', 'rsa-sha256', 'pass'],
  ]);
  // Published in SPKI form, the key does not verify by RFC 8463 (mailauth's strict mode; its lenient default reads either form).
  dns.set(ed.dnsName, `v=DKIM1; k=ed25519; p=${spki.toString('base64')}`);
  expect((await verdict(true))[0]).toEqual(['ed2026', 'ed25519-sha256', expect.not.stringMatching(/^pass$/)]);
  dns.set(ed.dnsName, ed.record);
  expect(await verdict(true)).toEqual([
    ['ed2026', 'ed25519-sha256', 'pass'],
    ['rsa2026', 'rsa-sha256', 'pass'],
  ]);
});

test('an Ed25519 key made through GraphQL with the default selector signs alone, for its domain and the domains below it', async () => {
  const org = await liveOrg(api, { sink }, { email_from: 'noreply@news.ed-mail.test' });
  const gql = async (query: string) => (await api.post('/graphql', { query }, { token: org.token })).body;
  const made = (await gql('mutation { createDkimKey(domain: "ed-mail.test", algorithm: ed25519) { _id selector algorithm dnsName record } }')).data.createDkimKey;
  expect(made).toMatchObject({ algorithm: 'ed25519', dnsName: `${made.selector}._domainkey.ed-mail.test` });
  expect(made.selector).toMatch(/^herald\d{8}ed$/);
  expect(made.record).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
  expect((await gql(`mutation { checkDkimKey(id: "${made._id}") { matches problem } }`)).data.checkDkimKey).toEqual({ matches: false, problem: `No TXT record at ${made.dnsName}` });
  dns.set(made.dnsName, made.record);
  expect((await gql(`mutation { checkDkimKey(id: "${made._id}") { published matches problem key { published } } }`)).data.checkDkimKey).toEqual({ published: true, matches: true, problem: null, key: { published: true } });
  expect((await gql('{ dkimKeys { selector algorithm } }')).data.dkimKeys).toEqual([{ selector: made.selector, algorithm: 'ed25519' }]);
  expect((await gql('mutation { createDkimKey(domain: "ed-mail.test", algorithm: dsa) { _id } }')).errors).toBeDefined();

  const to = `ed.${Date.now()}@example.com`;
  expect((await api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Signed by Ed25519' }, { token: org.token })).status).toBe(200);
  const message = sink.messages.find((m) => m.envelopeTo.includes(to))!;
  expect(signaturesOf(message.raw)).toHaveLength(1);
  const { dkim } = await verify(message.raw, { strict: true });
  expect(dkim.results.map((r: any) => [r.signingDomain, r.algo, r.status.result])).toEqual([['ed-mail.test', 'ed25519-sha256', 'pass']]);
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
