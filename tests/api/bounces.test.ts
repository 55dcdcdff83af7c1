import { bounceAddress } from '../../src/delivery/bounces/verp.js';
import type { Herald } from '../../src/server.js';
import { arf, deliverReport, dsn } from '../fakes/bounce-mail.js';
import { startSmtpSink, type SmtpSink } from '../fakes/smtp-sink.js';
import { client, startTestHerald, TEST_JWT_SECRET, type Client, type Org } from '../helpers/herald.js';
import { liveOrg } from '../helpers/live-org.js';

/*
 * Bounces and complaints as mail servers send them (live delivery to an SMTP server of its own):
 * every email leaves with its own VERP return path, Herald's SMTP listener takes bounce messages and
 * feedback reports for those addresses only, and what they say reaches the recipient's log entry,
 * the campaign's analytics, the webhook events, consent and the suppression list.
 */

const DOMAIN = 'bounces.herald.test';
let herald: Herald;
let api: Client;
let sink: SmtpSink;
let port: number;

beforeAll(async () => {
  sink = await startSmtpSink();
  herald = await startTestHerald({ DELIVERY_MODE: 'live', CAMPAIGN_INLINE_LIMIT: '1000', BOUNCE_DOMAIN: DOMAIN, BOUNCE_SMTP_PORT: '0', BOUNCE_SMTP_HOST: '127.0.0.1' });
  api = client(herald.url);
  port = herald.bounceSmtpPort!;
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await sink?.stop();
});

const VERP = /^bounces\+[A-Za-z0-9_-]{56}@bounces\.herald\.test$/;

/** A campaign to `to` (email), launched and completed; answers its id and each recipient's return path. */
async function campaign(org: Org, to: string[], name = 'News'): Promise<{ id: string; returnPath: Map<string, string> }> {
  const created = await api.post('/campaigns', { name, type: 'broadcast', channels: ['email'], recipients: { manual: to }, messages: { email: { subject: name, content: 'Hello' } } }, { token: org.token });
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
  expect(launched.body.status).toBe('completed');
  const returnPath = new Map<string, string>();
  for (const address of to) {
    const message = [...sink.messages].reverse().find((m) => m.envelopeTo.includes(address) && m.subject === name);
    expect(message).toBeDefined();
    returnPath.set(address, message!.envelopeFrom as string);
  }
  return { id: created.body._id, returnPath };
}

const recipientsOf = async (org: Org, campaignId: string) =>
  ((await api.get(`/message-logs?campaignId=${campaignId}`, { token: org.token })).body as { recipients: Record<string, unknown>[] }[]).flatMap((l) => l.recipients);
const analytics = async (org: Org, id: string) => (await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics;
const suppressions = async (org: Org) => (await api.get('/suppressions?limit=1000', { token: org.token })).body as { address: string; reason: string; bounceType: string | null; detail: string | null }[];

test('a permanent bounce: the return path names the recipient, the bounce reaches its log entry, analytics and events, and the address is suppressed', async () => {
  const org = await liveOrg(api, { sink });
  const { id, returnPath } = await campaign(org, ['gone@example.com', 'here@example.com']);
  const gone = returnPath.get('gone@example.com')!;
  expect(gone).toMatch(VERP);
  expect(returnPath.get('here@example.com')).toMatch(VERP);
  expect(returnPath.get('here@example.com')).not.toBe(gone);
  // The From is the organization's, whatever the return path.
  expect(sink.messages.find((m) => m.envelopeFrom === gone)!.headers.from).toMatch(/noreply@herald\.test/);

  const answer = await deliverReport(port, gone, dsn({ to: gone, recipient: 'gone@example.com' }));
  expect(answer).toMatchObject({ ok: true });
  expect(answer.response).toMatch(/^250/);

  const recipients = await recipientsOf(org, id);
  expect(recipients.find((r) => r.recipient === 'gone@example.com')).toMatchObject({
    status: 'success',
    bouncedAt: expect.any(String),
    bounceType: 'hard',
    bounceReason: '550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown',
  });
  expect(recipients.find((r) => r.recipient === 'here@example.com')!.bouncedAt).toBeUndefined();
  expect(await analytics(org, id)).toMatchObject({ sent: 2, bounced: 1, complained: 0 });
  expect(await suppressions(org)).toEqual([expect.objectContaining({ address: 'gone@example.com', reason: 'bounce', bounceType: 'hard', detail: expect.stringContaining('5.1.1') })]);

  // The same bounce again (a sender that did not hear the answer): nothing more.
  expect((await deliverReport(port, gone, dsn({ to: gone, recipient: 'gone@example.com' }))).ok).toBe(true);
  expect(await analytics(org, id)).toMatchObject({ bounced: 1 });

  const logs = (await api.get(`/message-logs?campaignId=${id}`, { token: org.token })).body as { _id: string; recipients: { recipient: string }[] }[];
  const log = logs.find((l) => l.recipients.some((r) => r.recipient === 'gone@example.com'))!;
  const events = (await api.get(`/message-logs/${log._id}/events`, { token: org.token })).body as { type: string; recipient: string; data: Record<string, unknown> }[];
  expect(events.filter((e) => e.type === 'message.bounced')).toEqual([
    expect.objectContaining({ recipient: 'gone@example.com', data: expect.objectContaining({ bounceType: 'hard', reason: expect.stringContaining('5.1.1') }) }),
  ]);

  // GraphQL reads the same.
  const gql = await api.post('/graphql', { query: `{ campaign(id: "${id}") { analytics { bounced complained } } messageLogs(filter: { campaignId: "${id}" }) { edges { node { recipients { recipient bouncedAt bounceType bounceReason complainedAt } } } } }` }, { token: org.token });
  expect(gql.body.errors).toBeUndefined();
  expect(gql.body.data.campaign.analytics).toEqual({ bounced: 1, complained: 0 });
  const items = gql.body.data.messageLogs.edges.flatMap((e: { node: { recipients: unknown[] } }) => e.node.recipients);
  expect(items).toContainEqual(expect.objectContaining({ recipient: 'gone@example.com', bounceType: 'hard', complainedAt: null }));

  // The next campaign leaves the address out, uncharged; an ad hoc send to it fails at once.
  const next = await campaign(org, ['here@example.com'], 'Next');
  const nextWithGone = await api.post('/campaigns', { name: 'Again', type: 'broadcast', channels: ['email'], recipients: { manual: ['gone@example.com', 'here@example.com'] }, messages: { email: { subject: 'Again', content: 'Hi' } } }, { token: org.token });
  const launched = await api.post(`/campaigns/${nextWithGone.body._id}/launch`, {}, { token: org.token });
  expect(launched.body.analytics).toMatchObject({ sent: 1, suppressed: 1 });
  expect(next.id).toBeTruthy();
  const adHoc = await api.post('/notifications/send', { type: 'email', to: 'gone@example.com', subject: 'Hi', message: 'Hi' }, { token: org.token });
  expect(adHoc.status).toBe(502);
});

test('temporary bounces suppress the address at the third within the window; a later permanent one replaces a temporary one', async () => {
  const org = await liveOrg(api, { sink });
  const soft = (to: string) => dsn({ to, recipient: 'full@example.com', action: 'delayed', status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 Mailbox full' });
  const ids: string[] = [];
  for (const round of [1, 2, 3]) {
    const { id, returnPath } = await campaign(org, ['full@example.com'], `Round ${round}`);
    ids.push(id);
    expect((await deliverReport(port, returnPath.get('full@example.com')!, soft(returnPath.get('full@example.com')!))).ok).toBe(true);
    const listed = (await suppressions(org)).map((s) => s.address);
    expect(listed).toEqual(round < 3 ? [] : ['full@example.com']);
  }
  expect((await suppressions(org))[0]).toMatchObject({ reason: 'bounce', bounceType: 'soft' });
  const [first] = await recipientsOf(org, ids[0]!);
  expect(first).toMatchObject({ bounceType: 'soft', bounceReason: '452 4.2.2 Mailbox full' });

  // The first campaign's recipient then bounces for good: the permanent bounce replaces the temporary one, counted once.
  const firstPath = (await herald.db('message_logs').where({ organization_id: org.orgId, campaign_id: ids[0] }).first('id')) as { id: string };
  expect(firstPath).toBeDefined();
  const again = [...sink.messages].find((m) => m.subject === 'Round 1' && m.envelopeTo.includes('full@example.com'))!.envelopeFrom as string;
  expect((await deliverReport(port, again, dsn({ to: again, recipient: 'full@example.com' }))).ok).toBe(true);
  expect((await recipientsOf(org, ids[0]!))[0]).toMatchObject({ bounceType: 'hard', bounceReason: expect.stringContaining('5.1.1') });
  expect(await analytics(org, ids[0]!)).toMatchObject({ bounced: 1 });
});

test('a complaint unsubscribes the contact from email, suppresses the address and counts in the campaign', async () => {
  const org = await liveOrg(api, { sink });
  const contact = (await api.post('/contacts', { name: 'Wanjiru', email: 'wanjiru@example.com' }, { token: org.token })).body;
  const { id, returnPath } = await campaign(org, ['wanjiru@example.com']);
  const to = returnPath.get('wanjiru@example.com')!;
  expect((await deliverReport(port, to, arf({ to, recipient: 'wanjiru@example.com' }))).ok).toBe(true);

  const [recipient] = await recipientsOf(org, id);
  expect(recipient).toMatchObject({ complainedAt: expect.any(String) });
  expect(await analytics(org, id)).toMatchObject({ complained: 1, bounced: 0 });
  const after = (await api.get(`/contacts/${contact._id}`, { token: org.token })).body;
  expect(after.subscriptions.email).toMatchObject({ status: 'unsubscribed', source: 'complaint' });
  expect(await suppressions(org)).toEqual([expect.objectContaining({ address: 'wanjiru@example.com', reason: 'complaint' })]);
  // A "not spam" report changes nothing.
  const other = await campaign(org, ['other@example.com'], 'Other');
  const otherTo = other.returnPath.get('other@example.com')!;
  expect((await deliverReport(port, otherTo, arf({ to: otherTo, recipient: 'other@example.com', feedbackType: 'not-spam' }))).ok).toBe(true);
  expect(await analytics(org, other.id)).toMatchObject({ complained: 0 });
});

test('mail to any other address is refused at RCPT; a token of one organization never touches another; unreadable mail changes nothing', async () => {
  const [a, b] = [await liveOrg(api, { sink }), await liveOrg(api, { sink })];
  const { id, returnPath } = await campaign(a, ['target@example.com']);
  const real = returnPath.get('target@example.com')!;
  const token = real.slice('bounces+'.length, real.indexOf('@'));
  const altered = `bounces+${token.slice(0, 20)}${token[20] === 'A' ? 'B' : 'A'}${token.slice(21)}@${DOMAIN}`;
  for (const forged of [altered, `bounces+${token.slice(0, 40)}@${DOMAIN}`, `bounces+nothing@${DOMAIN}`, `postmaster@${DOMAIN}`, `bounces+${token}@elsewhere.test`]) {
    const answer = await deliverReport(port, forged, dsn({ to: forged, recipient: 'target@example.com' }));
    expect(answer).toMatchObject({ ok: false, code: 550 });
  }
  // A genuine address of organization B that names A's recipient (B's id, A's log): B has no such log, so the report waits
  // for one (a temporary 451, as for a log not written yet), and A's recipient is untouched.
  const clientId = (await herald.db('message_logs').where({ organization_id: a.orgId, campaign_id: id }).first('id')).id.slice(0, 28) + '00000001';
  const crossed = bounceAddress(TEST_JWT_SECRET, DOMAIN, { orgId: b.orgId, clientId });
  expect(await deliverReport(port, crossed, dsn({ to: crossed, recipient: 'target@example.com' }))).toMatchObject({ ok: false, code: 451 });
  // Unreadable mail to a genuine address: accepted, nothing recorded.
  expect((await deliverReport(port, real, `From: someone@example.net\r\nTo: ${real}\r\nSubject: hello\r\n\r\nJust a note.\r\n`)).ok).toBe(true);
  expect((await deliverReport(port, real, dsn({ to: real, recipient: 'target@example.com', action: 'delivered', status: '2.0.0', diagnostic: 'smtp; 250 ok' }))).ok).toBe(true);
  expect(await analytics(a, id)).toMatchObject({ bounced: 0 });
  expect(await suppressions(a)).toEqual([]);
  expect(await suppressions(b)).toEqual([]);
  expect(await herald.db('email_bounces').whereIn('organization_id', [a.orgId, b.orgId]).count('* as n').first()).toEqual({ n: 0 });
});

test('a bounce that arrives before its log is written is refused for now (451), then taken once the log is there', async () => {
  const org = await liveOrg(api, { sink });
  const { id, returnPath } = await campaign(org, ['early@example.com']);
  const address = returnPath.get('early@example.com')!;
  const log = await herald.db('message_logs').where({ organization_id: org.orgId, campaign_id: id }).first();
  // The log as it was before its turn settled: not there yet.
  await herald.db('message_logs').where({ organization_id: org.orgId, id: log.id }).delete();
  expect(await deliverReport(port, address, dsn({ to: address, recipient: 'early@example.com' }))).toMatchObject({ ok: false, code: 451 });
  expect(await suppressions(org)).toEqual([]);
  await herald.db('message_logs').insert({ ...log, recipients: JSON.stringify(log.recipients) });
  expect((await deliverReport(port, address, dsn({ to: address, recipient: 'early@example.com' }))).ok).toBe(true);
  expect((await suppressions(org)).map((s: { address: string }) => s.address)).toEqual(['early@example.com']);
});

test('a refusal at the send is a bounce too: a permanent one suppresses the address, the recipient failed and uncharged', async () => {
  const org = await liveOrg(api, { sink });
  sink.setBehaviour({ reject: { 'nouser@example.com': 550 } });
  try {
    const sent = await api.post('/notifications/send', { type: 'email', to: ['nouser@example.com', 'fine@example.com'], subject: 'Hi', message: 'Hi' }, { token: org.token });
    expect(sent.status).toBe(200);
    expect(sent.body.find((r: { recipient: string }) => r.recipient === 'nouser@example.com')).toMatchObject({ status: 'failed' });
    // Recorded before the send answers.
    expect(await suppressions(org)).toEqual([expect.objectContaining({ address: 'nouser@example.com', reason: 'bounce', bounceType: 'hard', detail: expect.stringContaining('5.1.1') })]);
    const logs = (await api.get('/message-logs', { token: org.token })).body as { recipients: Record<string, unknown>[] }[];
    expect(logs.flatMap((l) => l.recipients).find((r) => r.recipient === 'nouser@example.com')).toMatchObject({ status: 'failed', bounceType: 'hard' });
  } finally {
    sink.setBehaviour({});
  }
});

test('under a flood of connections the listener stays bounded and loses nothing: every bounce is recorded once', async () => {
  const org = await liveOrg(api, { sink });
  const to = Array.from({ length: 150 }, (_, i) => `flood${i}@example.com`);
  const { id, returnPath } = await campaign(org, to, 'Flood');
  // Each bounce on its own connection, all at once; a sender told to come back (421) does, as MTAs do.
  const refusals: number[] = [];
  await Promise.all(
    to.map(async (address) => {
      const path = returnPath.get(address)!;
      for (let attempt = 0; attempt < 50; attempt++) {
        const answer = await deliverReport(port, path, dsn({ to: path, recipient: address }));
        if (answer.ok) return;
        refusals.push(answer.code ?? 0);
        expect(answer.code).toBe(421);
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${address}: never accepted`);
    }),
  );
  expect(await analytics(org, id)).toMatchObject({ bounced: 150 });
  expect((await suppressions(org)).length).toBe(150);
}, 60_000);
