import pg from 'pg';
import { batchLogId } from '../../src/modules/campaigns/batch-log.js';
import { settleBatches } from '../../src/delivery/sql/batches.js';
import { openWork, serveTurn } from '../../src/modules/campaigns/batches.js';
import type { Herald } from '../../src/server.js';
import { signupOrg, startIsolatedHerald, waitFor, type Client } from '../helpers/herald.js';
import { isCitus } from '../helpers/statements.js';

// A campaign's settles all count on its one row. The settle writes its logs (and their recipient
// index entries) first and takes the campaign's row last, so the row is held only until the commit
// and a campaign's other settles wait for as short a time as can be.
let herald: Herald;
let api: Client;
let stop: () => Promise<void>;

beforeAll(async () => {
  // No workers, and nothing sent in the launch's request: the test serves the turn itself.
  ({ herald, api, stop } = await startIsolatedHerald('settleorder', { WORKERS: 'false', CAMPAIGN_INLINE_LIMIT: '0' }));
}, 60_000);

afterAll(() => stop());

test('a settle has written its logs before it waits for the campaign’s row', async () => {
  const org = await signupOrg(api);
  for (const phone of ['0712345691', '0712345692']) await api.post('/contacts', { name: phone, phone }, { token: org.token });
  const created = await api.post('/campaigns', { name: 'Order', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Hello' } } }, { token: org.token });
  const campaignId = created.body._id as string;
  expect((await api.post(`/campaigns/${campaignId}/launch`, undefined, { token: org.token })).body.status).toBe('active');
  const [work] = await openWork(herald.db, { organization_id: org.orgId, id: campaignId, type: 'broadcast' });

  const holder = new pg.Client({ connectionString: herald.deps.config.databaseUrl });
  const probe = new pg.Client({ connectionString: herald.deps.config.databaseUrl });
  await Promise.all([holder.connect(), probe.connect()]);
  const citus = await isCitus(probe);
  try {
    // Someone else holds the campaign's row (as a settle of another turn would).
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM campaigns WHERE organization_id = $1 AND id = $2 FOR UPDATE', [org.orgId, campaignId]);
    const settling = serveTurn(herald.deps, { ...work!, maxBatches: 64, park: async () => {} });
    // The settle statement waits for a lock (pg_stat_activity keeps a statement's first 1 KiB).
    const blocked = await waitFor(
      async () =>
        (await probe.query(
          // On Citus the settle waits on the worker holding the campaign's shard.
          citus
            ? `SELECT count(*)::int AS n FROM citus_lock_waits WHERE left(blocked_statement, 400) = left($1, 400)`
            : `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND left(query, 400) = left($1, 400)`,
          [settleBatches.text],
        ))
          .rows[0].n as number,
      (n) => n > 0,
      20_000,
    );
    expect(blocked).toBe(1);

    // The blocked settle has already written its log: writing the same log waits for it (and gives up).
    await probe.query('BEGIN');
    // On Citus the insert runs on the worker: a SET LOCAL reaches it only when Citus is told to take it there.
    if (citus) await probe.query(`SET LOCAL citus.propagate_set_commands = 'local'`);
    await probe.query(`SET LOCAL lock_timeout = '500ms'`);
    const same = await probe
      .query(
        `INSERT INTO message_logs (organization_id, id, channel, recipients, pending_count, success_count, failed_count, message_preview, message_length, unit_cost, reserved, cost)
         VALUES ($1, $2, 'sms', '["+254712345691"]', 0, 0, 0, 'x', 1, 1, 0, 0)`,
        [org.orgId, batchLogId(campaignId, 'sms', 0)],
      )
      .then(
        () => null,
        (err: { code?: string }) => err.code,
      );
    await probe.query('ROLLBACK');
    expect(same).toBe('55P03');

    await holder.query('COMMIT');
    expect((await settling).batches).toBeGreaterThan(0);
    expect((await api.get(`/campaigns/${campaignId}`, { token: org.token })).body).toMatchObject({ status: 'completed', analytics: { sent: 2 } });
  } finally {
    await holder.query('ROLLBACK').catch(() => {});
    await Promise.all([holder.end(), probe.end()]);
  }
}, 60_000);
