import { generate } from 'otplib';
import { LAYOUT } from '../../src/db/layout.js';
import { CLOSING_ORDER } from '../../src/modules/closure/sql.js';
import { runClosure, STEP_COUNT } from '../../src/modules/closure/service.js';
import type { Herald } from '../../src/server.js';
import { SANDBOX_RECEIPTS_TASK } from '../../src/delivery/channels/sandbox.js';
import { whereWritten } from '../helpers/database-scan.js';
import { addUser, createApiKey, heraldWithOrgs, signupOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Closing an organization: an admin closes it giving their password again (and a two-factor code
 * when they use one); it works as before through the grace period, when an admin may cancel; then
 * one job deletes every row of it. Afterwards nothing of the organization is anywhere in the
 * database (every text, uuid, array and JSON column of every table is searched for its id, its
 * members' and contacts' addresses and its name), the other organization is exactly as it was, and
 * the closure's record holds ids, times and counts only.
 */

let herald: Herald, api: Client, org: Org, other: Org;
const as = (o: Org) => ({ token: o.token });
const DAY_MS = 86_400_000;
const CONTACT = 'amina.closing@example.com';
const NAME = 'Closing Time Traders';

/** How many rows of the organization each table holds, and the users and keys, of every table that has an `organization_id`. */
async function rowsOf(orgId: string): Promise<Record<string, number>> {
  const { rows } = await herald.db.raw(
    `SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'organization_id' AND table_name <> 'organization_closures' AND table_name <> 'sandbox_outbox' ORDER BY 1`,
  );
  const out: Record<string, number> = {};
  for (const { table_name: t } of rows as { table_name: string }[]) {
    const n = Number((await herald.db(t).where({ organization_id: orgId }).count({ n: '*' }))[0]!.n);
    if (n) out[t] = n;
  }
  const organizations = Number((await herald.db('organizations').where({ id: orgId }).count({ n: '*' }))[0]!.n);
  if (organizations) out.organizations = organizations;
  return out;
}

let member: Awaited<ReturnType<typeof addUser>>;
let adminKey: string;

beforeAll(async () => {
  ({ herald, api, orgs: [other] } = await heraldWithOrgs(1, { workers: true }));
  // The organization to close, with a bit of everything: members, keys, contacts in groups, sends
  // and a campaign with receipts, opens, webhook events and attempts, an import, a template, a
  // provider, a suppression, a DKIM key, an invitation, an erasure, a campaign waiting for its
  // time (a job in the queue), idempotent answers, failed logins counted, and audit entries.
  org = await signupOrg(api, { companyName: NAME });
  member = await addUser(api, org, 'user');
  adminKey = (await createApiKey(api, org, 'admin')).key;
  const group = (await api.post('/groups', { name: 'Regulars', color: 'bg-teal-500' }, as(org))).body;
  expect((await api.post('/contacts', { name: 'Amina Closing', email: CONTACT, phone: '0712300301', groups: [group._id] }, as(org))).status).toBe(201);
  expect((await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', eventTypes: ['message.sent'] }, as(org))).status).toBe(201);
  expect((await api.post('/notifications/send', { type: 'sms', to: ['0712300301', '0712300302'], message: 'Last orders' }, as(org), { 'idempotency-key': 'closing-1' })).status).toBe(200);
  expect((await api.post('/notifications/send', { type: 'email', to: CONTACT, subject: 'Bye', message: '<p>Bye</p>' }, as(org))).status).toBe(200);
  const campaign = (await api.post('/campaigns', { name: 'Closing down sale', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Everything must go' } }, recipients: { groups: [group._id] } }, as(org))).body;
  expect((await api.post(`/campaigns/${campaign._id}/launch`, {}, as(org))).body.status).toBe('completed');
  const later = (await api.post('/campaigns', { name: 'Next month', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Soon' } }, recipients: { manual: ['0712300303'] }, scheduleDate: new Date(Date.now() + 30 * DAY_MS).toISOString() }, as(org))).body;
  expect((await api.post(`/campaigns/${later._id}/launch`, {}, as(org))).body.status).toBe('scheduled');
  const imported = await api.raw('POST', '/contacts/import', `name,email\nZawadi Import,zawadi.closing@example.com\nBad Row,not an email\n`, as(org), { 'content-type': 'text/csv' });
  expect(imported.status).toBe(202);
  await waitFor(() => api.get(`/contact-imports/${imported.body._id}`, as(org)), (r) => r.body.status === 'completed', 20_000);
  expect((await api.post('/templates', { name: 'Farewell', channel: 'sms', content: 'Farewell' }, as(org))).status).toBe(201);
  expect((await api.post('/providers', { type: 'africastalking', name: 'Closing AT', settings: { username: 'closing-app' }, secrets: { apiKey: 'closing-key' } }, as(org))).status).toBe(201);
  expect((await api.post('/suppressions', { address: 'gone.closing@example.com' }, as(org))).status).toBe(201);
  expect((await api.post('/dkim-keys', { domain: 'closing.example', selector: 'bye' }, as(org))).status).toBe(201);
  expect((await api.post('/invitations', { email: 'invitee.closing@example.com', role: 'user', firstName: 'Ivy' }, as(org))).status).toBe(201);
  const erased = (await api.post('/erasures', { address: 'erased.closing@example.com' }, as(org))).body;
  await waitFor(() => api.get(`/erasures/${erased._id}`, as(org)), (r) => r.body.status === 'done', 20_000);
  expect((await api.post('/auth/login', { email: member.email, password: 'not the password' })).status).toBe(401);
  const log = ((await api.get(`/message-logs?recipient=${CONTACT}`, as(org))).body as { _id: string }[])[0]!;
  const opened = await api.post('/sandbox/events', { logId: log._id, recipient: CONTACT, type: 'open' }, as(org));
  expect({ status: opened.status, body: opened.body }).toMatchObject({ status: 200 });
  // The other organization, with its own contact, send and campaign.
  expect((await api.post('/contacts', { name: 'Amina Elsewhere', email: CONTACT }, as(other))).status).toBe(201);
  expect((await api.post('/notifications/send', { type: 'sms', to: '0712300301', message: 'Theirs' }, as(other))).status).toBe(200);
  // Every job of the sends (receipts, webhooks) has had its turn.
  await waitFor(
    async () => (await herald.db.raw(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier NOT IN ('sweep', 'retention', 'campaign-run', 'campaign-start') AND attempts = 0`)).rows[0].n,
    (n: number) => n === 0,
    20_000,
  );
}, 120_000);
afterAll(() => herald?.stop());

test('the closing empties every tenant table, in an order that deletes a table before those it refers to', () => {
  expect(CLOSING_ORDER.map((t) => t.table).sort()).toEqual([...LAYOUT.tenant].sort());
});

describe('closing', () => {
  test('admins signed in only, with their password again: a member, an API key, a wrong or missing password are refused', async () => {
    expect((await api.post('/organizations/current/closure', { password: member.password }, { token: member.token })).status).toBe(403);
    expect((await api.post('/organizations/current/closure', { password: org.password }, { apiKey: adminKey })).status).toBe(403);
    const wrong = await api.post('/organizations/current/closure', { password: 'not my password' }, as(org));
    expect({ status: wrong.status, message: wrong.body.message }).toEqual({ status: 400, message: 'Password is incorrect' });
    const missing = await api.post('/organizations/current/closure', {}, as(org));
    expect({ status: missing.status, fields: missing.body.details?.map((d: { field: string }) => d.field) }).toEqual({ status: 400, fields: ['password'] });
    const gql = await api.gql('mutation { closeOrganization(password: "nope") { status } }', {}, as(org));
    expect(gql.body.errors?.[0].extensions.code).toBe('BAD_REQUEST');
    expect((await api.get('/organizations/current', as(org))).body.closure).toBeNull();
    expect((await api.get('/organizations/current/closure', as(org))).status).toBe(404);
    expect((await api.get('/organizations/current/closure', { apiKey: adminKey })).status).toBe(403);
    expect((await api.delete('/organizations/current/closure', { apiKey: adminKey })).status).toBe(403);
    expect((await api.delete('/organizations/current/closure', { token: member.token })).status).toBe(403);
  });

  test('an admin using two-factor authentication gives a code as well', async () => {
    const other2 = await signupOrg(api);
    const started = await api.post('/users/me/two-factor', undefined, as(other2));
    const confirmed = await api.post('/users/me/two-factor/confirm', { code: await generate({ secret: started.body.secret }) }, as(other2));
    expect(confirmed.status).toBe(200);
    const without = await api.post('/organizations/current/closure', { password: other2.password }, as(other2));
    expect({ status: without.status, message: without.body.message }).toEqual({ status: 400, message: 'code is required: your account uses two-factor authentication' });
    const wrong = await api.post('/organizations/current/closure', { password: other2.password, code: '000000' }, as(other2));
    expect(wrong.status).toBe(400);
    const closed = await api.post('/organizations/current/closure', { password: other2.password, code: confirmed.body.recoveryCodes[0] }, as(other2));
    expect(closed.status).toBe(202);
    expect((await api.delete('/organizations/current/closure', as(other2))).status).toBe(200);
  });

  test('scheduled for 7 days on, the organization working meanwhile; one at a time; cancellable by an admin; audited', async () => {
    const res = await api.post('/organizations/current/closure', { password: org.password }, as(org));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ _id: expect.any(String), status: 'scheduled', requestedAt: expect.any(String), deleteAfter: expect.any(String), cancelledAt: null });
    expect(Date.parse(res.body.deleteAfter) - Date.parse(res.body.requestedAt)).toBe(7 * DAY_MS);
    expect((await api.get('/organizations/current', as(org))).body.closure).toEqual(res.body);
    expect((await api.get('/organizations/current/closure', { token: member.token })).body).toEqual(res.body);
    expect((await api.gql('{ organization { closure { _id status deleteAfter } } }', {}, as(org))).body.data.organization.closure).toEqual({ _id: res.body._id, status: 'scheduled', deleteAfter: res.body.deleteAfter });
    // Its job waits for that time.
    const { rows } = await herald.db.raw(`SELECT run_at FROM graphile_worker.jobs WHERE task_identifier = 'close-organization' AND key = ?`, [`closure:${org.orgId}`]);
    expect(rows.map((r: { run_at: Date }) => r.run_at.toISOString())).toEqual([res.body.deleteAfter]);
    const again = await api.post('/organizations/current/closure', { password: org.password }, as(org));
    expect({ status: again.status, message: again.body.message }).toEqual({ status: 409, message: 'The organization is already closing' });
    // Everything works as before meanwhile.
    expect((await api.post('/notifications/send', { type: 'sms', to: '0712300304', message: 'Still here' }, as(org))).status).toBe(200);

    const cancelled = await api.delete('/organizations/current/closure', as(org));
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ _id: res.body._id, status: 'cancelled', cancelledAt: expect.any(String) });
    expect((await api.get('/organizations/current', as(org))).body.closure).toBeNull();
    expect((await herald.db.raw(`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'close-organization' AND key = ?`, [`closure:${org.orgId}`])).rows).toEqual([]);
    expect((await api.delete('/organizations/current/closure', as(org))).status).toBe(404);
    // Its job, had it already been taken, finds it cancelled and deletes nothing.
    const kept = await rowsOf(org.orgId);
    expect(await runClosure(herald.db, { orgId: org.orgId, closureId: res.body._id }, { now: new Date(Date.now() + 30 * DAY_MS) })).toBe('skipped');
    expect(await rowsOf(org.orgId)).toEqual(kept);
    const audit = async (action: string) => (await api.get(`/audit-log?action=${action}`, as(org))).body as { details: Record<string, unknown> }[];
    expect((await audit('organization.closing_requested')).map((a) => a.details)).toEqual([{ closureId: res.body._id, deleteAfter: res.body.deleteAfter }]);
    expect((await audit('organization.closing_cancelled')).map((a) => a.details)).toEqual([{ closureId: res.body._id }]);
  });

  test('after the grace period every row of the organization goes, resumably; the other organization is as it was', async () => {
    const closing = await api.gql('mutation($p: String!) { closeOrganization(password: $p) { _id status deleteAfter } }', { p: org.password }, as(org));
    const closure = closing.body.data.closeOrganization as { _id: string; status: string; deleteAfter: string };
    expect(closure.status).toBe('scheduled');
    const payload = { orgId: org.orgId, closureId: closure._id };
    // The simulated receipts of its last sends (queued a few seconds after them) are all in: its rows stay as counted.
    const receiptsWaiting = async (orgId: string) =>
      (
        await herald.db.raw(
          `SELECT count(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
           WHERE t.identifier = ? AND j.payload->>'orgId' = ?`,
          [SANDBOX_RECEIPTS_TASK, orgId],
        )
      ).rows[0].n as number;
    for (const orgId of [org.orgId, other.orgId]) expect(await waitFor(() => receiptsWaiting(orgId), (n) => n === 0, 20_000)).toBe(0);
    const before = await rowsOf(org.orgId);
    expect(Object.keys(before).length).toBeGreaterThan(25);
    const theirs = await rowsOf(other.orgId);
    const needles = [org.orgId, org.email, member.email, 'Amina Closing', 'zawadi.closing', 'invitee.closing', NAME, 'closing-key', 'closing.example'];
    expect((await whereWritten(needles)).length).toBeGreaterThan(20);

    // Its time has not come: nothing happens.
    expect(await runClosure(herald.db, payload)).toBe('waiting');
    expect(await rowsOf(org.orgId)).toEqual(before);
    // A crash after three steps, then two whole runs: as one uninterrupted run.
    const after = new Date(Date.parse(closure.deleteAfter) + 1000);
    expect(await runClosure(herald.db, payload, { now: after, stopAfter: 3 })).toBe('stopped');
    expect((await api.get('/organizations/current', as(org))).status).toBe(401);
    expect((await api.get('/contacts', { apiKey: adminKey })).status).toBe(401);
    expect(await runClosure(herald.db, payload, { now: after })).toBe('deleted');
    expect(await runClosure(herald.db, payload, { now: after })).toBe('skipped');

    expect(await rowsOf(org.orgId)).toEqual({});
    expect(await whereWritten(needles, { except: ['organization_closures'] })).toEqual([]);
    expect(await rowsOf(other.orgId)).toEqual(theirs);
    expect((await api.get('/contacts', as(other))).body.map((c: { email: string }) => c.email)).toEqual([CONTACT]);

    // The record: ids, times and counts, nothing personal.
    const record = await herald.db('organization_closures').where({ id: closure._id }).first();
    expect(record).toMatchObject({ organization_id: org.orgId, status: 'deleted', requested_by: null, deleted_at: expect.any(Date) });
    expect(Object.keys(record.rows_deleted).length).toBe(STEP_COUNT);
    expect(record.rows_deleted).toMatchObject({ users: expect.any(Number), contacts: 2, message_logs: before.message_logs, audit_log: before.audit_log, organizations: 1 });
    expect(JSON.stringify(record)).not.toMatch(/@|Closing Time|closing-key/);

    // Gone for good: its sessions, its members' logins; their addresses may sign up again.
    expect((await api.post('/auth/login', { email: org.email, password: org.password })).status).toBe(401);
    expect((await api.post('/auth/signup', { firstName: 'Back', lastName: 'Again', email: org.email, password: 'a good password', countryCode: '+254', phoneNumber: '700000009', companyName: NAME, sector: 'Retail', country: 'KE' })).status).toBe(201);
  });

  test('with no grace period the queue deletes the organization at once', async () => {
    const quick = await signupOrg(api);
    expect((await api.post('/contacts', { name: 'Quick', phone: '0712300305' }, as(quick))).status).toBe(201);
    herald.deps.config.closureGraceDays = 0;
    try {
      const res = await api.post('/organizations/current/closure', { password: quick.password }, as(quick));
      expect(res.status).toBe(202);
      expect(res.body.deleteAfter).toBe(res.body.requestedAt);
      await waitFor(() => herald.db('organization_closures').where({ id: res.body._id }).first('status'), (r: { status: string }) => r.status === 'deleted', 20_000);
    } finally {
      herald.deps.config.closureGraceDays = 7;
    }
    expect(await rowsOf(quick.orgId)).toEqual({});
  });
});
