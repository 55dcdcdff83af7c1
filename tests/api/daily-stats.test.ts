import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { jsonRows, run, type Statement as Named } from '../../src/db/statements.js';
import { pendingRecipientsJson, settledRecipientsJson } from '../../src/delivery/log-recipients.js';
import { insertPendingLogs, settleLogs } from '../../src/delivery/sql/logs.js';
import { foldChanges } from '../../src/delivery/sql/stats.js';
import { record } from '../../src/modules/receipts/service.js';
import { reportSandboxReceipts } from '../../src/modules/sandbox/receipts.js';
import { foldStats } from '../../src/modules/stats/service.js';
import { dailyFigures, funnelCampaign, funnelFigures, funnelTimeline } from '../../src/modules/stats/sql.js';
import type { Herald } from '../../src/server.js';
import { addUser, createApiKey, heraldWithOrgs, type Client, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization, type Statement } from '../helpers/statements.js';

/**
 * `GET /stats/daily` and `dailyStats`, `GET /campaigns/:id/funnel` and `Campaign.funnel`: the
 * rollup the settles and receipts keep equals what the logs and receipts hold, day by day (in UTC and
 * in zones east and west of it, whole hours or not) and channel by channel, through both doors,
 * folded or not, never another organization's.
 */

let herald: Herald, api: Client, org: Org, other: Org;
const as = (o: Org) => ({ token: o.token });

const DAY_MS = 86_400_000;
const midnight = Math.floor(Date.now() / DAY_MS) * DAY_MS;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const TODAY = dayOf(midnight);
const YESTERDAY = dayOf(midnight - DAY_MS);
const SIX_DAYS_AGO = dayOf(midnight - 6 * DAY_MS);
const SEVEN_DAYS_AGO = dayOf(midnight - 7 * DAY_MS);

/**
 * A log of `orgId` written by the send's own statements at `createdAt` (the clock moved: its row
 * written pending, dated, then settled), each recipient sent but those of `failed`; answers its id.
 */
async function logAt(orgId: string, channel: 'sms' | 'email' | 'whatsapp', createdAt: Date, recipients: string[], failed: number[] = []): Promise<string> {
  const id = randomUUID();
  const sent = recipients.length - failed.length;
  const unit = channel === 'email' ? 0.5 : 1;
  await run(herald.db, insertPendingLogs, {
    orgId, channel, senderUserId: null, senderApiKeyId: null, campaignId: null, test: false,
    logs: jsonRows([{ id, recipients: pendingRecipientsJson(recipients.map((recipient) => ({ recipient }))), pending_count: recipients.length, failed_count: 0,
                      reserved: recipients.length * unit, preview: 'Boundary', length: 8, unit_cost: unit }], 'recipients'),
  });
  await herald.db('message_logs').where({ organization_id: orgId, id }).update({ created_at: createdAt });
  const outcomes = recipients.map((recipient, i) => (failed.includes(i) ? { recipient, status: 'failed' as const, error: 'Refused' } : { recipient, status: 'success' as const }));
  await run(herald.db, settleLogs, {
    orgId,
    logs: jsonRows([{ id, recipients: settledRecipientsJson(outcomes), success_count: sent, failed_count: failed.length, cost: sent * unit, network: null, provider_ids: null, carriers: null }], 'recipients'),
  });
  return id;
}

/** Logs as `GET /message-logs?<query>` lists them: id, campaign, whether a test send, each recipient's position by address. */
async function logsOf(owner: Org, query: string) {
  const res = await api.get(`/message-logs?${query}`, as(owner));
  expect(res.status).toBe(200);
  return (res.body as { _id: string; campaignId: string | null; test: boolean; recipients: { recipient: string }[] }[]).map((l) => ({
    id: l._id,
    campaignId: l.campaignId,
    test: l.test,
    position: (address: string) => l.recipients.findIndex((r) => r.recipient === address) + 1,
  }));
}

const campaignEmailLog = async () => (await logsOf(org, `campaignId=${campaignId}&channel=email`)).find((l) => !l.test)!;

type Figures = { sent: number; failed: number; delivered: number; opened: number; clicked: number; bounced: number; complained: number; credits: number };

/** What the logs and receipts of `orgId` hold, per day of `zone` and channel: counted here from the rows themselves. */
async function countedFromLogs(orgId: string, zone: string): Promise<Map<string, Figures>> {
  const { rows } = (await herald.db.raw(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, channel, sum(sent)::int AS sent, sum(failed)::int AS failed, sum(delivered)::int AS delivered,
            sum(opened)::int AS opened, sum(clicked)::int AS clicked, sum(bounced)::int AS bounced, sum(complained)::int AS complained,
            sum(credits)::float AS credits
     FROM (SELECT (created_at AT TIME ZONE ?)::date AS day, channel, success_count AS sent, failed_count AS failed, 0 AS delivered, 0 AS opened,
                  0 AS clicked, 0 AS bounced, 0 AS complained, cost AS credits
           FROM message_logs WHERE organization_id = ? AND settled_at IS NOT NULL
           UNION ALL
           SELECT (m.created_at AT TIME ZONE ?)::date, m.channel, 0, 0, count(*) FILTER (WHERE r.delivered_at IS NOT NULL),
                  count(*) FILTER (WHERE r.opened_at IS NOT NULL OR r.read_at IS NOT NULL), count(*) FILTER (WHERE r.clicked_at IS NOT NULL),
                  count(*) FILTER (WHERE r.bounced_at IS NOT NULL), count(*) FILTER (WHERE r.complained_at IS NOT NULL), 0
           FROM recipient_receipts r JOIN message_logs m ON m.organization_id = r.organization_id AND m.id = r.log_id
           WHERE r.organization_id = ? GROUP BY 1, 2) x
     GROUP BY day, channel`,
    [zone, orgId, zone, orgId],
  )) as { rows: (Figures & { day: string; channel: string })[] };
  return new Map(rows.map(({ day, channel, ...figures }) => [`${day}/${channel}`, figures]));
}

const ZERO: Figures = { sent: 0, failed: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, credits: 0 };
const NO_UNSUBSCRIBES = { unsubscribed: 0 };
const figuresOf = (item: Figures) => ({ sent: item.sent, failed: item.failed, delivered: item.delivered, opened: item.opened, clicked: item.clicked, bounced: item.bounced, complained: item.complained, credits: item.credits });

/** Every day and channel of an answer equals the logs' counts (zeros where the logs have none), and the totals add them up. */
async function expectEqualToLogs(owner: Org, body: any) {
  const counted = await countedFromLogs(owner.orgId, body.timeZone);
  for (const item of body.daily) expect({ at: `${item.date}/${item.channel}`, ...figuresOf(item) }).toEqual({ at: `${item.date}/${item.channel}`, ...(counted.get(`${item.date}/${item.channel}`) ?? ZERO) });
  const inRange = [...counted].filter(([key]) => key.slice(0, 10) >= body.from && (!body.channel || key.endsWith(`/${body.channel}`)));
  const sum = (k: keyof Figures) => Math.round(inRange.reduce((n, [, f]) => n + f[k], 0) * 100) / 100;
  expect(figuresOf(body.totals)).toEqual({ sent: sum('sent'), failed: sum('failed'), delivered: sum('delivered'), opened: sum('opened'), clicked: sum('clicked'), bounced: sum('bounced'), complained: sum('complained'), credits: sum('credits') });
}

const cell = (body: any, date: string, channel: string) => body.daily.find((d: any) => d.date === date && d.channel === channel);

let campaignId: string;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  const send = (o: Org, body: object) => api.post('/notifications/send', body, as(o));
  // Today, through the API: three SMS (a number ending in 0000 fails), two emails; theirs, three SMS.
  expect((await send(org, { type: 'sms', to: ['0712345678', '0712345679', '+254712340000'], message: 'Hello' })).status).toBe(200);
  expect((await send(org, { type: 'email', to: ['jo@example.com', 'al@example.com'], subject: 'Hi', message: 'Hello' })).status).toBe(200);
  expect((await send(other, { type: 'sms', to: ['0712345601', '0712345602', '0712345603'], message: 'Theirs' })).status).toBe(200);

  // A campaign of two SMS and three emails, with a test send beforehand (counted in the day, never in the campaign).
  const created = await api.post(
    '/campaigns',
    { name: 'Funnel', type: 'broadcast', channels: ['sms', 'email'], messages: { sms: { content: 'Sale' }, email: { subject: 'Sale', content: 'Sale on' } },
      recipients: { manual: ['0712345611', '0712345612', 'c1@example.com', 'c2@example.com', 'c3@example.com'] } },
    as(org),
  );
  expect(created.status).toBe(201);
  campaignId = created.body._id;
  expect((await api.post(`/campaigns/${campaignId}/test`, { to: ['0712345699'] }, as(org))).status).toBe(200);
  expect((await api.post(`/campaigns/${campaignId}/launch`, {}, as(org))).body.status).toBe('completed');

  // Around midnight UTC: the day before's last millisecond and today's first, the 7-day range's first day and the day before it.
  const lastOfYesterday = await logAt(org.orgId, 'sms', new Date(midnight - 1), ['+254712345621', '+254712345622', '+254712345623'], [2]);
  await logAt(org.orgId, 'sms', new Date(midnight), ['+254712345631', '+254712345632']);
  await logAt(org.orgId, 'email', new Date(midnight - 6 * DAY_MS), ['old1@example.com']);
  await logAt(org.orgId, 'email', new Date(midnight - 6 * DAY_MS - 1), ['older@example.com', 'older2@example.com']);

  // Receipts: the sandbox's deliveries of today's SMS and the campaign's; one of yesterday's delivered
  // today (it counts on the day it was sent); opens and a click through the sandbox's events; a
  // bounce, a complaint, a duplicate and a scanner's open.
  const smsLogs = await logsOf(org, 'channel=sms');
  const adhocSms = smsLogs.find((l) => l.position('+254712345678') > 0)!;
  const campaignSms = smsLogs.find((l) => l.campaignId === campaignId && !l.test)!;
  await reportSandboxReceipts(herald.db, { orgId: org.orgId, kind: 'delivered', logs: [{ logId: adhocSms.id }, { logId: campaignSms.id }] });
  await record(herald.db, org.orgId, { logId: lastOfYesterday, position: 1 }, { kind: 'delivered', at: new Date() });
  const adhocEmail = (await logsOf(org, 'channel=email')).find((l) => l.position('jo@example.com') > 0)!;
  expect((await api.post('/sandbox/events', { logId: adhocEmail.id, recipient: 'jo@example.com', type: 'open' }, as(org))).status).toBe(200);
  expect((await api.post('/sandbox/events', { logId: adhocEmail.id, recipient: 'al@example.com', type: 'click', url: 'https://example.com/a' }, as(org))).status).toBe(200);
  const campaignEmail = await campaignEmailLog();
  const at = (address: string) => ({ logId: campaignEmail.id, position: campaignEmail.position(address) });
  expect(await record(herald.db, org.orgId, at('c1@example.com'), { kind: 'bounced', bounceType: 'hard', error: '550 gone', at: new Date() })).toBe('changed');
  expect(await record(herald.db, org.orgId, at('c2@example.com'), { kind: 'complained', at: new Date() })).toBe('changed');
  expect(await record(herald.db, org.orgId, at('c3@example.com'), { kind: 'opened', at: new Date() })).toBe('changed');
  expect(await record(herald.db, org.orgId, at('c3@example.com'), { kind: 'opened', at: new Date() })).toBe('unchanged');
  expect(await record(herald.db, org.orgId, at('c1@example.com'), { kind: 'opened', at: new Date(), scanner: true })).toBe('unchanged');
}, 60_000);
afterAll(() => herald?.stop());

const DAILY = `query Daily($days: Int, $channel: Channel, $timeZone: String) {
  dailyStats(days: $days, channel: $channel, timeZone: $timeZone) {
    days from to timeZone channel
    daily { date channel sent failed delivered opened clicked bounced complained unsubscribed credits }
    byChannel { channel sent failed delivered opened clicked bounced complained unsubscribed credits }
    totals { sent failed delivered opened clicked bounced complained unsubscribed credits }
  }
}`;

describe('GET /stats/daily', () => {
  test('every day and channel of the last 7 days (UTC), zeros included, equal to the logs; a day ends at midnight UTC', async () => {
    const res = await api.get('/stats/daily', as(org));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ days: 7, from: SIX_DAYS_AGO, to: TODAY, timeZone: 'UTC', channel: null });
    expect(res.body.daily).toHaveLength(21);
    expect(res.body.daily.slice(0, 3).map((d: any) => `${d.date}/${d.channel}`)).toEqual([`${SIX_DAYS_AGO}/sms`, `${SIX_DAYS_AGO}/email`, `${SIX_DAYS_AGO}/whatsapp`]);
    await expectEqualToLogs(org, res.body);

    // What was sent, as the test sent it: today 2 + 2 (campaign) + 1 (its test send) + 2 (at midnight) SMS, yesterday's last millisecond 2 of 3.
    expect(cell(res.body, TODAY, 'sms')).toMatchObject({ sent: 7, failed: 1, delivered: 4, credits: 7 });
    expect(cell(res.body, TODAY, 'email')).toMatchObject({ sent: 5, opened: 3, clicked: 1, bounced: 1, complained: 1, credits: 2.5 });
    expect(cell(res.body, YESTERDAY, 'sms')).toMatchObject({ sent: 2, failed: 1, delivered: 1, credits: 2 });
    expect(cell(res.body, SIX_DAYS_AGO, 'email')).toMatchObject({ sent: 1, credits: 0.5 });
    expect(res.body.daily.some((d: any) => d.date === SEVEN_DAYS_AGO)).toBe(false);
    expect(res.body.byChannel.map((c: any) => [c.channel, c.sent])).toEqual([['sms', 9], ['email', 6], ['whatsapp', 0]]);
  });

  test('30 days reaches the day before the 7; one channel; another organization sees only its own', async () => {
    const month = await api.get('/stats/daily?days=30', as(org));
    expect(month.body).toMatchObject({ days: 30, from: dayOf(midnight - 29 * DAY_MS) });
    expect(month.body.daily).toHaveLength(90);
    expect(cell(month.body, SEVEN_DAYS_AGO, 'email')).toMatchObject({ sent: 2 });
    await expectEqualToLogs(org, month.body);

    const sms = await api.get('/stats/daily?days=90&channel=sms', as(org));
    expect(sms.body).toMatchObject({ days: 90, channel: 'sms' });
    expect(sms.body.daily).toHaveLength(90);
    expect(new Set(sms.body.daily.map((d: any) => d.channel))).toEqual(new Set(['sms']));
    expect(sms.body.byChannel).toEqual([expect.objectContaining({ channel: 'sms', sent: 9 })]);
    await expectEqualToLogs(org, sms.body);

    const theirs = await api.get('/stats/daily', as(other));
    expect(theirs.body.totals).toEqual({ ...ZERO, ...NO_UNSUBSCRIBES, sent: 3, credits: 3 });
    await expectEqualToLogs(other, theirs.body);
  });

  test('days in another time zone run midnight to midnight there: east and west of UTC, a quarter-hour offset, daylight saving', async () => {
    // In Kathmandu (UTC+5:45), a day starts at 18:15 UTC the day before: these two WhatsApp logs
    // are a millisecond apart and a day apart there, and both on yesterday in UTC.
    const kathmanduMidnight = midnight - (5 * 60 + 45) * 60_000;
    await logAt(org.orgId, 'whatsapp', new Date(kathmanduMidnight - 1), ['+254712345641']);
    await logAt(org.orgId, 'whatsapp', new Date(kathmanduMidnight), ['+254712345642', '+254712345643']);

    const utc = (await api.get('/stats/daily?days=30', as(org))).body;
    expect(cell(utc, YESTERDAY, 'whatsapp')).toMatchObject({ sent: 3 });
    expect(cell(utc, YESTERDAY, 'sms')).toMatchObject({ sent: 2, failed: 1 });

    const kathmandu = await api.get('/stats/daily?days=30&timeZone=Asia/Kathmandu', as(org));
    expect(kathmandu.status).toBe(200);
    expect(kathmandu.body.timeZone).toBe('Asia/Kathmandu');
    expect(cell(kathmandu.body, YESTERDAY, 'whatsapp')).toMatchObject({ sent: 1 });
    expect(cell(kathmandu.body, TODAY, 'whatsapp')).toMatchObject({ sent: 2 });
    await expectEqualToLogs(org, kathmandu.body);

    // Nairobi (UTC+3): yesterday's last UTC millisecond is 02:59 today there, so Nairobi's yesterday has no SMS at all.
    const nairobi = (await api.get('/stats/daily?days=30&timeZone=Africa/Nairobi', as(org))).body;
    expect(cell(nairobi, YESTERDAY, 'sms')).toMatchObject({ sent: 0, failed: 0 });
    expect(cell(nairobi, TODAY, 'sms').sent).toBeGreaterThanOrEqual(cell(utc, YESTERDAY, 'sms').sent + 2);
    await expectEqualToLogs(org, nairobi);
    // The zone's today ends the range, whatever the hour in UTC.
    const nairobiToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Africa/Nairobi' }).format(new Date());
    expect(nairobi).toMatchObject({ to: nairobiToday, days: 30 });
    expect(nairobi.daily).toHaveLength(90);

    // West of UTC, with daylight saving inside 90 days for much of the year.
    for (const zone of ['America/New_York', 'America/Los_Angeles', 'Pacific/Chatham']) {
      const res = await api.get(`/stats/daily?days=90&timeZone=${zone}`, as(org));
      expect(res.status).toBe(200);
      await expectEqualToLogs(org, res.body);
    }
    // Every zone's totals over a range that holds every log are the same.
    const totals = async (zone: string) => (await api.get(`/stats/daily?days=90&timeZone=${zone}`, as(org))).body.totals;
    expect(await totals('Asia/Kathmandu')).toEqual(await totals('UTC'));
  });

  test('a time zone that is not an IANA name is 400 naming timeZone; an offset is refused (the database would read its sign the other way)', async () => {
    for (const zone of ['Mars/Olympus', '+03:00', 'UTC+3', '', 'x'.repeat(65), 'Africa/Nairobi;DROP']) {
      const res = await api.get(`/stats/daily?timeZone=${encodeURIComponent(zone)}`, as(org));
      expect({ zone, status: res.status }).toEqual({ zone, status: 400 });
      expect(res.body.details).toEqual([{ field: 'timeZone', message: 'timeZone must be an IANA time zone (Africa/Nairobi, UTC)' }]);
    }
    const gql = await api.gql(DAILY, { timeZone: 'Mars/Olympus' }, as(org));
    expect(gql.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', details: [expect.objectContaining({ field: 'timeZone' })] });
  });

  test('the same figures once the sweep folded the changes', async () => {
    const before = (await api.get('/stats/daily?days=30', as(org))).body;
    expect(Number((await herald.db('message_stats_changes').where({ organization_id: org.orgId }).count({ n: '*' }))[0]!.n)).toBeGreaterThan(0);
    expect(await foldStats(herald.db)).toBeGreaterThan(0);
    expect(Number((await herald.db('message_stats_changes').count({ n: '*' }))[0]!.n)).toBe(0);
    const after = (await api.get('/stats/daily?days=30', as(org))).body;
    expect(after).toEqual(before);
    // A receipt after the fold: a change again, read beside the folded rows.
    const log = await campaignEmailLog();
    expect(await record(herald.db, org.orgId, { logId: log.id, position: log.position('c3@example.com') }, { kind: 'clicked', at: new Date() })).toBe('changed');
    const again = (await api.get('/stats/daily?days=30', as(org))).body;
    expect(cell(again, TODAY, 'email').clicked).toBe(cell(after, TODAY, 'email').clicked + 1);
    await expectEqualToLogs(org, again);
  });

  test('any role and API keys may read it; no credential is 401; a range other than 7, 30 or 90, or an unknown channel, is 400', async () => {
    const user = await addUser(api, org, 'user');
    expect((await api.get('/stats/daily', { token: user.token })).status).toBe(200);
    const { key } = await createApiKey(api, org, 'user');
    expect((await api.get('/stats/daily?days=90', { apiKey: key })).status).toBe(200);
    expect((await api.get('/stats/daily')).status).toBe(401);
    const bad = await api.get('/stats/daily?days=8&channel=fax', as(org));
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: any) => d.field).sort()).toEqual(['channel', 'days']);
    expect((await api.get('/stats/daily?since=2026-01-01', as(org))).status).toBe(400);
  });
});

describe('dailyStats (GraphQL)', () => {
  test('the same answer as REST; a bad range is BAD_REQUEST naming it', async () => {
    for (const [variables, query] of [[{}, ''], [{ days: 30, channel: 'email' }, '?days=30&channel=email'], [{ timeZone: 'Asia/Kolkata' }, '?timeZone=Asia/Kolkata']] as const) {
      const res = await api.gql(DAILY, variables, as(org));
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.dailyStats).toEqual((await api.get(`/stats/daily${query}`, as(org))).body);
    }
    const bad = await api.gql(DAILY, { days: 14 }, as(org));
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400, details: [expect.objectContaining({ field: 'days' })] });
  });
});

const FUNNEL = `query Funnel($id: ID!) {
  campaign(id: $id) {
    analytics { sent failed delivered opened clicked bounced complained suppressed capped }
    funnel {
      audience suppressed capped sent failed delivered opened clicked bounced complained unsubscribed credits
      byChannel { channel audience sent failed delivered opened clicked bounced complained unsubscribed credits }
      timeline { bucketMinutes points { at sent failed } }
    }
  }
}`;

describe('a campaign’s funnel', () => {
  test('from its audience to its clicks, per channel, its cost and its sends over time; its test send left out; equal to its analytics', async () => {
    const res = await api.get(`/campaigns/${campaignId}/funnel`, as(org));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ audience: 5, suppressed: 0, capped: 0, sent: 5, failed: 0, delivered: 2, opened: 1, clicked: 1, bounced: 1, complained: 1, unsubscribed: 0, credits: 3.5 });
    expect(res.body.byChannel).toEqual([
      { channel: 'sms', audience: 2, sent: 2, failed: 0, delivered: 2, opened: 0, clicked: 0, bounced: 0, complained: 0, unsubscribed: 0, credits: 2 },
      { channel: 'email', audience: 3, sent: 3, failed: 0, delivered: 0, opened: 1, clicked: 1, bounced: 1, complained: 1, unsubscribed: 0, credits: 1.5 },
    ]);
    expect(res.body.timeline.bucketMinutes).toBe(1);
    expect(res.body.timeline.points.reduce((n: number, p: any) => n + p.sent, 0)).toBe(5);

    const gql = await api.gql(FUNNEL, { id: campaignId }, as(org));
    expect(gql.body.errors).toBeUndefined();
    const { analytics, funnel } = gql.body.data.campaign;
    expect(funnel).toEqual(res.body);
    const { audience: _audience, credits: _credits, unsubscribed: _unsubscribed, byChannel: _byChannel, timeline: _timeline, ...counters } = funnel;
    expect(counters).toEqual(analytics);
  });

  test('an unsubscribe through the link of one of its emails counts once in its funnel, and on today in the days; a test send\'s link counts in none', async () => {
    const outbox = (await api.get('/sandbox/outbox?limit=100', as(org))).body as { recipient: string; campaignId: string | null; test?: boolean; headers: Record<string, string> }[];
    const linkOf = (item: { headers: Record<string, string> }) => new URL(/^<([^>]+)>$/.exec(item.headers['List-Unsubscribe']!)![1]!).pathname;
    const sent = outbox.find((m) => m.recipient === 'c3@example.com')!;
    const todayBefore = cell((await api.get('/stats/daily', as(org))).body, TODAY, 'email').unsubscribed;
    const oneClick = () => fetch(`${herald.url}${linkOf(sent)}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    expect((await oneClick()).status).toBe(200);
    expect((await oneClick()).status).toBe(200);
    const funnel = (await api.get(`/campaigns/${campaignId}/funnel`, as(org))).body;
    expect(funnel).toMatchObject({ unsubscribed: 1 });
    expect(funnel.byChannel.map((c: any) => [c.channel, c.unsubscribed])).toEqual([['sms', 0], ['email', 1]]);
    expect(cell((await api.get('/stats/daily', as(org))).body, TODAY, 'email').unsubscribed).toBe(todayBefore + 1);

    // A campaign's test send is not the campaign's: its link unsubscribes but counts in no funnel.
    expect((await api.post(`/campaigns/${campaignId}/test`, { to: ['tester@example.com'] }, as(org))).status).toBe(200);
    const test = ((await api.get('/sandbox/outbox?limit=100', as(org))).body as typeof outbox).find((m) => m.recipient === 'tester@example.com')!;
    const res = await fetch(`${herald.url}${linkOf(test)}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    expect(res.status).toBe(200);
    expect((await api.get(`/campaigns/${campaignId}/funnel`, as(org))).body.unsubscribed).toBe(1);
  });

  test('a draft has zeros; another organization’s campaign, or no campaign, is 404', async () => {
    const draft = await api.post('/campaigns', { name: 'Draft', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hi' } } }, as(org));
    expect((await api.get(`/campaigns/${draft.body._id}/funnel`, as(org))).body).toEqual({ audience: 0, suppressed: 0, capped: 0, ...ZERO, ...NO_UNSUBSCRIBES, byChannel: [], timeline: { bucketMinutes: 1, points: [] } });
    expect((await api.get(`/campaigns/${campaignId}/funnel`, as(other))).status).toBe(404);
    expect((await api.get(`/campaigns/${randomUUID()}/funnel`, as(org))).status).toBe(404);
    expect((await api.get('/campaigns/not-an-id/funnel', as(org))).status).toBe(404);
  });
});

test('the statements stay with the organization (one shard on Citus, an organization-restricted scan otherwise)', async () => {
  const statement = <P extends object>(st: Named<P, any>, params: P): Statement => ({ sql: st.text, bindings: st.order.map((k) => params[k]) });
  const orgId = org.orgId;
  const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();
  try {
    await expectEachWithOrganization(
      explain,
      [
        statement(dailyFigures, { orgId, from: SIX_DAYS_AGO, timeZone: 'UTC', channel: null }),
        statement(dailyFigures, { orgId, from: SIX_DAYS_AGO, timeZone: 'Asia/Kathmandu', channel: 'sms' }),
        statement(funnelCampaign, { orgId, campaignId }),
        statement(funnelFigures, { orgId, campaignId }),
        statement(funnelTimeline, { orgId, campaignId, points: 60 }),
        statement(foldChanges, { orgId, limit: 10_000 }),
      ],
      orgId,
    );
  } finally {
    await explain.end();
  }
});
