import { run, type Statement as Named } from '../../src/db/statements.js';
import type { Herald } from '../../src/server.js';
import { LogTarget } from '../../src/delivery/types.js';
import { ReceiptBatcher } from '../../src/modules/receipts/batcher.js';
import { record, recordAll, recordMany, recipientByProviderId, recipientByReference, type Receipt } from '../../src/modules/receipts/service.js';
import * as sql from '../../src/modules/receipts/sql.js';
import { heraldWithOrgs, ISO_MS, type Client, type Org } from '../helpers/herald.js';
import { expectStatementsStayWith, named, type Statement } from '../helpers/statements.js';

/**
 * platform.md, "Receipts and engagement": the one place a recipient's state after its send changes
 * (`modules/receipts/service.ts`), driven directly. Email recipients: the sandbox reports nothing
 * for them by itself, so only these receipts move them.
 */

let herald: Herald, api: Client;
let org: Org, other: Org;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
});
afterAll(() => herald?.stop());

const ADDRESSES = ['r1@example.com', 'r2@example.com', 'r3@example.com', 'r4@example.com'];

/** A completed email campaign to four addresses, and its one log. */
async function sentCampaign(owner: Org) {
  const created = await api.post(
    '/campaigns',
    { name: 'Receipts', type: 'broadcast', channels: ['email'], messages: { email: { subject: 'Hi', content: 'Hello there' } }, recipients: { manual: ADDRESSES } },
    { token: owner.token },
  );
  expect(created.status).toBe(201);
  const launched = await api.post(`/campaigns/${created.body._id}/launch`, {}, { token: owner.token });
  expect(launched.body).toMatchObject({ status: 'completed', analytics: { sent: 4, delivered: 0, opened: 0, clicked: 0 } });
  const logs = await api.get(`/message-logs?campaignId=${created.body._id}`, { token: owner.token });
  expect(logs.body).toHaveLength(1);
  const log = logs.body[0];
  const position = (address: string) => (log.recipients as { recipient: string }[]).findIndex((r) => r.recipient === address) + 1;
  return { id: created.body._id as string, logId: log._id as string, position };
}

const analytics = async (owner: Org, id: string) => (await api.get(`/campaigns/${id}`, { token: owner.token })).body.analytics;
const at = (s: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, s));
const receipt = (kind: Receipt['kind'], s = 0, extra: Partial<Receipt> = {}): Receipt => ({ kind, at: at(s), ...extra });

describe('recording what happened to a recipient', () => {
  test('each counter moves once per recipient; a click implies an open; duplicates change nothing', async () => {
    const c = await sentCampaign(org);
    const r1 = { logId: c.logId, position: c.position('r1@example.com') };
    const r2 = { logId: c.logId, position: c.position('r2@example.com') };
    expect(await record(herald.db, org.orgId, r1, receipt('opened', 1))).toBe('changed');
    expect(await record(herald.db, org.orgId, r1, receipt('opened', 2))).toBe('unchanged');
    expect(await record(herald.db, org.orgId, r1, receipt('clicked', 3, { data: { url: 'https://example.com/a' } }))).toBe('changed');
    expect(await record(herald.db, org.orgId, r1, receipt('clicked', 4))).toBe('unchanged');
    // A click first opens as well.
    expect(await record(herald.db, org.orgId, r2, receipt('clicked', 5, { data: { url: 'https://example.com/b' } }))).toBe('changed');
    expect(await analytics(org, c.id)).toMatchObject({ sent: 4, delivered: 0, opened: 2, clicked: 2 });

    const log = (await api.get(`/message-logs/${c.logId}`, { token: org.token })).body;
    const shown = (address: string) => log.recipients.find((r: { recipient: string }) => r.recipient === address);
    expect(shown('r1@example.com')).toEqual({ recipient: 'r1@example.com', status: 'success', openedAt: at(1).toISOString(), clickedAt: at(3).toISOString() });
    expect(shown('r2@example.com')).toEqual({ recipient: 'r2@example.com', status: 'success', openedAt: at(5).toISOString(), clickedAt: at(5).toISOString() });
    expect(shown('r3@example.com')).toEqual({ recipient: 'r3@example.com', status: 'success' });

    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body;
    // In the order they happened; a click and the open it implies happened at once.
    expect(events.map((e: any) => [e.recipient, e.type, e.data]).slice(0, 2)).toEqual([
      ['r1@example.com', 'message.opened', {}],
      ['r1@example.com', 'message.clicked', { url: 'https://example.com/a' }],
    ]);
    expect(events.map((e: any) => [e.recipient, e.type, e.data]).slice(2)).toEqual(
      expect.arrayContaining([
        ['r2@example.com', 'message.clicked', { url: 'https://example.com/b' }],
        ['r2@example.com', 'message.opened', { impliedBy: 'clicked' }],
      ]),
    );
    for (const e of events) expect(e).toMatchObject({ _id: expect.any(String), campaignId: c.id, counted: true, occurredAt: expect.stringMatching(ISO_MS), createdAt: expect.stringMatching(ISO_MS) });

    const gql = await api.gql(`query($id: ID!) { messageLog(id: $id) { recipients { recipient openedAt clickedAt deliveredAt readAt deliveryError providerMessageId } events { type recipient counted data } } }`, { id: c.logId }, { token: org.token });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.messageLog.recipients.find((r: any) => r.recipient === 'r1@example.com')).toEqual({
      recipient: 'r1@example.com', openedAt: at(1).toISOString(), clickedAt: at(3).toISOString(), deliveredAt: null, readAt: null, deliveryError: null, providerMessageId: null,
    });
    expect(gql.body.data.messageLog.events).toHaveLength(4);
  });

  test('a read before its delivery counts both, once; the late delivery and a late failure change nothing', async () => {
    const c = await sentCampaign(org);
    const r = { logId: c.logId, position: 1 };
    expect(await record(herald.db, org.orgId, r, receipt('read', 10))).toBe('changed');
    expect(await record(herald.db, org.orgId, r, receipt('delivered', 9))).toBe('unchanged');
    expect(await record(herald.db, org.orgId, r, receipt('failed', 11, { error: 'Expired' }))).toBe('unchanged');
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 1, opened: 1, clicked: 0 });
    const failedFirst = { logId: c.logId, position: 2 };
    expect(await record(herald.db, org.orgId, failedFirst, receipt('failed', 12, { error: 'AbsentSubscriber' }))).toBe('changed');
    const shown = (await api.get(`/message-logs/${c.logId}`, { token: org.token })).body.recipients;
    expect(shown[0]).toMatchObject({ deliveredAt: at(10).toISOString(), readAt: at(10).toISOString() });
    expect(shown[1]).toMatchObject({ status: 'success', deliveryError: 'AbsentSubscriber' });
  });

  test('fifty identical receipts at once count once', async () => {
    const c = await sentCampaign(org);
    const r = { logId: c.logId, position: 3 };
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => record(herald.db, org.orgId, r, receipt('delivered', 20))));
    expect(outcomes.filter((o) => o === 'changed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'unchanged')).toHaveLength(49);
    const mixed = await Promise.all(
      Array.from({ length: 50 }, (_, i) => record(herald.db, org.orgId, { logId: c.logId, position: 4 }, receipt(i % 2 ? 'clicked' : 'opened', 21))),
    );
    expect(mixed.filter((o) => o === 'changed').length).toBeGreaterThanOrEqual(1);
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 1, opened: 1, clicked: 1 });
    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body;
    expect(events.filter((e: any) => e.type === 'message.delivered')).toHaveLength(1);
    expect(events.filter((e: any) => e.type === 'message.opened')).toHaveLength(1);
    expect(events.filter((e: any) => e.type === 'message.clicked')).toHaveLength(1);
  });

  test('on a recipient with a row, fifty different receipts at once change it from the state each read, or under its lock, and count once', async () => {
    const c = await sentCampaign(org);
    const r = { logId: c.logId, position: 1 };
    expect(await record(herald.db, org.orgId, r, receipt('delivered', 30))).toBe('changed');
    const kinds: Receipt['kind'][] = ['opened', 'clicked', 'read', 'failed', 'delivered'];
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => record(herald.db, org.orgId, r, receipt(kinds[i % kinds.length]!, 31))));
    // The click and the read each change it once, and the open unless a click came first (implying it).
    expect(outcomes.filter((o) => o === 'changed').length).toBeGreaterThanOrEqual(2);
    expect(outcomes.filter((o) => o === 'changed').length).toBeLessThanOrEqual(3);
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 1, opened: 1, clicked: 1 });
    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body.filter((e: any) => e.position === 1);
    // A read is its own change (an open event marked `read`), once.
    expect(events.filter((e: any) => e.type === 'message.opened' && !e.data.read)).toHaveLength(1);
    expect(events.filter((e: any) => e.type === 'message.opened' && e.data.read)).toHaveLength(1);
    expect(events.filter((e: any) => e.type === 'message.clicked')).toHaveLength(1);
    expect(events.filter((e: any) => e.type === 'message.failed')).toHaveLength(0);
  });

  test('a row whose times the statement read cannot match exactly (microseconds) still changes, under its lock', async () => {
    const c = await sentCampaign(org);
    const r = { logId: c.logId, position: 2 };
    expect(await record(herald.db, org.orgId, r, receipt('delivered', 35))).toBe('changed');
    await herald.db('recipient_receipts').where({ organization_id: org.orgId, log_id: c.logId, position: 2 }).update({ delivered_at: herald.db.raw("'2026-11-24T12:00:35.123456Z'") });
    expect(await record(herald.db, org.orgId, r, receipt('opened', 36))).toBe('changed');
    expect(await record(herald.db, org.orgId, r, receipt('opened', 37))).toBe('unchanged');
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 1, opened: 1 });
  });

  test('several recipients of a log at once: first receipts together, the rest under their locks, unknown positions named', async () => {
    const c = await sentCampaign(org);
    expect(await record(herald.db, org.orgId, { logId: c.logId, position: 2 }, receipt('read', 40))).toBe('changed');
    const outcomes = await recordAll(herald.db, org.orgId, c.logId, [1, 2, 3, 3, 9], receipt('delivered', 41));
    expect(Object.fromEntries(outcomes)).toEqual({ 1: 'changed', 2: 'unchanged', 3: 'changed', 9: 'unknown' });
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 3, opened: 1 });
    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body;
    expect(events.filter((e: any) => e.type === 'message.delivered').map((e: any) => e.position).sort()).toEqual([1, 2, 3]);
    // Again, all at once: nothing changes.
    expect([...(await recordAll(herald.db, org.orgId, c.logId, [1, 2, 3, 4], receipt('delivered', 42))).values()]).toEqual(['unchanged', 'unchanged', 'unchanged', 'changed']);
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 4, opened: 1 });
  });

  test('receipts of several logs and campaigns in one call: each counted in its own campaign, a recipient named twice recorded in order', async () => {
    const [c, d] = [await sentCampaign(org), await sentCampaign(org)];
    const ref = (x: typeof c, address: string) => ({ logId: x.logId, position: x.position(address) });
    const outcomes = await recordMany(herald.db, org.orgId, [
      { ref: ref(c, 'r1@example.com'), receipt: receipt('opened', 50) },
      { ref: ref(d, 'r1@example.com'), receipt: receipt('clicked', 50, { data: { url: 'https://example.com/d' } }) },
      { ref: ref(c, 'r1@example.com'), receipt: receipt('clicked', 51, { data: { url: 'https://example.com/c' } }) },
      { ref: ref(c, 'r1@example.com'), receipt: receipt('opened', 52) },
      { ref: ref(d, 'r2@example.com'), receipt: receipt('delivered', 50) },
      { ref: { logId: d.logId, position: 7 }, receipt: receipt('delivered', 50) },
    ]);
    expect(outcomes).toEqual(['changed', 'changed', 'changed', 'unchanged', 'changed', 'unknown']);
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 0, opened: 1, clicked: 1 });
    expect(await analytics(org, d.id)).toMatchObject({ delivered: 1, opened: 1, clicked: 1 });
    const shown = (await api.get(`/message-logs/${c.logId}`, { token: org.token })).body.recipients;
    expect(shown.find((r: any) => r.recipient === 'r1@example.com')).toMatchObject({ openedAt: at(50).toISOString(), clickedAt: at(51).toISOString() });
    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body;
    expect(events.map((e: any) => [e.type, e.data])).toEqual([['message.opened', {}], ['message.clicked', { url: 'https://example.com/c' }]]);
  });

  test('the batcher: receipts arriving together are written together, each answered its own outcome, each recipient counted once', async () => {
    const [c, d] = [await sentCampaign(org), await sentCampaign(other)];
    const batcher = new ReceiptBatcher(herald.db);
    const opens = [org, other].flatMap((owner) =>
      ADDRESSES.flatMap((address) => {
        const x = owner === org ? c : d;
        // Each recipient opened three times, and clicked once.
        return [
          ...Array.from({ length: 3 }, () => batcher.record(owner.orgId, { logId: x.logId, position: x.position(address) }, receipt('opened', 60))),
          batcher.record(owner.orgId, { logId: x.logId, position: x.position(address) }, receipt('clicked', 61, { data: { url: 'https://example.com/' } })),
        ];
      }),
    );
    // Another organization's log is unknown to this one.
    const foreign = batcher.record(org.orgId, { logId: d.logId, position: 1 }, receipt('opened', 60));
    const outcomes = await Promise.all(opens);
    expect(await foreign).toBe('unknown');
    for (let i = 0; i < outcomes.length; i += 4) expect(outcomes.slice(i, i + 4)).toEqual(['changed', 'unchanged', 'unchanged', 'changed']);
    expect(await analytics(org, c.id)).toMatchObject({ opened: 4, clicked: 4 });
    expect(await analytics(other, d.id)).toMatchObject({ opened: 4, clicked: 4 });
    // Written together: each log's four rows were last written by one transaction (the clicks' statement).
    for (const [owner, x] of [[org, c], [other, d]] as const) {
      const { rows } = await herald.db.raw('SELECT count(DISTINCT xmin::text)::int AS n, count(*)::int AS rows FROM recipient_receipts WHERE organization_id = ? AND log_id = ?', [owner.orgId, x.logId]);
      expect(rows[0]).toEqual({ n: 1, rows: 4 });
    }
  });

  test("a scanner's open is recorded uncounted", async () => {
    const c = await sentCampaign(org);
    expect(await record(herald.db, org.orgId, { logId: c.logId, position: 1 }, receipt('opened', 30, { scanner: true, data: { userAgent: 'Barracuda' } }))).toBe('unchanged');
    expect(await analytics(org, c.id)).toMatchObject({ opened: 0 });
    const events = (await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body;
    expect(events).toEqual([expect.objectContaining({ type: 'message.opened', counted: false, data: { userAgent: 'Barracuda' } })]);
  });

  test("unknown logs and positions, and another organization's log, are unknown and change nothing", async () => {
    const c = await sentCampaign(org);
    expect(await record(herald.db, org.orgId, { logId: c.logId, position: 5 }, receipt('delivered'))).toBe('unknown');
    expect(await record(herald.db, org.orgId, { logId: c.logId, position: 0 }, receipt('delivered'))).toBe('unknown');
    expect(await record(herald.db, org.orgId, { logId: '00000000-0000-4000-8000-000000000000', position: 1 }, receipt('delivered'))).toBe('unknown');
    expect(await record(herald.db, other.orgId, { logId: c.logId, position: 1 }, receipt('delivered'))).toBe('unknown');
    expect(await record(herald.db, other.orgId, { logId: c.logId, position: 1 }, receipt('opened', 0, { scanner: true }))).toBe('unknown');
    expect(await analytics(org, c.id)).toMatchObject({ delivered: 0, opened: 0 });
    expect((await api.get(`/message-logs/${c.logId}/events`, { token: org.token })).body).toEqual([]);
    expect((await api.get(`/message-logs/${c.logId}/events`, { token: other.token })).status).toBe(403);
  });

  test("a recipient is found by Herald's own reference, and by the provider's id", async () => {
    const c = await sentCampaign(org);
    const reference = new LogTarget('r2@example.com', c.logId, 2).clientId;
    expect(await recipientByReference(herald.db, org.orgId, reference)).toEqual({ logId: c.logId, position: 2 });
    expect(await recipientByReference(herald.db, other.orgId, reference)).toBeNull();
    expect(await recipientByReference(herald.db, org.orgId, 'not-a-reference')).toBeNull();
    expect(await recipientByReference(herald.db, org.orgId, `${reference.slice(0, 28)}00000000`)).toBeNull();
    await herald.db('message_logs').where({ organization_id: org.orgId, id: c.logId }).update({ provider_ids: [null, '<abc@mail>', null, null] });
    expect(await recipientByProviderId(herald.db, org.orgId, '<abc@mail>')).toEqual({ logId: c.logId, position: 2 });
    expect(await recipientByProviderId(herald.db, other.orgId, '<abc@mail>')).toBeNull();
    expect(await recipientByProviderId(herald.db, org.orgId, '<nope@mail>')).toBeNull();
    expect((await api.get(`/message-logs/${c.logId}`, { token: org.token })).body.recipients[1]).toMatchObject({ providerMessageId: '<abc@mail>' });
  });
});

describe('the statements of receipts', () => {
  test('each stays with its organization (one shard on Citus; every tenant scan filtered by it on Postgres)', async () => {
    const c = await sentCampaign(org);
    const key = { orgId: org.orgId, logId: c.logId, position: 1 };
    const row = { i: 0, log_id: c.logId, position: 1, at: at(0), delivered_at: at(0), read_at: null, opened_at: null, clicked_at: null, failed_at: null, error: null, events: [], delivered: 1, opened: 0, clicked: 0 };
    // As `run` sends them: the named statement's text and its parameters in order (EXPLAIN runs none of them).
    const statements = [
      named(sql.firstReceipts, { orgId: org.orgId, rows: JSON.stringify([{ ...row, sent_before: at(0) }, { ...row, i: 1, position: 2 }]) }),
      named(sql.lockReceipt, key),
      named(sql.updateReceipts, { orgId: org.orgId, locked: false, rows: JSON.stringify([{ ...row, campaign_id: c.id, recipient: 'r1@example.com', was_delivered_at: null }]) }),
      named(sql.uncountedEvent, { ...key, at: at(0), events: '[]' }),
      named(sql.logByPrefix, { orgId: org.orgId, low: c.logId, high: c.logId }),
      named(sql.logByProviderId, { orgId: org.orgId, providerId: 'x' }),
      named(sql.receiptsOfLogs, { orgId: org.orgId, logIds: [c.logId] }),
      named(sql.eventsOfLog, { orgId: org.orgId, logId: c.logId }),
    ];
    await expectStatementsStayWith(statements, org.orgId);
  });

  test('the batch statements are planned on every call, not kept prepared with the plan of a first call on a smaller table', async () => {
    const c = await sentCampaign(org);
    const row = { i: 0, log_id: c.logId, position: 1, at: at(0), delivered_at: at(0), read_at: null, opened_at: null, clicked_at: null, failed_at: null, error: null, events: [], delivered: 1, opened: 0, clicked: 0 };
    const prepared = await herald.db.transaction(async (trx) => {
      // One connection: what it holds prepared once the statements have run on it.
      await run(trx, sql.firstReceipts, { orgId: org.orgId, rows: JSON.stringify([row]) });
      await run(trx, sql.updateReceipts, { orgId: org.orgId, locked: false, rows: JSON.stringify([{ ...row, campaign_id: c.id, recipient: ADDRESSES[0], was_delivered_at: null }]) });
      await run(trx, sql.receiptsOfLogs, { orgId: org.orgId, logIds: [c.logId] });
      const { rows } = await trx.raw('SELECT name FROM pg_prepared_statements');
      return (rows as { name: string }[]).map((r) => r.name);
    });
    expect(prepared).toContain(sql.receiptsOfLogs.name);
    expect(prepared).not.toContain(sql.firstReceipts.name);
    expect(prepared).not.toContain(sql.updateReceipts.name);
  });
});
