import type { TaskList } from 'graphile-worker';
import type { Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { inBatches } from '../../db/batches.js';
import { run, statement } from '../../db/statements.js';

/**
 * Retention: each organization keeps its message logs (and, with them, their recipients, receipts
 * and engagement events), its sandbox outbox, its webhook events (with their deliveries) and
 * attempts, and its bounce history for `retention_days` (395, 13 months, unless it chose otherwise;
 * at least 30). A daily job deletes what is older, organization by organization, in batches of
 * `BATCH` rows, each one short statement of its own through the table's (organization, time) index,
 * resting between them: no lock is held for long, sending never waits on old rows, and the purge
 * never takes more than a fifth of the database's time from it. Campaign
 * analytics (the campaigns' counters) and the daily figures (the rollup) stay.
 */

export const RETENTION_TASK = 'retention';
const DAY_MS = 86_400_000;
/** Rows per statement. */
export const BATCH = 2000;
/**
 * After each full batch the purge rests this many times as long as the batch took: it takes a fifth
 * of one connection's time at most, so sending beside it keeps the machine (bench/retention.ts).
 */
const REST_FACTOR = 4;

type Params = { orgId: string; cutoff: Date; limit: number };

/** A batch of one table: the oldest rows before the cutoff, by the index, deleted; answers how many. */
const batchOf = (table: string, time: string, extra = '') =>
  statement<Params, { deleted: number }>(
    `herald_retention_${table}`,
    `WITH doomed AS (SELECT id FROM ${table} WHERE organization_id = :orgId AND ${time} < :cutoff::timestamptz ${extra} ORDER BY ${time} LIMIT :limit),
          deleted AS (DELETE FROM ${table} WHERE organization_id = :orgId AND id IN (SELECT id FROM doomed) RETURNING 1)
     SELECT count(*)::int AS deleted FROM deleted`,
  );

/** What is purged, in this order (a log's receipts and events go with it, an event's deliveries with it). */
export const PURGES = [
  { table: 'message_logs', statement: batchOf('message_logs', 'created_at') },
  { table: 'sandbox_sends', statement: batchOf('sandbox_sends', 'created_at') },
  { table: 'webhook_attempts', statement: batchOf('webhook_attempts', 'created_at') },
  { table: 'webhook_events', statement: batchOf('webhook_events', 'created_at') },
  { table: 'email_bounces', statement: batchOf('email_bounces', 'occurred_at') },
] as const;

const organizations = statement<Record<string, never>, { id: string; retention_days: number }>(
  'herald_retention_organizations',
  'SELECT id, retention_days FROM organizations ORDER BY id',
);

/**
 * Deletes what the organization keeps no longer (older than `cutoff`); answers the rows deleted per
 * table. `onBatch` hears of each statement and how long it took (bench/retention.ts).
 */
export async function purgeOrganization(
  db: Db,
  orgId: string,
  cutoff: Date,
  limit = BATCH,
  onBatch?: (table: string, deleted: number, ms: number) => void,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const { table, statement: st } of PURGES) {
    deleted[table] = await inBatches(async () => (await run(db, st, { orgId, cutoff, limit }))[0]?.deleted ?? 0, {
      limit,
      restFactor: REST_FACTOR,
      onBatch: onBatch && ((rows, ms) => onBatch(table, rows, ms)),
    });
  }
  return deleted;
}

/** Every organization's purge, as of `now`; answers the rows deleted in all. */
export async function purgeExpired(db: Db, now = new Date(), limit = BATCH): Promise<number> {
  let total = 0;
  for (const org of await run(db, organizations, {})) {
    const counts = await purgeOrganization(db, org.id, new Date(now.getTime() - org.retention_days * DAY_MS), limit);
    total += Object.values(counts).reduce((a, b) => a + b, 0);
  }
  return total;
}

/**
 * The daily job: one for the whole cluster (its job key), run a day after the last; queued a minute
 * after the workers start, unless one is already waiting (its time is kept).
 */
export function retentionTasks(deps: Pick<Deps, 'db' | 'queue' | 'log'>): { tasks: TaskList; schedule: (after?: number) => Promise<void> } {
  const schedule = async (after = 60_000) => {
    await deps.queue.add({ task: RETENTION_TASK, payload: {}, jobKey: RETENTION_TASK, jobKeyMode: 'preserve_run_at', runAt: new Date(Date.now() + after), maxAttempts: 3 });
  };
  return {
    tasks: {
      [RETENTION_TASK]: async () => {
        try {
          const deleted = await purgeExpired(deps.db);
          if (deleted) deps.log.info({ deleted }, 'retention: rows past their organizations\' retention deleted');
        } finally {
          // The next run, a day on (the key of a running job is handed to the new one).
          await deps.queue.add({ task: RETENTION_TASK, payload: {}, jobKey: RETENTION_TASK, runAt: new Date(Date.now() + DAY_MS), maxAttempts: 3 });
        }
      },
    },
    schedule,
  };
}
