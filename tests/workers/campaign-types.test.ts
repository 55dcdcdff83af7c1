import type { Herald } from '../../src/server.js';
import { RUN_TASK, runJobKey } from '../../src/modules/campaigns/jobs.js';
import { fireRun } from '../../src/modules/campaigns/runs.js';
import { client, isolatedDatabase, signupOrg, startTestHerald, waitFor, ISO_MS, UUID_RE, type Client, type Credential, type Org } from '../helpers/herald.js';
import { makeGroup } from '../helpers/contacts-groups.js';

/**
 * platform.md, "Campaign types": recurring campaigns (an RRULE in a time zone, runs over a fake
 * clock, across a daylight-saving change, restarts, two firings of one time) and automated ones
 * (triggered by contact creation, by joining a group, by an import; the delay; once per contact;
 * consent read at send time), cancellation of both, and credits running out.
 */

let herald: Herald;
let api: Client;
let database: Awaited<ReturnType<typeof isolatedDatabase>>;
const ENV = { CAMPAIGN_INLINE_LIMIT: '5', CAMPAIGN_LEASE_SECONDS: '2' };

// A database of its own: its jobs are fired on this file's fake clock, never by the workers of
// other test files (on the wall clock, they would find a run early and queue it again for its time).
beforeAll(async () => {
  database = await isolatedDatabase('campaign_types');
  herald = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
  api = client(herald.url);
});
afterAll(async () => {
  await herald?.stop();
  await database?.drop();
});

const sms = { sms: { content: 'Weekly news for {{ contact.name }}' } };
const auth = (org: Org): Credential => ({ token: org.token });

async function create(org: Org, body: Record<string, unknown>) {
  return api.post('/campaigns', { name: 'Typed', channels: ['sms'], messages: sms, ...body }, auth(org));
}

async function created(org: Org, body: Record<string, unknown>) {
  const res = await create(org, body);
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function contact(org: Org, body: Record<string, unknown>) {
  const res = await api.post('/contacts', body, auth(org));
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const runsOf = async (org: Org, id: string) => (await api.get(`/campaigns/${id}/runs`, auth(org))).body as any[];
const campaignOf = async (org: Org, id: string) => (await api.get(`/campaigns/${id}`, auth(org))).body;
const launch = (org: Org, id: string) => api.post(`/campaigns/${id}/launch`, undefined, auth(org));
const setCredits = (org: Org, credits: number) => herald.db('organization_credits').where({ organization_id: org.orgId }).update({ credits });

/** The recipients a campaign's (and its runs') logs hold, with their status. */
async function recipientsOf(org: Org, id: string) {
  const logs = (await api.get(`/message-logs?campaignId=${id}&limit=1000`, auth(org))).body as any[];
  return logs.flatMap((l) => l.recipients.map((r: any) => `${r.recipient}:${r.status}`)).sort();
}

/** The waiting job of a key (graphile-worker's tables: its public view has no payload). */
const jobOf = async (key: string) =>
  (
    await herald.db.raw(
      `SELECT t.identifier AS task_identifier, j.payload, j.run_at FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE j.key = ?`,
      [key],
    )
  ).rows[0] as
    | { task_identifier: string; payload: { scheduledAt: string }; run_at: Date }
    | undefined;

/** A fake clock for the campaigns: stands still at `at` until set again. */
function setClock(at: string) {
  herald.deps.clock = () => new Date(at);
}

/** Time passes up to the waiting run job of a campaign: the clock moves to its time and it runs now. */
async function runDueJob(campaignId: string) {
  const job = await jobOf(runJobKey(campaignId));
  expect(job?.task_identifier).toBe(RUN_TASK);
  setClock(job!.payload.scheduledAt);
  await herald.deps.queue.add({ task: RUN_TASK, payload: job!.payload, runAt: new Date(), jobKey: runJobKey(campaignId) });
  return job!.payload.scheduledAt;
}

afterEach(() => {
  delete herald.deps.clock;
});

describe('validation', () => {
  let org: Org;
  beforeAll(async () => {
    org = await signupOrg(api);
  });

  const problem = async (body: Record<string, unknown>) => {
    const res = await create(org, body);
    expect(res.status).toBe(400);
    return res.body.message as string;
  };

  test('a recurring campaign needs a rule that fires, at most hourly, in a real time zone', async () => {
    expect(await problem({ type: 'recurring' })).toMatch(/recurrence is required for a recurring campaign/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=MINUTELY', timezone: 'UTC' } })).toMatch(
      /recurrence.rule fires more often than once an hour \(FREQ=MINUTELY\)/,
    );
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=HOURLY;BYMINUTE=0,30', timezone: 'UTC' } })).toMatch(/more often than once an hour/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=DAILY;UNTIL=20200101T000000Z', timezone: 'UTC' } })).toMatch(/never fires/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30', timezone: 'UTC' } })).toMatch(/never fires/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=WEEKLY;BYDAY=XX', timezone: 'UTC' } })).toMatch(/unknown day in BYDAY=XX/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=25', timezone: 'UTC' } })).toMatch(/invalid value in BYHOUR=25/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=DAILY;FOO=1', timezone: 'UTC' } })).toMatch(/unknown property FOO/);
    expect(await problem({ type: 'recurring', recurrence: { rule: 'FREQ=DAILY', timezone: 'Mars/Olympus' } })).toMatch(/recurrence.timezone Mars\/Olympus is not an IANA time zone/);
    expect(await problem({ type: 'broadcast', recurrence: { rule: 'FREQ=DAILY', timezone: 'UTC' } })).toMatch(/recurrence is only for recurring campaigns/);
  });

  test('an automated campaign needs a trigger (with its group), a delay up to a year, and no recipients', async () => {
    const group = await makeGroup(api, auth(org), { name: 'Welcome' });
    expect(await problem({ type: 'automated' })).toMatch(/trigger is required for an automated campaign/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.added_to_group' } })).toMatch(/trigger.groupId is required/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.created', groupId: group._id } })).toMatch(/trigger.groupId is only for contact.added_to_group/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.deleted' } })).toMatch(/trigger.event/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.added_to_group', groupId: '00000000-0000-4000-8000-000000000000' } })).toMatch(
      /trigger.groupId contains unknown ids/,
    );
    expect(await problem({ type: 'automated', trigger: { event: 'contact.created' }, delay: 'tomorrow' })).toMatch(/delay must be an ISO 8601 duration/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.created' }, delay: 'P2Y' })).toMatch(/delay must be an ISO 8601 duration/);
    expect(await problem({ type: 'automated', trigger: { event: 'contact.created' }, recipients: { manual: ['0712000000'] } })).toMatch(/trigger chooses the contacts/);
    expect(await problem({ type: 'broadcast', trigger: { event: 'contact.created' } })).toMatch(/trigger is only for automated campaigns/);
    expect(await problem({ type: 'targeted', delay: 'PT1H' })).toMatch(/delay is only for automated campaigns/);
    const ok = await created(org, { type: 'automated', trigger: { event: 'contact.added_to_group', groupId: group._id }, delay: 'P1DT2H' });
    expect(ok).toMatchObject({ type: 'automated', trigger: { event: 'contact.added_to_group', groupId: group._id }, delay: 'P1DT2H', recurrence: null });
  });

  test('a draft takes a new rule, trigger or delay; a launched one refuses them (409)', async () => {
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi' } });
    expect(c.recurrence).toMatchObject({ rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', summary: 'every week on Monday at 09:00 Nairobi time', nextRunAt: null });
    expect(c.recurrence.upcoming).toHaveLength(5);
    const moved = await api.put(`/campaigns/${c._id}`, { recurrence: { rule: 'rrule:freq=daily;byhour=7;byminute=30', timezone: 'Europe/London' } }, auth(org));
    expect(moved.status).toBe(200);
    expect(moved.body.recurrence).toMatchObject({ rule: 'FREQ=DAILY;BYHOUR=7;BYMINUTE=30', timezone: 'Europe/London', summary: 'every day at 07:30 London time' });
    expect((await api.put(`/campaigns/${c._id}`, { trigger: { event: 'contact.created' } }, auth(org))).status).toBe(400);
    expect((await api.put(`/campaigns/${c._id}`, { recurrence: { rule: 'FREQ=SECONDLY', timezone: 'UTC' } }, auth(org))).status).toBe(400);
    await contact(org, { name: 'Reader', phone: '0712300001' });
    expect((await launch(org, c._id)).body.status).toBe('active');
    const refused = await api.put(`/campaigns/${c._id}`, { recurrence: { rule: 'FREQ=DAILY', timezone: 'UTC' } }, auth(org));
    expect(refused.status).toBe(409);
  });
});

describe('recurring campaigns over a fake clock', () => {
  test('runs fire at the rule times across a daylight-saving change, each to the audience as it is then, once', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Ann', phone: '0712400001' });
    // 02:30 every night in New York: on 14 March 2027 the clocks skip from 02:00 to 03:00. (Fake
    // times lie ahead of the real one: the sweeper, on the wall clock, sees nothing overdue.)
    setClock('2027-03-13T07:00:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=2;BYMINUTE=30', timezone: 'America/New_York' } });
    const launched = await launch(org, c._id);
    expect(launched.status).toBe(200);
    expect(launched.body).toMatchObject({ _id: c._id, status: 'active' });
    expect((await campaignOf(org, c._id)).recurrence).toMatchObject({
      nextRunAt: '2027-03-13T07:30:00.000Z',
      upcoming: ['2027-03-13T07:30:00.000Z', '2027-03-14T07:30:00.000Z', '2027-03-15T06:30:00.000Z', '2027-03-16T06:30:00.000Z', '2027-03-17T06:30:00.000Z'],
    });
    // The job waits as long on the wall clock as the run is ahead on the campaigns' clock.
    const job = await jobOf(runJobKey(c._id));
    expect(job!.payload.scheduledAt).toBe('2027-03-13T07:30:00.000Z');
    expect(Math.abs(job!.run_at.getTime() - (Date.now() + 30 * 60_000))).toBeLessThan(60_000);

    expect(await runDueJob(c._id)).toBe('2027-03-13T07:30:00.000Z');
    let runs = await waitFor(() => runsOf(org, c._id), (r) => r.length === 1 && r[0].status === 'completed');
    expect(runs[0]).toMatchObject({ scheduledAt: '2027-03-13T07:30:00.000Z', status: 'completed', recipients: 1, analytics: { sent: 1, failed: 0 } });
    expect(runs[0]._id).toMatch(UUID_RE);
    expect(runs[0].startedAt).toMatch(ISO_MS);

    // The second run: 02:30 does not exist that night, so it runs at 03:30 EDT (07:30Z), to a new contact too.
    await contact(org, { name: 'Ben', phone: '0712400002' });
    expect((await campaignOf(org, c._id)).recurrence.nextRunAt).toBe('2027-03-14T07:30:00.000Z');
    expect(await runDueJob(c._id)).toBe('2027-03-14T07:30:00.000Z');
    runs = await waitFor(() => runsOf(org, c._id), (r) => r.length === 2 && r.every((x) => x.status === 'completed'));
    expect(runs.map((r) => [r.scheduledAt, r.recipients])).toEqual([
      ['2027-03-14T07:30:00.000Z', 2],
      ['2027-03-13T07:30:00.000Z', 1],
    ]);
    // After the change, 02:30 EDT is 06:30Z.
    const after = await campaignOf(org, c._id);
    expect(after.recurrence.nextRunAt).toBe('2027-03-15T06:30:00.000Z');
    expect(after.status).toBe('active');
    // The campaign's analytics are its runs' sums; its logs are its runs' logs.
    expect(after.analytics).toMatchObject({ sent: 3, failed: 0 });
    expect(await recipientsOf(org, c._id)).toEqual(['+254712400001:success', '+254712400001:success', '+254712400002:success']);

    // A duplicated firing of a time already run (a second worker, a retried job) makes nothing.
    expect(await fireRun(herald.deps, { orgId: org.orgId, campaignId: c._id, scheduledAt: new Date('2027-03-14T07:30:00.000Z') })).toBeNull();
    expect(await runsOf(org, c._id)).toHaveLength(2);
  });

  test('two workers firing the same time make one run, and each recipient gets one message', async () => {
    const org = await signupOrg(api);
    for (let i = 1; i <= 3; i++) await contact(org, { name: `P${i}`, phone: `071250000${i}` });
    setClock('2027-06-01T08:59:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=HOURLY', timezone: 'UTC' } });
    await launch(org, c._id);
    setClock('2027-06-01T09:00:00.000Z');
    const ref = { orgId: org.orgId, campaignId: c._id, scheduledAt: new Date('2027-06-01T09:00:00.000Z') };
    const fired = await Promise.all([fireRun(herald.deps, ref), fireRun(herald.deps, ref), fireRun(herald.deps, ref)]);
    expect(fired.filter(Boolean)).toHaveLength(1);
    await waitFor(() => runsOf(org, c._id), (r) => r[0]?.status === 'completed');
    expect(await recipientsOf(org, c._id)).toEqual(['+254712500001:success', '+254712500002:success', '+254712500003:success']);
    expect((await campaignOf(org, c._id)).recurrence.nextRunAt).toBe('2027-06-01T10:00:00.000Z');
  });

  test('a restart between runs keeps the next run: a new process fires it', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Cleo', phone: '0712600001' });
    setClock('2027-04-05T05:00:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi' } });
    await launch(org, c._id);
    expect((await campaignOf(org, c._id)).recurrence.nextRunAt).toBe('2027-04-05T06:00:00.000Z');
    await herald.stop();
    herald = await startTestHerald({ ...ENV, DATABASE_URL: database.url, WORKERS: 'true' });
    api = client(herald.url);
    expect(await runDueJob(c._id)).toBe('2027-04-05T06:00:00.000Z');
    const runs = await waitFor(() => runsOf(org, c._id), (r) => r[0]?.status === 'completed');
    expect(runs).toHaveLength(1);
    expect(runs[0].analytics.sent).toBe(1);
    expect((await campaignOf(org, c._id)).recurrence.nextRunAt).toBe('2027-04-12T06:00:00.000Z');
  });

  test('a run the credits do not cover fails with the reason and a campaign.failed event; the next run still comes', async () => {
    const org = await signupOrg(api);
    await api.post('/webhooks', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['campaign.failed'] }, auth(org));
    for (let i = 1; i <= 3; i++) await contact(org, { name: `Q${i}`, phone: `071270000${i}` });
    setClock('2027-05-01T07:59:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=8', timezone: 'UTC' } });
    await launch(org, c._id);
    await setCredits(org, 2);
    await runDueJob(c._id);
    const [run] = await waitFor(() => runsOf(org, c._id), (r) => r[0]?.status === 'failed');
    expect(run).toMatchObject({
      status: 'failed',
      recipients: 3,
      failureReason: 'Insufficient credits: this run needs 3 credits and the balance is 2',
      analytics: { sent: 0, failed: 0 },
    });
    expect(run.completedAt).toMatch(ISO_MS);
    expect((await api.get('/organizations/current', auth(org))).body.credits).toBe(2);
    expect(await recipientsOf(org, c._id)).toEqual([]);
    const events = await herald.db('webhook_events').where({ organization_id: org.orgId, type: 'campaign.failed' });
    expect(events.map((e) => e.data)).toEqual([
      { campaignId: c._id, runId: run._id, name: 'Typed', scheduledAt: '2027-05-01T08:00:00.000Z', reason: run.failureReason },
    ]);
    // Topped up, the next day's run is sent.
    await setCredits(org, 100);
    expect(await runDueJob(c._id)).toBe('2027-05-02T08:00:00.000Z');
    const runs = await waitFor(() => runsOf(org, c._id), (r) => r[0]?.status === 'completed');
    expect(runs.map((r) => r.status)).toEqual(['completed', 'failed']);
    expect((await campaignOf(org, c._id)).analytics.sent).toBe(3);
  });

  test('cancel stops the future runs: the job goes, and a late firing does nothing', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Dan', phone: '0712800001' });
    setClock('2027-05-01T07:59:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=8', timezone: 'UTC' } });
    await launch(org, c._id);
    const canceled = await api.post(`/campaigns/${c._id}/cancel`, undefined, auth(org));
    expect(canceled.body).toMatchObject({ status: 'canceled' });
    expect(await jobOf(runJobKey(c._id))).toBeUndefined();
    setClock('2027-05-01T08:00:00.000Z');
    expect(await fireRun(herald.deps, { orgId: org.orgId, campaignId: c._id, scheduledAt: new Date('2027-05-01T08:00:00.000Z') })).toBeNull();
    expect(await runsOf(org, c._id)).toEqual([]);
  });

  test('a rule that has run its course completes the campaign after its last run', async () => {
    const org = await signupOrg(api);
    await contact(org, { name: 'Eve', phone: '0712900001' });
    setClock('2027-05-01T07:59:00.000Z');
    const c = await created(org, { type: 'recurring', recurrence: { rule: 'FREQ=DAILY;BYHOUR=8;COUNT=1', timezone: 'UTC' } });
    await launch(org, c._id);
    await runDueJob(c._id);
    // Its one run fired: no run job is left.
    expect(await waitFor(() => jobOf(runJobKey(c._id)), (j) => j === undefined)).toBeUndefined();
    const done = await waitFor(() => campaignOf(org, c._id), (x) => x.status === 'completed');
    expect(done).toMatchObject({ status: 'completed', analytics: { sent: 1 }, recurrence: { nextRunAt: null, upcoming: [] } });
  });
});

describe('automated campaigns', () => {
  test('a welcome campaign sends once to each contact created, by the API or an import', async () => {
    const org = await signupOrg(api);
    const c = await created(org, { type: 'automated', trigger: { event: 'contact.created' } });
    expect(c.delay).toBe('PT0S');
    // Not launched: contacts created now trigger nothing.
    await contact(org, { name: 'Before', phone: '0713000000' });
    expect((await launch(org, c._id)).body.status).toBe('active');
    await contact(org, { name: 'Fay', phone: '0713000001' });
    await waitFor(() => recipientsOf(org, c._id), (r) => r.length === 1);
    const imported = await api.raw('POST', '/contacts/import', 'name,phone\nGus,0713000002\nHal,0713000003\nFay again,0713000001\n', auth(org), {
      'content-type': 'text/csv',
    });
    expect(imported.status).toBe(202);
    const all = await waitFor(() => recipientsOf(org, c._id), (r) => r.length === 3);
    expect(all).toEqual(['+254713000001:success', '+254713000002:success', '+254713000003:success']);
    const campaign = await campaignOf(org, c._id);
    expect(campaign).toMatchObject({ status: 'active', analytics: { sent: 3 } });
  });

  test('joining a group triggers it after the delay, once per contact; consent is read at send time', async () => {
    const org = await signupOrg(api);
    const vips = await makeGroup(api, auth(org), { name: 'VIPs' });
    const c = await created(org, { type: 'automated', trigger: { event: 'contact.added_to_group', groupId: vips._id }, delay: 'PT3S' });
    await launch(org, c._id);
    const ida = await contact(org, { name: 'Ida', phone: '0713100001', groups: [vips._id] });
    const jon = await contact(org, { name: 'Jon', phone: '0713100002' });
    // Jon joins through an update; Ida leaves and joins again (still one send).
    await api.put(`/contacts/${jon._id}`, { groups: [vips._id] }, auth(org));
    await api.put(`/contacts/${ida._id}`, { groups: [] }, auth(org));
    await api.put(`/contacts/${ida._id}`, { groups: [vips._id] }, auth(org));
    const pending = (await api.get(`/campaigns/${c._id}/pending-sends`, auth(org))).body as any[];
    expect(pending.map((p) => p.name).sort()).toEqual(['Ida', 'Jon']);
    expect(Object.keys(pending[0]).sort()).toEqual(['contactId', 'dueAt', 'name', 'triggeredAt']);
    expect(new Date(pending[0].dueAt).getTime() - new Date(pending[0].triggeredAt).getTime()).toBe(3000);
    // Jon leaves SMS before his delay has passed.
    await api.put(`/contacts/${jon._id}`, { subscriptions: { sms: 'unsubscribed' } }, auth(org));
    expect(await recipientsOf(org, c._id)).toEqual([]);
    // Ida's and Jon's sends are one run when their delays end together, two when their triggers were
    // far enough apart (a loaded machine): either way Ida is sent once and Jon left out.
    const total = (runs: any[], of: (run: any) => number) => runs.reduce((n, run) => n + of(run), 0);
    const settled = (runs: any[]) => runs.every((x) => x.status === 'completed') && total(runs, (x) => x.analytics.sent + x.analytics.suppressed) === 2;
    const runs = await waitFor(() => runsOf(org, c._id), settled, 20_000);
    expect(runs.length).toBeLessThanOrEqual(2);
    expect({ recipients: total(runs, (x) => x.recipients), sent: total(runs, (x) => x.analytics.sent), suppressed: total(runs, (x) => x.analytics.suppressed) })
      .toEqual({ recipients: 1, sent: 1, suppressed: 1 });
    expect(await recipientsOf(org, c._id)).toEqual(['+254713100001:success']);
    expect((await api.get(`/campaigns/${c._id}/pending-sends`, auth(org))).body).toEqual([]);
    // A bulk add of the group: only contacts not yet triggered are.
    const kim = await contact(org, { name: 'Kim', phone: '0713100003' });
    await api.put(`/contacts/${ida._id}`, { groups: [] }, auth(org));
    const bulk = await api.post('/contacts/bulk', { action: 'addToGroup', group: vips._id, ids: [ida._id, kim._id] }, auth(org));
    expect(bulk.status).toBe(200);
    await waitFor(() => recipientsOf(org, c._id), (r) => r.length === 2, 20_000);
    expect(await recipientsOf(org, c._id)).toEqual(['+254713100001:success', '+254713100003:success']);
  });

  test('an import of 10,000 contacts into the group sends to all of them in a few runs', async () => {
    const org = await signupOrg(api);
    await setCredits(org, 100_000);
    const group = await makeGroup(api, auth(org), { name: 'Imported' });
    const c = await created(org, { type: 'automated', trigger: { event: 'contact.added_to_group', groupId: group._id } });
    await launch(org, c._id);
    // Odd numbers: none ends in 0000, the sandbox's failing numbers.
    const rows = Array.from({ length: 10_000 }, (_, i) => `Person ${i},+2547140${String(i * 2 + 1).padStart(5, '0')}`);
    const res = await api.raw('POST', `/contacts/import?groups=${group._id}`, `name,phone\n${rows.join('\n')}\n`, auth(org), { 'content-type': 'text/csv' });
    expect(res.status).toBe(202);
    const done = await waitFor(() => campaignOf(org, c._id), (x) => x.analytics.sent === 10_000, 120_000);
    expect(done.analytics).toMatchObject({ sent: 10_000, failed: 0 });
    const runs = await runsOf(org, c._id);
    expect(runs.length).toBeLessThanOrEqual(3);
    expect(runs.reduce((sum, r) => sum + r.recipients, 0)).toBe(10_000);
  }, 180_000);

  test('cancel drops the pending sends; contacts created after trigger nothing', async () => {
    const org = await signupOrg(api);
    const c = await created(org, { type: 'automated', trigger: { event: 'contact.created' }, delay: 'PT1H' });
    await launch(org, c._id);
    await contact(org, { name: 'Lea', phone: '0713200001' });
    expect((await api.get(`/campaigns/${c._id}/pending-sends`, auth(org))).body).toHaveLength(1);
    expect((await api.post(`/campaigns/${c._id}/cancel`, undefined, auth(org))).body.status).toBe('canceled');
    expect((await api.get(`/campaigns/${c._id}/pending-sends`, auth(org))).body).toEqual([]);
    await contact(org, { name: 'Max', phone: '0713200002' });
    expect(await herald.db('campaign_triggers').where({ organization_id: org.orgId }).select('status')).toEqual([{ status: 'canceled' }]);
  });

  test('credits running out between sends: the send they do not cover fails with the reason, nothing of it sent', async () => {
    const org = await signupOrg(api);
    await api.post('/webhooks', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['campaign.failed'] }, auth(org));
    const c = await created(org, { type: 'automated', trigger: { event: 'contact.created' }, delay: 'PT1H' });
    await launch(org, c._id);
    for (let i = 1; i <= 3; i++) await contact(org, { name: `R${i}`, phone: `071350000${i}` });
    // The estimate of an automated campaign is its pending sends.
    expect((await api.get(`/campaigns/${c._id}/estimate`, auth(org))).body).toMatchObject({ recipients: 3, cost: 3 });
    // Their delay passes with 2 credits left: the send of 3 fails whole.
    await setCredits(org, 2);
    await herald.db('campaign_triggers').where({ organization_id: org.orgId, campaign_id: c._id }).update({ due_at: herald.db.raw("now() - interval '1 second'") });
    await herald.deps.queue.add({ task: 'campaign-automation', payload: { orgId: org.orgId, campaignId: c._id }, jobKey: `campaign-automation:${c._id}` });
    const [run] = await waitFor(() => runsOf(org, c._id), (r) => r[0]?.status === 'failed');
    expect(run).toMatchObject({ recipients: 3, failureReason: 'Insufficient credits: this run needs 3 credits and the balance is 2', analytics: { sent: 0 } });
    expect(await recipientsOf(org, c._id)).toEqual([]);
    expect((await herald.db('webhook_events').where({ organization_id: org.orgId, type: 'campaign.failed' })).map((e) => e.data.runId)).toEqual([run._id]);
    // The campaign stays active: the next contacts, once covered, are sent to.
    await setCredits(org, 10);
    await contact(org, { name: 'R4', phone: '0713500004' });
    await herald.db('campaign_triggers').where({ organization_id: org.orgId, campaign_id: c._id, status: 'pending' }).update({ due_at: herald.db.raw("now() - interval '1 second'") });
    await herald.deps.queue.add({ task: 'campaign-automation', payload: { orgId: org.orgId, campaignId: c._id }, jobKey: `campaign-automation:${c._id}` });
    await waitFor(() => recipientsOf(org, c._id), (r) => r.length === 1);
    expect(await recipientsOf(org, c._id)).toEqual(['+254713500004:success']);
    expect((await campaignOf(org, c._id)).status).toBe('active');
  });

  test("another organization's campaign runs and pending sends are not readable", async () => {
    const a = await signupOrg(api);
    const b = await signupOrg(api);
    const c = await created(a, { type: 'automated', trigger: { event: 'contact.created' }, delay: 'PT1H' });
    expect((await api.get(`/campaigns/${c._id}/runs`, auth(b))).status).toBe(403);
    expect((await api.get(`/campaigns/${c._id}/pending-sends`, auth(b))).status).toBe(403);
    await launch(a, c._id);
    await contact(b, { name: 'Other org', phone: '0713300001' });
    expect(await herald.db('campaign_triggers').where({ campaign_id: c._id })).toEqual([]);
  });
});

describe('GraphQL', () => {
  test('create both types, read the rule in words, runs and pending sends', async () => {
    const org = await signupOrg(api);
    const group = await makeGroup(api, auth(org), { name: 'GQL' });
    const gql = (query: string, variables: Record<string, unknown> = {}) => api.post('/graphql', { query, variables }, auth(org));
    const made = await gql(
      `mutation($r: CreateCampaignInput!, $a: CreateCampaignInput!) {
         r: createCampaign(input: $r) { _id type recurrence { rule timezone summary nextRunAt upcoming } trigger { event } delay }
         a: createCampaign(input: $a) { _id type recurrence { rule } trigger { event groupId } delay }
       }`,
      {
        r: { name: 'Digest', type: 'recurring', channels: ['SMS'.toLowerCase()], messages: sms, recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi' } },
        a: { name: 'Welcome', type: 'automated', channels: ['sms'], messages: sms, trigger: { event: 'CONTACT_ADDED_TO_GROUP', groupId: group._id }, delay: 'PT2H' },
      },
    );
    expect(made.body.errors).toBeUndefined();
    expect(made.body.data.r).toMatchObject({
      type: 'recurring',
      recurrence: { rule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9', timezone: 'Africa/Nairobi', summary: 'every week on Monday at 09:00 Nairobi time', nextRunAt: null },
      trigger: null,
      delay: null,
    });
    expect(made.body.data.a).toMatchObject({ recurrence: null, trigger: { event: 'contact.added_to_group', groupId: group._id }, delay: 'PT2H' });
    const bad = await gql(`mutation($r: CreateCampaignInput!) { createCampaign(input: $r) { _id } }`, {
      r: { name: 'Bad', type: 'recurring', channels: ['sms'], messages: sms, recurrence: { rule: 'FREQ=MINUTELY', timezone: 'UTC' } },
    });
    expect(bad.body.errors[0]).toMatchObject({ message: expect.stringMatching(/fires more often than once an hour/), extensions: { code: 'BAD_REQUEST' } });

    const a = made.body.data.a._id;
    await gql(`mutation($id: ID!) { launchCampaign(id: $id) { status } }`, { id: a });
    await contact(org, { name: 'Nia', phone: '0713400001', groups: [group._id] });
    const read = await gql(
      `query($id: ID!) { campaign(id: $id) { status runs { totalCount edges { node { _id status } } } pendingSends { totalCount edges { node { name dueAt triggeredAt } } } } }`,
      { id: a },
    );
    expect(read.body.data.campaign).toMatchObject({ status: 'active', runs: { totalCount: 0, edges: [] }, pendingSends: { totalCount: 1, edges: [{ node: { name: 'Nia' } }] } });
  });
});
