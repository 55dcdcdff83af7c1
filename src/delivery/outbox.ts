import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { jsonRows, run, statement } from '../db/statements.js';
import { settledOutcomesJson, type StoredRecipient } from './log-recipients.js';

/**
 * The outbox of outbound webhooks (platform.md): the one home of how an event gets to the endpoints
 * that take it. A change that causes events writes them in its own statement (or transaction), with
 * the pieces below: an event is stored, with a pending delivery for each enabled endpoint of the
 * organization whose `event_types` take it, only when such an endpoint exists, and is never
 * written for a change that rolled back. After the commit the writer wakes the endpoints that got
 * deliveries (`wake`); should that be lost (the process died in between), the sweep finds them.
 */

export const EVENT_TYPES = [
  'message.sent',
  'message.delivered',
  'message.failed',
  'message.opened',
  'message.clicked',
  'message.bounced',
  'message.complained',
  'campaign.completed',
  'campaign.failed',
  'contact.unsubscribed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * SQL: the CTE `wh_endpoints`, the organization's (`:orgId`) enabled endpoints, with what their
 * deliveries need (`HANDED`); first of the statement's CTEs, so its sources can skip their work when
 * it is empty.
 */
export const WEBHOOK_ENDPOINTS = `wh_endpoints AS (
  SELECT id, event_types, url, secret, previous_secret, previous_secret_expires_at, failing_since
  FROM webhook_endpoints WHERE organization_id = :orgId AND enabled)`;

/** SQL: whether `wh_endpoints` has any endpoint (for sources to skip building events nobody takes). */
export const ANY_ENDPOINT = `EXISTS (SELECT 1 FROM wh_endpoints)`;

const TAKES = (type: string) => `(e.event_types = '{}' OR ${type} = ANY(e.event_types))`;

/**
 * SQL: CTEs (after `WEBHOOK_ENDPOINTS`) that store the events of `source` (a CTE or subquery with
 * columns `type` text, `occurred_at` timestamptz, `data` jsonb, and, when `settledLog` names it, a
 * column with the settled log whose recipients a message event carries: see `eventData`) and their
 * deliveries. With `handOver`, the statement takes `:handOverSeconds` (`handOverLease`): above 0,
 * its deliveries are written leased that long to the writing process, which posts them itself
 * (`HANDED`, `wake`) without claiming them.
 */
export const outboxWrites = (source: string, settledLog = 'NULL::uuid', handOver = false) => `
  wh_events AS (
    INSERT INTO webhook_events (organization_id, type, occurred_at, data, settled_log_id)
    SELECT :orgId, s.type, s.occurred_at, s.data, ${settledLog} FROM ${source} s
    WHERE EXISTS (SELECT 1 FROM wh_endpoints e WHERE ${TAKES('s.type')})
    RETURNING id, type, occurred_at, data, settled_log_id),
  wh_deliveries AS (
    INSERT INTO webhook_deliveries (organization_id, event_id, endpoint_id${handOver ? ', leased_until' : ''})
    SELECT :orgId, v.id, e.id${handOver ? ', CASE WHEN :handOverSeconds::int > 0 THEN now() + make_interval(secs => :handOverSeconds::int) END' : ''}
    FROM wh_events v JOIN wh_endpoints e ON ${TAKES('v.type')}
    RETURNING endpoint_id, event_id)`;

/**
 * SQL: a column of the answer of a statement whose `outboxWrites` hand over (`:handOverSeconds` above
 * 0): what the writing process posts itself (`Handed`), null otherwise. The endpoints are read in
 * the statement's snapshot, as a claim reads them: an edit, a rotation or a disabling committed
 * before the events were written applies to their deliveries.
 */
export const HANDED = `CASE WHEN :handOverSeconds::int > 0 AND EXISTS (SELECT 1 FROM wh_deliveries) THEN json_build_object(
    'endpoints', (SELECT json_agg(json_build_object('id', e.id, 'url', e.url, 'secret', encode(e.secret, 'base64'),
                                                    'previous_secret', encode(e.previous_secret, 'base64'),
                                                    'previous_secret_expires_at', e.previous_secret_expires_at, 'failing_since', e.failing_since))
                  FROM wh_endpoints e WHERE e.id IN (SELECT endpoint_id FROM wh_deliveries)),
    'deliveries', (SELECT json_agg(json_build_object('event_id', d.event_id, 'endpoint_id', d.endpoint_id, 'type', v.type,
                                                     'occurred_at', v.occurred_at, 'data', v.data::text, 'settled_log_id', v.settled_log_id)
                                   ORDER BY v.occurred_at, d.event_id)
                   FROM wh_deliveries d JOIN wh_events v ON v.id = d.event_id)) END AS handed`;

/** `HANDED` as the answer carries it. */
export interface HandedJson {
  endpoints: { id: string; url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: string | null; failing_since: string | null }[];
  deliveries: { event_id: string; endpoint_id: string; type: string; occurred_at: string; data: string; settled_log_id: string | null }[];
}

/** SQL: a column of the statement's answer, the endpoints given deliveries (null when none), for `wake`. */
export const WOKEN = `(SELECT array_agg(DISTINCT endpoint_id) FROM wh_deliveries) AS webhook_endpoints`;

/** What a statement that writes events answers, for `wake`. */
export interface Woken {
  webhook_endpoints: string[] | null;
}

export interface NewEvent {
  type: EventType;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** Events given in full (a campaign's completion, a consent change): stored with their deliveries. */
export const emitStatement = statement<{ orgId: string; events: string }, Woken>(
  'herald_webhooks_emit',
  `WITH ${WEBHOOK_ENDPOINTS},
        src AS (SELECT type, occurred_at, data FROM json_to_recordset(:events::json) AS e(type text, occurred_at timestamptz, data jsonb)),
        ${outboxWrites('src')}
   SELECT ${WOKEN}`,
);

/** Stores `events` of organization `orgId` for the endpoints that take them, in the caller's transaction; answers the endpoints to wake after its commit. */
export async function emit(db: Db | Knex.Transaction, orgId: string, events: NewEvent[]): Promise<string[]> {
  if (!events.length) return [];
  const [row] = await run(db, emitStatement, { orgId, events: jsonRows(events.map((e) => ({ type: e.type, occurred_at: e.occurredAt, data: e.data }))) });
  return row?.webhook_endpoints ?? [];
}

/**
 * Queues a delivery run for each endpoint (`modules/webhooks/delivery.ts`), now: one pending run per
 * endpoint however often it is woken (the job key), and a run already going gets another after it.
 * Runs have a lane of their own (`tasks.ts`), so a campaign's events go out while it sends rather
 * than after its last chunk, and a run never holds a slot that sends; the priority orders them
 * first should a lane ever be shared.
 */
const wakeStatement = statement<{ orgId: string; endpointIds: string[] }>(
  'herald_webhooks_wake',
  `SELECT graphile_worker.add_job('webhooks-deliver', json_build_object('orgId', :orgId::text, 'endpointId', e), job_key := 'webhooks-deliver:' || e,
                                  job_key_mode := 'replace', max_attempts := 5, priority := -1)
   FROM unnest(:endpointIds::uuid[]) AS e`,
);

/** Starts (or extends) a process's own delivery run for some endpoints of an organization. */
export type DeliverNow = (orgId: string, endpointIds: readonly string[]) => void;

/**
 * A process's own delivery of what its statement handed over (`HANDED`, leased to it): posted by the
 * endpoints' runs without a claim, or, when the process takes none of it (it is stopping), given back
 * and queued as any other wake's. Resolves once that is settled, not once they are posted.
 */
export type HandOver = (orgId: string, handed: HandedJson, logs: ReadonlyMap<string, SettledLogColumns>) => Promise<void>;

/** A process's own delivery runs (`modules/webhooks/delivery.ts`). */
export interface InProcessDelivery {
  deliverNow: DeliverNow;
  handOver: HandOver;
  /** The lease of deliveries handed over now (`:handOverSeconds`), or 0 when this process takes none (stopping, or enough waiting). */
  handOverLease: () => number;
}

/** The processes' own delivery runs, by the database they deliver from (a process may hold several Heralds: tests). */
const inProcess = new WeakMap<Db, InProcessDelivery>();

/**
 * Lets a process that runs queue workers start delivering at once what its own changes woke, rather
 * than when its webhooks lane next fetches the queued run (the lane's batch, or its poll), and post
 * what its statements hand over.
 */
export function deliverInProcess(db: Db, delivery: InProcessDelivery): void {
  inProcess.set(db, delivery);
}

/** `:handOverSeconds` for a statement whose `outboxWrites` hand over: 0 in a process without its own delivery runs. */
export function handOverLease(db: Db): number {
  return inProcess.get(db)?.handOverLease() ?? 0;
}

/**
 * Wakes the endpoints a committed change gave deliveries (`Woken`); none is a no-op. The run is
 * queued all the same: the queue is what delivers when this process has no run of its own, dies
 * meanwhile, or the endpoint has a retry due. Deliveries the change handed over (`handed`, with the
 * settled logs their message events carry, from the writer's memory) are posted by this process's
 * runs instead, and queue nothing: they are leased to it, and should it die with them, their lease
 * ends and the sweep wakes their endpoints.
 */
export async function wake(
  db: Db,
  orgId: string,
  endpointIds: readonly string[] | null | undefined,
  handed?: { handed: HandedJson | null; logs: ReadonlyMap<string, SettledLogColumns> },
): Promise<void> {
  if (!endpointIds?.length) return;
  const own = inProcess.get(db);
  // Only a process with runs of its own is handed deliveries (`handOverLease`).
  if (handed?.handed && own) return own.handOver(orgId, handed.handed, handed.logs);
  own?.deliverNow(orgId, endpointIds);
  await run(db, wakeStatement, { orgId, endpointIds: [...endpointIds] });
}

/**
 * SQL: the message events of settled logs (a CTE or subquery `logs` with the columns of
 * `message_logs` it names), one `message.sent` per log with recipients sent and one
 * `message.failed` per log with recipients that failed, built only when an endpoint exists; for
 * `outboxWrites(logEventsSql(...), 'settled_log_id')`. A campaign's test send is marked `test`. The
 * recipients are not copied: the event names its log (`eventData`).
 */
export const logEventsSql = (logs: string) => `(
  SELECT k.type, l.settled_at AS occurred_at, l.id AS settled_log_id,
         jsonb_build_object('logId', l.id, 'campaignId', CASE WHEN l.test THEN NULL ELSE l.campaign_id END, 'channel', l.channel, 'test', l.test) AS data
  FROM ${logs} l CROSS JOIN (VALUES ('message.sent'), ('message.failed')) AS k(type)
  WHERE ${ANY_ENDPOINT} AND CASE WHEN k.type = 'message.sent' THEN l.success_count > 0 ELSE l.failed_count > 0 END)`;

/** The columns `eventData` needs beside an event's own: its settled log's (`SETTLED_LOG`), null for any other event. */
export interface SettledLogColumns {
  settled_recipients: StoredRecipient[] | null;
  settled_provider_ids: (string | null)[] | null;
}

/** SQL: the join and the columns of `SettledLogColumns` for events `e` (of the organization `:orgId`). */
export const SETTLED_LOG = {
  join: (e: string) => `LEFT JOIN message_logs sl ON sl.organization_id = :orgId AND sl.id = ${e}.settled_log_id`,
  // The provider ids as JSON: parsed natively, where an array's text is parsed character by character.
  columns: 'sl.recipients AS settled_recipients, array_to_json(sl.provider_ids) AS settled_provider_ids',
};

/**
 * An event's data as it is delivered and shown, as JSON text, from its data as stored (JSON text,
 * never parsed and written again): as stored, but a message event of a settled log
 * (`logEventsSql`) gets that log's recipients sent (`message.sent`) or failed (`message.failed`),
 * read from the log, whose recipients never change once settled. Such an event's stored data never
 * has recipients of its own (`logEventsSql` writes none).
 */
export function eventDataJson(type: string, data: string, log: SettledLogColumns): string {
  if (!log.settled_recipients) return data;
  const open = data.trimEnd().slice(0, -1).trimEnd();
  return `${open}${open.endsWith('{') ? '' : ','}"recipients":${settledOutcomesJson(log.settled_recipients, log.settled_provider_ids, type === 'message.sent')}}`;
}

/** `eventDataJson` of data already parsed. */
export function eventData(type: string, data: Record<string, unknown>, log: SettledLogColumns): Record<string, unknown> {
  if (!log.settled_recipients) return data;
  return JSON.parse(eventDataJson(type, JSON.stringify(data), log)) as Record<string, unknown>;
}

/**
 * SQL: the data of a campaign event (`campaign.completed`, `campaign.failed`) from a campaigns row
 * `c` (its id, name and analytics); a run's names its campaign and, as `runId`, itself.
 */
export const campaignEventDataSql = (c: string) =>
  `(jsonb_build_object('campaignId', coalesce(${c}.parent_id, ${c}.id), 'name', ${c}.name, 'analytics', jsonb_build_object('sent', ${c}.sent, 'delivered', ${c}.delivered, 'failed', ${c}.failed,
                      'opened', ${c}.opened, 'clicked', ${c}.clicked, 'bounced', ${c}.bounced, 'complained', ${c}.complained, 'suppressed', ${c}.suppressed))
    || CASE WHEN ${c}.parent_id IS NOT NULL THEN jsonb_build_object('runId', ${c}.id) ELSE '{}'::jsonb END)`;
