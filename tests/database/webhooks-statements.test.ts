import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { run, type Statement as Named } from '../../src/db/statements.js';
import { emitStatement } from '../../src/delivery/outbox.js';
import * as sql from '../../src/modules/webhooks/sql.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Client, type Org } from '../helpers/herald.js';
import { expectStatementsStayWith, named, type Statement, tenantScans } from '../helpers/statements.js';

/**
 * The statements of outbound webhooks stay with their organization (on Citus one shard; on
 * Postgres every tenant scan filtered by it): the outbox's, the claim (with its endpoint), the
 * release of what a stopped run took, the record of attempts, the test event and the resend. (The sweep's read of overdue deliveries is across organizations on
 * purpose; the settle and receipt statements that carry the outbox are checked with their own.)
 */

let herald: Herald, api: Client, org: Org;
beforeAll(async () => ({ herald, api, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

test('each webhook statement stays with its organization', async () => {
  const created = await api.post('/webhooks', { url: 'https://example.com/hook' }, { token: org.token });
  expect(created.status).toBe(201);
  const key = { orgId: org.orgId, endpointId: created.body._id as string };
  const eventId = randomUUID();
  const statements = [
    named(emitStatement, { orgId: org.orgId, events: JSON.stringify([{ type: 'message.sent', occurred_at: new Date(), data: {} }]) }),
    named(sql.claimDeliveries, { ...key, limit: 50, leaseSeconds: 60 }),
    named(sql.releaseDeliveries, { ...key, eventIds: [eventId] }),
    named(sql.recordAttempts, { ...key, attempts: '[]', lastSuccessAt: null, lastFailureAt: new Date(), failuresAfter: 1, disable: null }),
    named(sql.nextDue, key),
    named(sql.insertTestEvent, { ...key, type: 'message.sent', data: '{}' }),
    named(sql.resendDelivery, { ...key, eventId }),
  ];
  await expectStatementsStayWith(statements, org.orgId);
});

test("the claim and the record take their deliveries by their key, never by reading every delivery of the endpoint", async () => {
  const created = await api.post('/webhooks', { url: 'https://example.com/claimed' }, { token: org.token });
  const key = { orgId: org.orgId, endpointId: created.body._id as string };
  const client = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await client.connect();
  try {
    // An endpoint with 1,000 pending deliveries, in tables the planner has no statistics of.
    await client.query(
      `WITH ev AS (INSERT INTO webhook_events (organization_id, type, occurred_at, data) SELECT $1, 'message.sent', now(), '{}' FROM generate_series(1, 1000) RETURNING id)
       INSERT INTO webhook_deliveries (organization_id, event_id, endpoint_id) SELECT $1, ev.id, $2 FROM ev`,
      [key.orgId, key.endpointId],
    );
    const claim = { sql: sql.claimDeliveries.text, bindings: sql.claimDeliveries.order.map((k) => ({ ...key, limit: 100, leaseSeconds: 60 })[k]) };
    const deliveries = (await tenantScans(client, claim)).filter((s) => s.table === 'webhook_deliveries');
    // The due ones, by the due index; the lease, by the keys of those taken.
    const byKey = (s: { conditions: string }) => /event_id = ANY/.test(s.conditions);
    expect(deliveries.length).toBe(2);
    expect(deliveries.filter(byKey)).toHaveLength(1);
    expect(deliveries.find((s) => !byKey(s))!.conditions).toMatch(/next_attempt_at/);
    // The record of a batch's 100 attempts moves their deliveries by their keys too (a join read the table).
    const { rows } = await client.query('SELECT event_id FROM webhook_deliveries WHERE organization_id = $1 AND endpoint_id = $2 LIMIT 100', [key.orgId, key.endpointId]);
    const attempts = JSON.stringify(rows.map((r) => ({ event_id: r.event_id, attempt: 1, succeeded: true, response_status: 200, duration_ms: 5, response: 'ok', error: null, attempted_at: new Date(), status: 'succeeded', next_attempt_at: null })));
    const params = { ...key, attempts, lastSuccessAt: new Date(), lastFailureAt: null, failuresAfter: 0, disable: null };
    const record = { sql: sql.recordAttempts.text, bindings: sql.recordAttempts.order.map((k) => params[k]) };
    const moved = (await tenantScans(client, record)).filter((s) => s.table === 'webhook_deliveries');
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.filter((s) => !byKey(s))).toEqual([]);
  } finally {
    await client.end();
  }
});

test('a queued retry is moved sooner, never later', async () => {
  // No endpoint is needed: the job only names one. Far enough ahead that no worker takes it meanwhile.
  const endpointId = randomUUID();
  const key = `webhooks-retry:${endpointId}`;
  const soon = new Date(Date.now() + 60_000);
  const queuedAt = async () => (await herald.db.raw('SELECT run_at FROM graphile_worker.jobs WHERE key = ?', [key])).rows.map((r: { run_at: Date }) => r.run_at.getTime());
  try {
    await run(herald.db, sql.scheduleRetry, { orgId: org.orgId, endpointId, runAt: soon });
    // A run that saw the delivery leased to another asks for the lease's end: the retry stays.
    await run(herald.db, sql.scheduleRetry, { orgId: org.orgId, endpointId, runAt: new Date(soon.getTime() + 600_000) });
    expect(await queuedAt()).toEqual([soon.getTime()]);
    const sooner = new Date(soon.getTime() - 30_000);
    await run(herald.db, sql.scheduleRetry, { orgId: org.orgId, endpointId, runAt: sooner });
    expect(await queuedAt()).toEqual([sooner.getTime()]);
  } finally {
    await herald.db.raw('SELECT graphile_worker.remove_job(?)', [key]);
  }
});
