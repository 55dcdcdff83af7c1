import type { Herald } from '../../src/server.js';
import { postfixAvailable, startPostfix, type PostfixInstance } from '../fakes/postfix.js';
import { client, signupOrg, startTestHerald, waitFor, type Client, type Org } from '../helpers/herald.js';

/*
 * The bounce trial with a real MTA: Herald hands a campaign to Postfix (Debian's package, an
 * instance of the test's own on loopback ports); Postfix refuses some recipients at RCPT TO and
 * accepts the others only to find they have no mailbox, and sends its own bounce messages to each
 * email's VERP return path, which it routes to Herald's bounce listener. Every address ends up
 * suppressed, and the next campaign leaves them out. CI installs Postfix (REQUIRE_POSTFIX=1).
 */

const describeWithPostfix = postfixAvailable() || process.env.REQUIRE_POSTFIX === '1' ? describe : describe.skip;
const BOUNCE_DOMAIN = 'bounces.herald.test';

describeWithPostfix('bounces from a real Postfix', () => {
  let herald: Herald;
  let api: Client;
  let mta: PostfixInstance;

  beforeAll(async () => {
    herald = await startTestHerald({ DELIVERY_MODE: 'live', CAMPAIGN_INLINE_LIMIT: '1000', BOUNCE_DOMAIN, BOUNCE_SMTP_PORT: '0', BOUNCE_SMTP_HOST: '127.0.0.1' });
    api = client(herald.url);
    mta = await startPostfix({ noMailboxDomain: 'nomailbox.test', rejectDomain: 'rejected.test', bounceDomain: BOUNCE_DOMAIN, bounceRelay: { host: '127.0.0.1', port: herald.bounceSmtpPort! } });
  }, 60_000);
  afterAll(async () => {
    await mta?.stop();
    await herald?.stop();
  });

  const suppressions = async (org: Org) => (await api.get('/suppressions?limit=1000', { token: org.token })).body as { address: string; reason: string; bounceType: string; detail: string }[];

  test('a campaign through Postfix: refusals at the send and Postfix’s own bounce messages suppress every address; the next campaign skips them', async () => {
    const org = await signupOrg(api);
    const set = await api.put('/organizations/current/credentials', { email_host: '127.0.0.1', email_port: String(mta.smtpPort), email_from: 'news@herald.test' }, { token: org.token });
    expect(set.status).toBe(200);
    const noMailbox = Array.from({ length: 20 }, (_, i) => `nobody${i}@nomailbox.test`);
    const refused = Array.from({ length: 5 }, (_, i) => `someone${i}@rejected.test`);

    const started = Date.now();
    const created = await api.post(
      '/campaigns',
      { name: 'Spring sale', type: 'broadcast', channels: ['email'], recipients: { manual: [...noMailbox, ...refused] }, messages: { email: { subject: 'Spring sale', content: '<p>The spring sale is on</p>' } } },
      { token: org.token },
    );
    const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: org.token });
    expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 20, failed: 5 } });
    const sentAt = Date.now();

    // Refused at RCPT TO: suppressed before the send answered (Postfix's first bounces may be in already).
    expect((await suppressions(org)).map((s) => s.address)).toEqual(expect.arrayContaining(refused));

    // Postfix's bounce messages arrive at the listener, each naming its recipient.
    const listed = await waitFor(
      async () => {
        const rows = await suppressions(org);
        if (rows.length < 25) await mta.flush();
        return rows;
      },
      (rows) => rows.length >= 25,
      60_000,
    );
    const suppressedAt = Date.now();
    if (listed.length < 25) throw new Error(`${listed.length} of 25 suppressed; Postfix's log:\n${(await mta.log()).slice(-4000)}`);
    expect(listed.map((s) => s.address).sort()).toEqual([...noMailbox, ...refused].sort());
    expect(listed.every((s) => s.reason === 'bounce' && s.bounceType === 'hard')).toBe(true);

    const logs = (await api.get(`/message-logs?campaignId=${created.body._id}`, { token: org.token })).body as { recipients: Record<string, unknown>[] }[];
    const recipients = logs.flatMap((l) => l.recipients);
    for (const address of noMailbox) {
      expect(recipients.find((r) => r.recipient === address)).toMatchObject({ status: 'success', bounceType: 'hard', bounceReason: expect.stringMatching(/unknown user/i) });
    }
    expect((await api.get(`/campaigns/${created.body._id}`, { token: org.token })).body.analytics).toMatchObject({ sent: 20, failed: 5, bounced: 25 });

    const next = await api.post(
      '/campaigns',
      { name: 'Last call', type: 'broadcast', channels: ['email'], recipients: { manual: [...noMailbox, ...refused, 'nobody-new@nomailbox.test'] }, messages: { email: { subject: 'Last call', content: 'Last call' } } },
      { token: org.token },
    );
    const again = await api.post(`/campaigns/${next.body._id}/launch`, {}, { token: org.token });
    expect(again.body).toMatchObject({ status: 'completed', analytics: { sent: 1, suppressed: 25 } });

    process.stdout.write(
      `Postfix trial: 25 emails, ${refused.length} refused at RCPT TO, ${noMailbox.length} bounced by Postfix; launch to completed ${sentAt - started} ms, ` +
        `launch to the last address suppressed ${suppressedAt - started} ms\n`,
    );
  }, 90_000);
});
