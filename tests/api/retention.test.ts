import { purgeExpired, purgeOrganization } from '../../src/modules/retention/service.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrgs, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Retention: `retentionDays` on the organization (both doors, audited), and the daily job that
 * deletes logs (with their receipts and events), the sandbox outbox, webhook events and attempts
 * and bounce history older than it, organization by organization, while campaign analytics and
 * daily figures stay. The clock is moved by asking the purge for a later `now`.
 */

let herald: Herald, api: Client, org: Org, other: Org;
const as = (o: Org) => ({ token: o.token });
const DAY_MS = 86_400_000;

const count = async (table: string, orgId: string) => Number((await herald.db(table).where({ organization_id: orgId }).count({ n: '*' }))[0]!.n);
const TABLES = ['message_logs', 'recipient_receipts', 'message_events', 'sandbox_sends', 'webhook_events', 'webhook_deliveries', 'webhook_attempts'];
const counts = async (orgId: string) => Object.fromEntries(await Promise.all(TABLES.map(async (t) => [t, await count(t, orgId)] as const)));

let campaignId: string;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true }));
  for (const o of [org, other]) {
    expect((await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', eventTypes: ['message.sent', 'message.opened'] }, as(o))).status).toBe(201);
    expect((await api.post('/notifications/send', { type: 'sms', to: ['0712300201', '0712300202'], message: 'Kept a while' }, as(o))).status).toBe(200);
    expect((await api.post('/notifications/send', { type: 'email', to: 'keep.retention@example.com', subject: 'Hi', message: '<p>Hello</p>' }, as(o))).status).toBe(200);
  }
  const created = await api.post('/campaigns', { name: 'Old news', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Old news' } }, recipients: { manual: ['0712300203', '0712300204'] } }, as(org));
  campaignId = created.body._id;
  expect((await api.post(`/campaigns/${campaignId}/launch`, {}, as(org))).body.status).toBe('completed');
  const log = ((await api.get('/message-logs?channel=email', as(org))).body as { _id: string }[])[0]!;
  expect((await api.post('/sandbox/events', { logId: log._id, recipient: 'keep.retention@example.com', type: 'open' }, as(org))).status).toBe(200);
  // The receipts and webhook attempts of the sends have landed.
  await waitFor(() => counts(org.orgId), (c: Record<string, number>) => c.recipient_receipts >= 4 && c.webhook_attempts > 0, 20_000);
}, 90_000);
afterAll(() => herald?.stop());

describe('retentionDays', () => {
  test('395 days unless changed; an admin sets 30-3650 through either door, audited; anything else is 400 naming it', async () => {
    expect((await api.get('/organizations/current', as(org))).body.retentionDays).toBe(395);
    for (const bad of [29, 3651, 45.5, '60']) {
      const res = await api.put('/organizations/current', { retentionDays: bad }, as(org));
      expect({ bad, status: res.status, fields: res.body.details?.map((d: any) => d.field) }).toEqual({ bad, status: 400, fields: ['retentionDays'] });
    }
    const res = await api.put('/organizations/current', { retentionDays: 30 }, as(org));
    expect(res.status).toBe(200);
    expect(res.body.retentionDays).toBe(30);
    const gql = await api.gql('mutation { updateOrganization(input: { retentionDays: 31 }) { retentionDays } }', {}, as(org));
    expect(gql.body.data.updateOrganization.retentionDays).toBe(31);
    expect((await api.gql('{ organization { retentionDays } }', {}, as(org))).body.data.organization.retentionDays).toBe(31);
    expect((await api.put('/organizations/current', { retentionDays: 30 }, as(org))).status).toBe(200);
    const audit = (await api.get('/audit-log?action=organization.updated', as(org))).body as { details: any }[];
    expect(audit[0]!.details).toEqual({ changes: { retentionDays: { from: 31, to: 30 } } });
  });
});

describe('the purge', () => {
  test('only rows older than the retention go; a log takes its receipts and events with it; analytics and daily figures stay; other organizations keep theirs', async () => {
    const before = await counts(org.orgId);
    const theirs = await counts(other.orgId);
    const analytics = (await api.get(`/campaigns/${campaignId}`, as(org))).body.analytics;
    const daily = (await api.get('/stats/daily', as(org))).body.totals;
    expect(before.message_logs).toBe(3);

    // Today nothing is old enough.
    expect(await purgeExpired(herald.db)).toBe(0);
    // 31 days on: everything of the organization that keeps 30 days goes; the other keeps 395.
    const deleted = await purgeExpired(herald.db, new Date(Date.now() + 31 * DAY_MS), 2);
    expect(deleted).toBeGreaterThan(0);
    expect(await counts(org.orgId)).toEqual(Object.fromEntries(TABLES.map((t) => [t, 0])));
    expect(await counts(other.orgId)).toEqual(theirs);
    expect((await api.get('/message-logs', as(org))).body).toEqual([]);
    expect((await api.get('/sandbox/outbox', as(org))).body).toEqual([]);
    expect((await api.get(`/campaigns/${campaignId}`, as(org))).body.analytics).toEqual(analytics);
    expect((await api.get('/stats/daily', as(org))).body.totals).toEqual(daily);
    // Run again: nothing left.
    expect(await purgeExpired(herald.db, new Date(Date.now() + 31 * DAY_MS))).toBe(0);
  });

  test('the cutoff is exact: a log a millisecond younger than the retention stays', async () => {
    for (const message of ['older', 'younger']) expect((await api.post('/notifications/send', { type: 'sms', to: '0712300205', message }, as(org))).status).toBe(200);
    const now = Date.now();
    const logs = (await api.get('/message-logs', as(org))).body as { _id: string; messagePreview: string }[];
    const at = (preview: string, ms: number) => herald.db('message_logs').where({ organization_id: org.orgId, id: logs.find((l) => l.messagePreview === preview)!._id }).update({ created_at: new Date(ms) });
    await at('older', now - 30 * DAY_MS - 1);
    await at('younger', now - 30 * DAY_MS + 1);
    expect(await purgeOrganization(herald.db, org.orgId, new Date(now - 30 * DAY_MS))).toMatchObject({ message_logs: 1 });
    expect(((await api.get('/message-logs', as(org))).body as { messagePreview: string }[]).map((l) => l.messagePreview)).toEqual(['younger']);
  });

  test('the daily job is queued once for the whole cluster', async () => {
    const { rows } = await herald.db.raw(`SELECT count(*)::int AS n, min(run_at) AS run_at FROM graphile_worker.jobs WHERE task_identifier = 'retention'`);
    expect(rows[0].n).toBe(1);
  });
});
