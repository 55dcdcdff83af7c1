import { randomBytes } from 'node:crypto';
import type { Herald } from '../../src/server.js';
import { trackingToken } from '../../src/delivery/tracking-tokens.js';
import { startSmtpSink, type SinkMessage, type SmtpSink } from '../fakes/smtp-sink.js';
import { liveOrg as liveOrgOf } from '../helpers/live-org.js';
import { heraldWithClient, TEST_JWT_SECRET, type Client, type Org } from '../helpers/herald.js';

/**
 * platform.md, "Receipts and engagement": open and click tracking of emails, end to end. A live
 * Herald sends to a real SMTP server (the sink); the links and pixel of the received emails are
 * followed over HTTP as a reader's browser would, and the campaign's analytics and the log's
 * recipients show what counted.
 */

const PUBLIC_URL = 'https://herald.test';
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
const BARRACUDA = 'Mozilla/5.0 (compatible; Barracuda Sentinel (EE))';

let herald: Herald, api: Client, sink: SmtpSink;

beforeAll(async () => {
  sink = await startSmtpSink();
  // No workers: campaigns this small are sent inline, and this live Herald must not take other files' jobs.
  ({ herald, api } = await heraldWithClient({ DELIVERY_MODE: 'live', WORKERS: 'false', PUBLIC_URL, PROVIDER_TIMEOUT_MS: '2000' }));
});
afterAll(async () => {
  await herald?.stop();
  await sink?.stop();
});
beforeEach(() => {
  sink.messages.length = 0;
});

const unique = (label: string) => `${label}.${randomBytes(4).toString('hex')}@example.com`;
const mailTo = (to: string) => sink.messages.find((m) => m.envelopeTo.includes(to)) as SinkMessage;

/** The tracked links' and pixel's paths in a received email (on Herald's own URL here, PUBLIC_URL in the email). */
const clickPaths = (html: string) => [...html.matchAll(/href=["']https:\/\/herald\.test(\/t\/c\/[A-Za-z0-9_-]+)["']/gi)].map((m) => m[1]!);
const pixelPath = (html: string) => /<img src="https:\/\/herald\.test(\/t\/o\/[A-Za-z0-9_-]+)" width="1" height="1" alt=""/.exec(html)?.[1];

/**
 * A reader's request. Herald answers before the open or click is written (the write goes on in the
 * background): the visit returns once what the request started is written, as the steps here rely on.
 */
async function visit(path: string, headers: Record<string, string> = { 'user-agent': CHROME }, method = 'GET') {
  const res = await fetch(herald.url + path, { method, headers, redirect: 'manual' });
  await herald.deps.background.settled();
  return res;
}

const analytics = async (org: Org, id: string) => (await api.get(`/campaigns/${id}`, { token: org.token })).body.analytics;
const recipients = async (org: Org, logId: string) => (await api.get(`/message-logs/${logId}`, { token: org.token })).body.recipients as any[];
const events = async (org: Org, logId: string) => (await api.get(`/message-logs/${logId}/events`, { token: org.token })).body as any[];

/**
 * Clicks within seconds of the send are a scanner's: the log is made to look sent a minute ago
 * rather than waiting out the window in the test.
 */
const backdate = (org: Org, logId: string) =>
  herald.db('message_logs').where({ organization_id: org.orgId, id: logId }).update({ created_at: herald.db.raw("now() - interval '1 minute'") });

const HTML = (extra = '') => `<html><body><p>Hello!</p>
<p><a class="cta" href="https://shop.example/sale?x=1&amp;y=2">Shop the sale</a> or <A HREF='http://example.org/blog'>read the blog</A>.</p>
<p><a href="mailto:help@example.com">Write to us</a> · <a href="tel:+254700000000">Call</a> · <a href="#top">Top</a></p>
<p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>${extra}
</body></html>`;

async function launch(org: Org, content: string, to: string[]) {
  const created = await api.post(
    '/campaigns',
    { name: 'Tracked', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Sale', content } }, recipients: { manual: to } },
    { token: org.token },
  );
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: to.length } });
  await sink.waitForMessages(to.length);
  const [log] = (await api.get(`/message-logs?campaignId=${created.body._id}`, { token: org.token })).body;
  return { id: created.body._id as string, logId: log._id as string };
}

describe('a tracked campaign email', () => {
  let org: Org;
  beforeAll(async () => {
    org = await liveOrgOf(api, { sink });
  });

  test('arrives with its http(s) links through Herald and an open pixel; other links are left alone', async () => {
    const [ann, bob] = [unique('ann'), unique('bob')];
    await launch(org, HTML(), [ann, bob]);
    const html = mailTo(ann).html as string;
    expect(clickPaths(html)).toHaveLength(2);
    expect(pixelPath(html)).toBeDefined();
    expect(html).toMatch(/<img src="[^"]+" width="1" height="1" alt="" border="0">\s*<\/body>/);
    expect(html).toContain('href="mailto:help@example.com"');
    expect(html).toContain('href="tel:+254700000000"');
    expect(html).toContain('href="#top"');
    expect(html).toMatch(/href="https:\/\/herald\.test\/u\/[A-Za-z0-9_-]+"/);
    expect(html).not.toContain('shop.example');
    // Each recipient's own links.
    expect(clickPaths(mailTo(bob).html as string)[0]).not.toBe(clickPaths(html)[0]);
    // The plain-text alternative is the tracked HTML's.
    expect(mailTo(ann).text).toContain('https://herald.test/t/c/');
  });

  test('a reader opening and clicking counts once each; a click alone also opens; scanners are recorded uncounted', async () => {
    const [ann, bob, cat] = [unique('ann'), unique('bob'), unique('cat')];
    const c = await launch(org, HTML(), [ann, bob, cat]);
    const position = async (address: string) => (await recipients(org, c.logId)).findIndex((r) => r.recipient === address) + 1;

    // Ann opens (in a browser), twice, and through Gmail's image proxy: one open.
    const pixel = pixelPath(mailTo(ann).html as string)!;
    const opened = await visit(pixel);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toBe('image/gif');
    expect(opened.headers.get('cache-control')).toMatch(/no-store/);
    expect((await opened.arrayBuffer()).byteLength).toBe(43);
    await visit(pixel);
    await visit(pixel, { 'user-agent': GMAIL_PROXY });
    expect(await analytics(org, c.id)).toMatchObject({ opened: 1, clicked: 0 });
    expect((await recipients(org, c.logId))[(await position(ann)) - 1]).toMatchObject({ recipient: ann, openedAt: expect.any(String) });

    // A security gateway follows Bob's link the moment it arrives: it still gets the redirect, and counts nothing.
    const bobLink = clickPaths(mailTo(bob).html as string)[0]!;
    const scanned = await visit(bobLink, { 'user-agent': CHROME });
    expect(scanned.status).toBe(302);
    expect(scanned.headers.get('location')).toBe('https://shop.example/sale?x=1&y=2');
    await visit(bobLink, { 'user-agent': BARRACUDA });
    await visit(bobLink, { 'user-agent': CHROME }, 'HEAD');
    await visit(bobLink, { 'user-agent': CHROME, 'sec-purpose': 'prefetch' });
    await visit(pixelPath(mailTo(bob).html as string)!, { 'user-agent': BARRACUDA });
    expect(await analytics(org, c.id)).toMatchObject({ opened: 1, clicked: 0 });

    await backdate(org, c.logId);
    // Later, Bob (who never loaded images) clicks: a click, and the open it implies.
    const clicked = await visit(bobLink);
    expect(clicked.status).toBe(302);
    expect(clicked.headers.get('location')).toBe('https://shop.example/sale?x=1&y=2');
    // A scanner's user agent still does not count, however late.
    await visit(clickPaths(mailTo(cat).html as string)[1]!, { 'user-agent': BARRACUDA });
    expect(await analytics(org, c.id)).toMatchObject({ opened: 2, clicked: 1 });

    const shown = await recipients(org, c.logId);
    expect(shown[(await position(bob)) - 1]).toMatchObject({ openedAt: expect.any(String), clickedAt: expect.any(String) });
    expect(shown[(await position(cat)) - 1].clickedAt).toBeUndefined();
    const recorded = await events(org, c.logId);
    const uncounted = recorded.filter((e) => !e.counted);
    expect(uncounted.map((e) => [e.type, e.data.scanner])).toEqual(
      expect.arrayContaining([
        ['message.clicked', 'too-soon'],
        ['message.clicked', 'user-agent'],
        ['message.clicked', 'head'],
        ['message.clicked', 'prefetch'],
        ['message.opened', 'user-agent'],
      ]),
    );
    expect(uncounted.find((e) => e.recipient === cat)).toMatchObject({ type: 'message.clicked', data: { url: 'http://example.org/blog', userAgent: BARRACUDA } });
    expect(recorded.filter((e) => e.counted && e.type === 'message.clicked')).toEqual([
      expect.objectContaining({ recipient: bob, data: { url: 'https://shop.example/sale?x=1&y=2' } }),
    ]);
  });

  test('a forged or altered token redirects nowhere and gets no pixel (404); nothing is recorded', async () => {
    const ann = unique('ann');
    const c = await launch(org, HTML(), [ann]);
    const link = clickPaths(mailTo(ann).html as string)[0]!;
    const last = link.at(-6)!;
    const altered = `${link.slice(0, -6)}${last === 'A' ? 'B' : 'A'}${link.slice(-5)}`;
    for (const path of [altered, `${link}x`, link.slice(0, -4), '/t/c/not-a-token', `/t/c/${'A'.repeat(5000)}`]) {
      const res = await visit(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.json()).toEqual({ statusCode: 404, message: 'This link is not valid', error: 'Not Found' });
    }
    // An open token is not a link.
    const openAsLink = await visit(pixelPath(mailTo(ann).html as string)!.replace('/t/o/', '/t/c/'));
    expect(openAsLink.status).toBe(404);
    const badPixel = await visit(`/t/o/${'x'.repeat(40)}`);
    expect(badPixel.status).toBe(404);
    expect(await badPixel.json()).toEqual({ statusCode: 404, message: 'This link is not valid', error: 'Not Found' });
    expect((await visit('/t/o/x', {}, 'POST')).status).toBe(405);
    expect(await analytics(org, c.id)).toMatchObject({ opened: 0, clicked: 0 });
    expect(await events(org, c.logId)).toEqual([]);
  });

  test('the reader gets the pixel and the redirect without waiting for the write, which finishes after', async () => {
    const ann = unique('ann');
    const c = await launch(org, HTML(), [ann]);
    await backdate(org, c.logId);
    // The campaign's row is held, so the receipts' counting statement cannot finish while it is.
    const held = await herald.db.transaction();
    try {
      await held.raw('SELECT 1 FROM campaigns WHERE organization_id = ? AND id = ? FOR UPDATE', [org.orgId, c.id]);
      const opened = await fetch(herald.url + pixelPath(mailTo(ann).html as string)!, { headers: { 'user-agent': CHROME } });
      expect(opened.status).toBe(200);
      const clicked = await fetch(herald.url + clickPaths(mailTo(ann).html as string)[0]!, { headers: { 'user-agent': CHROME }, redirect: 'manual' });
      expect(clicked.headers.get('location')).toBe('https://shop.example/sale?x=1&y=2');
      expect(herald.deps.background.size).toBeGreaterThan(0);
    } finally {
      await held.commit();
    }
    await herald.deps.background.settled();
    expect(await analytics(org, c.id)).toMatchObject({ opened: 1, clicked: 1 });
  });

  test("a token signed for one organization cannot touch another's log", async () => {
    const other = await liveOrgOf(api, { sink });
    const victim = unique('victim');
    const c = await launch(other, HTML(), [victim]);
    await backdate(other, c.logId);
    // Signed by Herald, so authentic: it names org's id with the other organization's log.
    const ref = { orgId: org.orgId, logId: c.logId, position: 1 };
    const open = await visit(`/t/o/${trackingToken(TEST_JWT_SECRET, ref)!}`);
    expect(open.status).toBe(200);
    const click = await visit(`/t/c/${trackingToken(TEST_JWT_SECRET, ref, 'https://example.com/')!}`);
    expect(click.status).toBe(302);
    expect(await analytics(other, c.id)).toMatchObject({ opened: 0, clicked: 0 });
    expect(await events(other, c.logId)).toEqual([]);
    expect((await recipients(other, c.logId))[0].openedAt).toBeUndefined();
  });

  test('a plain-text email is not rewritten and has no pixel', async () => {
    const ann = unique('ann');
    await launch(org, 'Our sale: https://shop.example/sale\nSee you!', [ann]);
    const mail = mailTo(ann);
    expect(mail.html).toBe(false);
    expect(mail.text).toContain('https://shop.example/sale');
    expect(mail.text).not.toContain('/t/');
  });

  test("a campaign's test send is tracked too", async () => {
    const created = await api.post(
      '/campaigns',
      { name: 'Tested', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Sale', content: HTML() } }, recipients: { manual: [unique('x')] } },
      { token: org.token },
    );
    const ann = unique('ann');
    const res = await api.post(`/campaigns/${created.body._id}/test`, { to: [ann] }, { token: org.token });
    expect(res.status).toBe(200);
    await sink.waitForMessages(1);
    expect(clickPaths(mailTo(ann).html as string)).toHaveLength(2);
    expect(pixelPath(mailTo(ann).html as string)).toBeDefined();
  });
});

describe('ad hoc sends', () => {
  test('an HTML email is tracked per recipient, and untracked once the organization turns tracking off', async () => {
    const org = await liveOrgOf(api, { sink });
    const [ann, bob] = [unique('ann'), unique('bob')];
    const body = '<p>Your receipt: <a href="https://shop.example/orders/1">order 1</a></p>';
    const res = await api.post('/notifications/send', { type: 'email', to: [ann, bob], subject: 'Receipt', message: body }, { token: org.token });
    expect(res.status).toBe(200);
    await sink.waitForMessages(2);
    const [annLinks, bobLinks] = [clickPaths(mailTo(ann).html as string), clickPaths(mailTo(bob).html as string)];
    expect(annLinks).toHaveLength(1);
    expect(bobLinks).toHaveLength(1);
    expect(annLinks[0]).not.toBe(bobLinks[0]);

    const [log] = (await api.get('/message-logs?limit=10', { token: org.token })).body;
    // The log shows the message as written, not the tracking links.
    expect(log.messagePreview).toBe(body.slice(0, 100));
    await backdate(org, log._id);
    const clicked = await visit(bobLinks[0]!);
    expect(clicked.headers.get('location')).toBe('https://shop.example/orders/1');
    const shown = (await recipients(org, log._id)).find((r) => r.recipient === bob);
    expect(shown).toMatchObject({ openedAt: expect.any(String), clickedAt: expect.any(String) });

    // Plain text: never tracked.
    sink.messages.length = 0;
    await api.post('/notifications/send', { type: 'email', to: ann, subject: 'Plain', message: 'See https://shop.example/orders/1' }, { token: org.token });
    await sink.waitForMessages(1);
    expect(mailTo(ann).text).not.toContain('/t/');

    // The organization's setting, as an admin turns it off (PUT /organizations/current).
    expect((await api.put('/organizations/current', { tracking: false }, { token: org.token })).body).toMatchObject({ tracking: false });
    sink.messages.length = 0;
    await api.post('/notifications/send', { type: 'email', to: ann, subject: 'Receipt', message: body }, { token: org.token });
    await sink.waitForMessages(1);
    const untracked = mailTo(ann).html as string;
    expect(untracked).toContain('href="https://shop.example/orders/1"');
    expect(untracked).not.toContain('/t/');
  });
});
