import { statement } from '../../db/statements.js';
import { SETTLED_LOG, type SettledLogColumns } from '../../delivery/outbox.js';

/**
 * The statements of outbound webhooks' delivery (platform.md): each one organization's, filtered by
 * it in every table it reads or writes (on Citus, one shard), but the sweep's read of due
 * deliveries across organizations.
 */

/** An endpoint as its deliveries need it. */
export interface EndpointRow {
  id: string;
  url: string;
  enabled: boolean;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
}

/** A delivery taken for an attempt, with its event (`data` as the JSON text stored, and its settled log's columns: `outbox.eventData`). */
export interface ClaimedDelivery extends SettledLogColumns {
  event_id: string;
  attempts: number;
  type: string;
  occurred_at: Date;
  data: string;
}

/** A row of a claim: the endpoint, and one delivery taken (none: every delivery column null). */
export type ClaimRow = EndpointRow & { [K in keyof ClaimedDelivery]: ClaimedDelivery[K] | null };

/**
 * Reads the endpoint and, when it is enabled, takes up to `:limit` of its due deliveries, oldest
 * due first, for `:leaseSeconds` (a delivery taken and not recorded, its worker died, is due again
 * when its lease ends). One statement, so one snapshot: an edit, a rotation or a disabling
 * committed before a taken event was written applies to its delivery. No row: the endpoint is gone.
 */
export const claimDeliveries = statement<{ orgId: string; endpointId: string; limit: number; leaseSeconds: number }, ClaimRow>(
  'herald_webhooks_claim',
  `WITH ep AS (
     SELECT id, url, enabled, secret, previous_secret, previous_secret_expires_at, failing_since
     FROM webhook_endpoints WHERE organization_id = :orgId AND id = :endpointId),
   due AS (
     SELECT d.event_id FROM webhook_deliveries d
     WHERE d.organization_id = :orgId AND d.endpoint_id = :endpointId AND d.status = 'pending' AND d.next_attempt_at <= now()
       AND (d.leased_until IS NULL OR d.leased_until < now())
       AND EXISTS (SELECT 1 FROM ep WHERE ep.enabled)
     ORDER BY d.next_attempt_at
     LIMIT :limit
     FOR UPDATE OF d SKIP LOCKED),
   -- The taken rows by their key (an array, not a join: planned while the table was small, a join
   -- read every delivery of the endpoint per row taken).
   leased AS (
     UPDATE webhook_deliveries d SET leased_until = now() + make_interval(secs => :leaseSeconds)
     WHERE d.organization_id = :orgId AND d.endpoint_id = :endpointId AND d.event_id = ANY(ARRAY(SELECT event_id FROM due))
     RETURNING d.event_id, d.attempts),
   taken AS (
     SELECT l.event_id, l.attempts, e.type, e.occurred_at, e.data::text AS data, ${SETTLED_LOG.columns}
     FROM leased l JOIN webhook_events e ON e.organization_id = :orgId AND e.id = l.event_id
     ${SETTLED_LOG.join('e')})
   SELECT ep.*, t.event_id, t.attempts, t.type, t.occurred_at, t.data, t.settled_recipients, t.settled_provider_ids
   FROM ep LEFT JOIN taken t ON true
   ORDER BY t.occurred_at, t.event_id`,
  { perCall: true },
);

/** Gives back deliveries taken and not attempted (their endpoint was disabled meanwhile): due again as they were. */
export const releaseDeliveries = statement<{ orgId: string; endpointId: string; eventIds: string[] }>(
  'herald_webhooks_release',
  `UPDATE webhook_deliveries SET leased_until = NULL
   WHERE organization_id = :orgId AND endpoint_id = :endpointId AND event_id = ANY(:eventIds::uuid[]) AND status = 'pending'`,
);

/**
 * The attempts of some deliveries of one endpoint (`jsonRows` of `{ event_id, attempt, succeeded,
 * response_status, duration_ms, response, error, attempted_at, status, next_attempt_at }`), their
 * deliveries' new state (an attempt is kept only with the delivery it moved: they have no foreign
 * key), and the endpoint's summary: `:lastSuccessAt`/`:lastFailureAt` (null: none in these),
 * `:failuresAfter` (failures after the last success among these, or all of them when none
 * succeeded), `:disable` (a reason, or null).
 */
export const recordAttempts = statement<{
  orgId: string;
  endpointId: string;
  attempts: string;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  failuresAfter: number;
  disable: string | null;
}>(
  'herald_webhooks_record',
  `WITH a AS (SELECT * FROM json_to_recordset(:attempts::json)
              AS a(event_id uuid, attempt int, succeeded boolean, response_status int, duration_ms int, response text, error text,
                   attempted_at timestamptz, status text, next_attempt_at timestamptz)),
        moved AS (
          UPDATE webhook_deliveries d
          SET status = a.status, attempts = a.attempt, next_attempt_at = coalesce(a.next_attempt_at, d.next_attempt_at), leased_until = NULL,
              last_response_status = a.response_status, updated_at = date_trunc('milliseconds', now())
          FROM a WHERE d.organization_id = :orgId AND d.endpoint_id = :endpointId AND d.event_id = a.event_id
            -- By their keys as the claim takes them: joined alone, a hash join read every delivery of the endpoint.
            AND d.event_id = ANY(ARRAY(SELECT event_id FROM a))
          RETURNING d.event_id),
        -- The attempts of the deliveries moved: one deleted meanwhile (with its endpoint) keeps none.
        kept AS (
          INSERT INTO webhook_attempts (organization_id, event_id, endpoint_id, attempt, succeeded, response_status, duration_ms, response, error, attempted_at)
          SELECT :orgId, a.event_id, :endpointId, a.attempt, a.succeeded, a.response_status, a.duration_ms, a.response, a.error, a.attempted_at
          FROM a JOIN moved ON moved.event_id = a.event_id)
   UPDATE webhook_endpoints ep
   SET last_success_at = greatest(:lastSuccessAt::timestamptz, ep.last_success_at),
       last_failure_at = greatest(:lastFailureAt::timestamptz, ep.last_failure_at),
       failures_in_a_row = CASE WHEN :lastSuccessAt::timestamptz IS NULL THEN ep.failures_in_a_row + :failuresAfter::int ELSE :failuresAfter::int END,
       failing_since = CASE WHEN :failuresAfter::int = 0 THEN NULL
                            WHEN :lastSuccessAt::timestamptz IS NULL THEN coalesce(ep.failing_since, :lastFailureAt::timestamptz)
                            ELSE :lastFailureAt::timestamptz END,
       enabled = CASE WHEN :disable::text IS NULL THEN ep.enabled ELSE false END,
       disabled_reason = coalesce(:disable::text, ep.disabled_reason),
       updated_at = date_trunc('milliseconds', now())
   WHERE ep.organization_id = :orgId AND ep.id = :endpointId`,
  { perCall: true },
);

/** When the endpoint's next pending delivery is due (null: none is pending). */
export const nextDue = statement<{ orgId: string; endpointId: string }, { next: Date | null }>(
  'herald_webhooks_next_due',
  `SELECT min(greatest(next_attempt_at, coalesce(leased_until, next_attempt_at))) AS next FROM webhook_deliveries
   WHERE organization_id = :orgId AND endpoint_id = :endpointId AND status = 'pending'`,
);

/**
 * Endpoints with deliveries due for `:graceSeconds` and not taken (their wake was lost, or their
 * worker died): across organizations, without locks, for the sweep to wake each on its own.
 */
export const overdueEndpoints = statement<{ graceSeconds: number; limit: number }, { organization_id: string; endpoint_id: string }>(
  'herald_webhooks_overdue',
  `SELECT DISTINCT organization_id, endpoint_id FROM webhook_deliveries
   WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => :graceSeconds)
     AND (leased_until IS NULL OR leased_until < now())
   LIMIT :limit`,
);

/**
 * Queues the endpoint's delivery run for `:runAt` (a retry), beside any run queued now
 * (`outbox.wake`), or keeps the one queued for earlier: two runs ending together each ask for their
 * own next time, and one that saw a delivery leased to the other (due at the lease's end, half a
 * minute and more) must not push back the other's retry, due in seconds.
 */
export const scheduleRetry = statement<{ orgId: string; endpointId: string; runAt: Date }>(
  'herald_webhooks_schedule_retry',
  `SELECT graphile_worker.add_job('webhooks-deliver', json_build_object('orgId', :orgId::text, 'endpointId', :endpointId::text),
                                  run_at := least(:runAt::timestamptz,
                                                  (SELECT min(j.run_at) FROM graphile_worker.jobs j WHERE j.key = 'webhooks-retry:' || :endpointId::text AND j.locked_at IS NULL)),
                                  job_key := 'webhooks-retry:' || :endpointId::text, job_key_mode := 'replace', max_attempts := 5)`,
);

/** An example event for one endpoint only (`POST /webhooks/:id/test`). */
export const insertTestEvent = statement<{ orgId: string; endpointId: string; type: string; data: string }, { event_id: string }>(
  'herald_webhooks_test_event',
  `WITH ev AS (INSERT INTO webhook_events (organization_id, type, occurred_at, data) VALUES (:orgId, :type, date_trunc('milliseconds', now()), :data::jsonb) RETURNING id)
   INSERT INTO webhook_deliveries (organization_id, event_id, endpoint_id) SELECT :orgId, ev.id, :endpointId FROM ev RETURNING event_id`,
);

/** Delivers an event to an endpoint again, now, from its first attempt (whether or not it had a delivery there). */
export const resendDelivery = statement<{ orgId: string; eventId: string; endpointId: string }>(
  'herald_webhooks_resend',
  `INSERT INTO webhook_deliveries (organization_id, event_id, endpoint_id) VALUES (:orgId, :eventId, :endpointId)
   ON CONFLICT (organization_id, event_id, endpoint_id)
   DO UPDATE SET status = 'pending', attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at, leased_until = NULL, updated_at = EXCLUDED.updated_at`,
);
