import { statement } from '../../db/statements.js';

/**
 * The Postgres channel that announces a change of a campaign's status or counters, with the payload
 * `<organizationId>:<campaignId>`. API processes listen on it for their `campaignProgress`
 * subscribers (`modules/campaigns/progress-listener.ts`). An announcement is delivered when the
 * transaction that made it commits, never for one rolled back, and carries no state: listeners read
 * the campaign again. Postgres folds the same announcement made twice in a transaction into one.
 *
 * The API processes listen on the coordinator of a Citus cluster, so the announcement must be made
 * there too, never on a worker holding the campaign's shard:
 *  - in a statement that counts the campaign (a settle, a receipt), it is a step reading only the
 *    statement's own `UPDATE campaigns` step (`announceCounted`). Those statements have `INSERT`
 *    steps, which Citus's router planner refuses to send whole to a worker: it runs each step that
 *    reads a distributed table on its own shard, and what reads only their results (this step
 *    included) on the coordinator. One statement, no round trip, and the campaign's row is not held
 *    locked a moment longer, where a statement of its own in a transaction would hold it until the
 *    commit;
 *  - elsewhere, in a transaction of several statements (launch, cancel), `notifyProgress`, which
 *    reads no table and so runs on the coordinator.
 */
export const PROGRESS_CHANNEL = 'herald_campaign_progress';

/**
 * SQL: a column announcing `payload` on the progress channel. Text, not pg_notify's void: Citus keeps
 * the result of a step it runs on the coordinator as a table, and a column of type void cannot be
 * one ("column pg_notify has pseudo-type void").
 */
export const notified = (payload: string, channel = PROGRESS_CHANNEL) => `pg_notify('${channel}', ${payload})::text AS notified`;

/**
 * SQL: a step (`WITH announced AS (...)`) announcing the campaigns of the step `counted`, which
 * returns the `id` and `parent_id` of each campaign (of `:orgId`) whose counters it moved (a
 * run's campaign is announced with it: its analytics are the runs' sums). The statement must read
 * it (`ANNOUNCED`): a step no one reads is not run.
 */
export const announceCounted = (counted = 'counted') =>
  `announced AS (SELECT ${notified(`:orgId::text || ':' || a.id::text`)}
                 FROM ${counted} CROSS JOIN LATERAL (VALUES (${counted}.id), (${counted}.parent_id)) AS a(id) WHERE a.id IS NOT NULL)`;

/** SQL: how many campaigns `announceCounted` announced (0 or 1), a column for the statement's answer that makes the step run. */
export const ANNOUNCED = '(SELECT count(*) FROM announced)::int AS announced';

/** Announces a change of the campaign, on the commit of the transaction it runs in (launch, cancel). */
export const notifyProgress = statement<{ orgId: string; campaignId: string }>(
  'herald_campaign_progress_notify',
  `SELECT pg_notify('${PROGRESS_CHANNEL}', :orgId::text || ':' || :campaignId::text)`,
);
