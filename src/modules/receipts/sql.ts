import { statement } from '../../db/statements.js';
import { ANY_ENDPOINT, outboxWrites, WEBHOOK_ENDPOINTS, WOKEN, type Woken } from '../../delivery/outbox.js';
import { ANNOUNCED, announceCounted } from '../../delivery/sql/progress.js';
import { countReceiptChanges } from '../../delivery/sql/stats.js';

/**
 * The statements of receipts and engagement (platform.md): a recipient's state after its send
 * (`recipient_receipts`), its events (`message_events`) and its campaign's counters. Every one is
 * one organization's, filtered by it in every table it reads or writes (on Citus, one shard).
 */

/** SQL: the address at `position` (SQL) of the log `log` (its recipients in stored form, see `delivery/log-recipients.ts`). */
const recipientAt = (position: string, log = 'm') => `CASE WHEN json_typeof(${log}.recipients -> (${position} - 1)) = 'string'
  THEN ${log}.recipients -> (${position} - 1) #>> '{}' ELSE ${log}.recipients -> (${position} - 1) ->> 'recipient' END`;

/** The campaign a log's recipients count in: none for a test send's. */
const CAMPAIGN_OF_LOG = 'CASE WHEN m.test THEN NULL ELSE m.campaign_id END';

/** The log and campaign of the recipient at `:position`, and its address; none when the log or position is not one. */
const LOG = `SELECT m.id, ${CAMPAIGN_OF_LOG} AS campaign_id, ${recipientAt(':position')} AS recipient
             FROM message_logs m
             WHERE m.organization_id = :orgId AND m.id = :logId AND :position BETWEEN 1 AND json_array_length(m.recipients)`;

/** SQL: CTEs that give the counted events of the CTE `ev` to the outbound webhooks (`delivery/outbox.ts`). */
const OUTBOX = outboxWrites(`(SELECT ev.type, ev.occurred_at,
                                     jsonb_build_object('logId', ev.log_id, 'position', ev.position, 'recipient', ev.recipient, 'campaignId', ev.campaign_id) || ev.data AS data
                              FROM ev WHERE ev.counted AND ${ANY_ENDPOINT})`);

/** SQL: the receipt rows of `:rows` (`ReceiptRow`s as JSON), as the CTE or subquery `r` reads them. */
const RECEIPT_ROWS = `json_to_recordset(:rows::json) AS r(i int, log_id uuid, position int, at timestamptz, sent_before timestamptz,
  campaign_id uuid, recipient text, delivered_at timestamptz, read_at timestamptz, opened_at timestamptz, clicked_at timestamptz,
  failed_at timestamptz, error text, bounced_at timestamptz, bounce_type text, bounce_reason text, complained_at timestamptz,
  was_delivered_at timestamptz, was_read_at timestamptz, was_opened_at timestamptz, was_clicked_at timestamptz, was_failed_at timestamptz,
  was_error text, was_bounced_at timestamptz, was_bounce_type text, was_complained_at timestamptz,
  events json, delivered int, opened int, clicked int, bounced int, complained int)`;

/** SQL: records the events of the changed receipts of the CTE `changed` (each row's `events`: `{ type, counted, data }`, at its `at`). */
const INSERT_EVENTS = `INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
   SELECT :orgId, e.type, ch.log_id, ch.position, ch.campaign_id, ch.recipient, ch.at, e.counted, e.data
   FROM changed ch, json_to_recordset(ch.events) AS e(type text, counted boolean, data jsonb)
   RETURNING type, occurred_at, counted, log_id, position, campaign_id, recipient, data`;

/**
 * SQL: moves the counters of the campaigns of the changed receipts of the CTE `changed` by their
 * `delivered`, `opened`, `clicked`, `bounced` and `complained` (0 or 1 each), summed per campaign;
 * returns each campaign it moved (`id`, `parent_id`, for `announceCounted`) and leaves the others'
 * rows alone (unlocked).
 */
const COUNT_IN_CAMPAIGNS = `UPDATE campaigns c SET delivered = c.delivered + x.delivered, opened = c.opened + x.opened, clicked = c.clicked + x.clicked,
                                      bounced = c.bounced + x.bounced, complained = c.complained + x.complained
   FROM (SELECT campaign_id, sum(delivered)::int AS delivered, sum(opened)::int AS opened, sum(clicked)::int AS clicked,
                sum(bounced)::int AS bounced, sum(complained)::int AS complained
         FROM changed WHERE campaign_id IS NOT NULL GROUP BY campaign_id HAVING sum(delivered + opened + clicked + bounced + complained) > 0) x
   WHERE c.organization_id = :orgId AND c.id = x.campaign_id
   RETURNING c.id, c.parent_id`;

/**
 * SQL: the CTEs shared by the writes of receipts, after `changed`: its events, its counters (the
 * campaigns' and the daily rollup's), their announcement and their webhooks.
 */
const AFTER_CHANGES = `ev AS (${INSERT_EVENTS}),
        counted AS (${COUNT_IN_CAMPAIGNS}),
        stats AS (${countReceiptChanges('changed')}),
        ${announceCounted()},
        ${OUTBOX}`;

/** A recipient's state as a statement writes it (`null`: not happened). */
export interface ReceiptState {
  deliveredAt: Date | null;
  readAt: Date | null;
  openedAt: Date | null;
  clickedAt: Date | null;
  failedAt: Date | null;
  error: string | null;
  bouncedAt: Date | null;
  bounceType: 'hard' | 'soft' | null;
  bounceReason: string | null;
  complainedAt: Date | null;
}

/** How a receipt moves its campaign's counters (0 or 1 each). */
export interface CounterMoves {
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

/** An event a receipt records: its type, whether it counts, its data. */
export interface ReceiptEvent {
  type: string;
  counted: boolean;
  data: Record<string, unknown>;
}

/**
 * One receipt of one recipient, as the statements below take it (in `:rows`, JSON with these
 * names): the recipient (`log_id`, `position`, and once its row is known, its `campaign_id` and
 * `recipient`), the state the receipt leaves, the state it was read in (`was_…`, for
 * `updateReceipts`), its events and how it moves its campaign's counters (0 or 1 each). `i` names
 * the receipt in the answer.
 */
export interface ReceiptRow extends CounterMoves {
  i: number;
  log_id: string;
  position: number;
  at: Date;
  sent_before?: Date | null;
  campaign_id?: string | null;
  recipient?: string;
  delivered_at: Date | string | null;
  read_at: Date | string | null;
  opened_at: Date | string | null;
  clicked_at: Date | string | null;
  failed_at: Date | string | null;
  error: string | null;
  bounced_at: Date | string | null;
  bounce_type: string | null;
  bounce_reason: string | null;
  complained_at: Date | string | null;
  was_bounced_at?: string | null;
  was_bounce_type?: string | null;
  was_complained_at?: string | null;
  was_delivered_at?: string | null;
  was_read_at?: string | null;
  was_opened_at?: string | null;
  was_clicked_at?: string | null;
  was_failed_at?: string | null;
  was_error?: string | null;
  events: ReceiptEvent[];
}

/**
 * The first receipts of some recipients of the organization's logs (`:rows`, at most one per
 * recipient), in one statement: a row for each with what its receipt sets, their events, and their
 * campaigns counted once for each (and announced to the API processes, `delivery/sql/progress.ts`).
 * A recipient that has a row already is left as it is (`inserted` lacks it) and its row is returned
 * as the statement saw it (`existing`, `ExistingReceipt` rows, times exactly as stored; none for a
 * row another transaction was still writing), for the caller to change with `updateReceipts`; a
 * receipt whose log and position the organization does not have is not `known`, nor one whose log
 * was written at or after its `sent_before`.
 */
export const firstReceipts = statement<{ orgId: string; rows: string }, { known: number[]; inserted: number[]; existing: ExistingReceipt[] | null; announced: number } & Woken>(
  'herald_receipts_first',
  `WITH ${WEBHOOK_ENDPOINTS},
        pos AS (SELECT r.i, r.log_id, r.position, r.at, ${CAMPAIGN_OF_LOG} AS campaign_id, ${recipientAt('r.position')} AS recipient,
                       r.delivered_at, r.read_at, r.opened_at, r.clicked_at, r.failed_at, r.error, r.bounced_at, r.bounce_type, r.bounce_reason,
                       r.complained_at, r.events, r.delivered, r.opened, r.clicked, r.bounced, r.complained
                FROM ${RECEIPT_ROWS}
                JOIN message_logs m ON m.organization_id = :orgId AND m.id = r.log_id
                WHERE m.created_at < coalesce(r.sent_before, 'infinity') AND r.position BETWEEN 1 AND json_array_length(m.recipients)),
        ins AS (
          INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, delivered_at, read_at, opened_at, clicked_at, failed_at, delivery_error,
                                          bounced_at, bounce_type, bounce_reason, complained_at)
          SELECT :orgId, pos.log_id, pos.position, pos.campaign_id, pos.delivered_at, pos.read_at, pos.opened_at, pos.clicked_at, pos.failed_at, pos.error,
                 pos.bounced_at, pos.bounce_type, pos.bounce_reason, pos.complained_at
          FROM pos
          ON CONFLICT (organization_id, log_id, position) DO NOTHING
          RETURNING log_id, position),
        changed AS (SELECT pos.* FROM pos JOIN ins ON ins.log_id = pos.log_id AND ins.position = pos.position),
        ${AFTER_CHANGES},
        -- Rows there before this statement (its snapshot): the state their next change starts from.
        existing AS (SELECT pos.i, pos.recipient, rr.campaign_id AS "campaignId", rr.delivered_at AS "deliveredAt", rr.read_at AS "readAt",
                            rr.opened_at AS "openedAt", rr.clicked_at AS "clickedAt", rr.failed_at AS "failedAt", rr.delivery_error AS error,
                            rr.bounced_at AS "bouncedAt", rr.bounce_type AS "bounceType", rr.bounce_reason AS "bounceReason", rr.complained_at AS "complainedAt"
                     FROM pos JOIN recipient_receipts rr ON rr.organization_id = :orgId AND rr.log_id = pos.log_id AND rr.position = pos.position)
   SELECT coalesce((SELECT array_agg(i) FROM pos), '{}') AS known, coalesce((SELECT array_agg(i) FROM changed), '{}') AS inserted,
          (SELECT json_agg(existing) FROM existing) AS existing, ${ANNOUNCED}, ${WOKEN}`,
  { perCall: true },
);

/** A recipient's stored receipts, as the message log shows them. */
export interface StoredReceipt {
  log_id: string;
  position: number;
  delivered_at: Date | null;
  read_at: Date | null;
  opened_at: Date | null;
  clicked_at: Date | null;
  delivery_error: string | null;
  bounced_at: Date | null;
  bounce_type: 'hard' | 'soft' | null;
  bounce_reason: string | null;
  complained_at: Date | null;
}

/** A recipient's row as `firstReceipts` or `lockReceipt` read it (JSON: its times are strings, exactly as stored). */
export type ExistingReceipt = { i: number; campaignId: string | null; recipient: string } & { [K in keyof ReceiptState]: string | null };

/** A recipient's row, locked until the transaction ends: its state (as JSON, times exactly as stored), campaign and address. */
export const lockReceipt = statement<{ orgId: string; logId: string; position: number }, { row: Omit<ExistingReceipt, 'i'> }>(
  'herald_receipts_lock',
  `SELECT json_build_object('campaignId', r.campaign_id, 'recipient', ${recipientAt(':position')}, 'deliveredAt', r.delivered_at, 'readAt', r.read_at,
                            'openedAt', r.opened_at, 'clickedAt', r.clicked_at, 'failedAt', r.failed_at, 'error', r.delivery_error,
                            'bouncedAt', r.bounced_at, 'bounceType', r.bounce_type, 'bounceReason', r.bounce_reason, 'complainedAt', r.complained_at) AS row
   FROM recipient_receipts r
   JOIN message_logs m ON m.organization_id = :orgId AND m.id = r.log_id
   WHERE r.organization_id = :orgId AND r.log_id = :logId AND r.position = :position
   FOR UPDATE OF r`,
);

/**
 * Recipients' new states (`:rows`, at most one per recipient), their events and their campaigns'
 * counters, in one statement: each row changes under its lock (`:locked`) or when it is still in
 * the state it was read in (its `was_…`), and is then `updated`; one another receipt changed since
 * is not (nothing of it is written, and the caller takes `lockReceipt`). A time once set stays:
 * each is set only where it was not. A campaign it counts is announced, as `firstReceipts` does.
 */
export const updateReceipts = statement<{ orgId: string; rows: string; locked: boolean }, { updated: number[]; announced: number } & Woken>(
  'herald_receipts_update',
  `WITH ${WEBHOOK_ENDPOINTS},
        r AS (SELECT * FROM ${RECEIPT_ROWS}),
        upd AS (
          UPDATE recipient_receipts rr
          SET delivered_at = coalesce(rr.delivered_at, r.delivered_at), read_at = coalesce(rr.read_at, r.read_at),
              opened_at = coalesce(rr.opened_at, r.opened_at), clicked_at = coalesce(rr.clicked_at, r.clicked_at),
              failed_at = coalesce(rr.failed_at, r.failed_at), delivery_error = coalesce(rr.delivery_error, r.error),
              bounced_at = coalesce(rr.bounced_at, r.bounced_at), complained_at = coalesce(rr.complained_at, r.complained_at),
              -- A permanent bounce after a temporary one says more: its type and reason replace the other's.
              bounce_type = CASE WHEN r.bounce_type = 'hard' THEN 'hard' ELSE coalesce(rr.bounce_type, r.bounce_type) END,
              bounce_reason = CASE WHEN r.bounce_type = 'hard' AND rr.bounce_type IS DISTINCT FROM 'hard' THEN r.bounce_reason ELSE coalesce(rr.bounce_reason, r.bounce_reason) END,
              updated_at = date_trunc('milliseconds', now())
          FROM r
          WHERE rr.organization_id = :orgId AND rr.log_id = r.log_id AND rr.position = r.position
            AND (:locked::boolean OR rr.delivered_at IS NOT DISTINCT FROM r.was_delivered_at AND rr.read_at IS NOT DISTINCT FROM r.was_read_at
            AND rr.opened_at IS NOT DISTINCT FROM r.was_opened_at AND rr.clicked_at IS NOT DISTINCT FROM r.was_clicked_at
            AND rr.failed_at IS NOT DISTINCT FROM r.was_failed_at AND rr.delivery_error IS NOT DISTINCT FROM r.was_error
            AND rr.bounced_at IS NOT DISTINCT FROM r.was_bounced_at AND rr.bounce_type IS NOT DISTINCT FROM r.was_bounce_type
            AND rr.complained_at IS NOT DISTINCT FROM r.was_complained_at)
          RETURNING rr.log_id, rr.position),
        changed AS (SELECT r.* FROM r JOIN upd ON upd.log_id = r.log_id AND upd.position = r.position),
        ${AFTER_CHANGES}
   SELECT coalesce((SELECT array_agg(i) FROM changed), '{}') AS updated, ${ANNOUNCED}, ${WOKEN}`,
  { perCall: true },
);

/** An event that changes nothing (a scanner's open or click): recorded, not counted; none for an unknown log or position. */
export const uncountedEvent = statement<{ orgId: string; logId: string; position: number; at: Date; events: string }, { known: number }>(
  'herald_receipts_uncounted',
  `WITH log AS (${LOG}),
        ev AS (INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
               SELECT :orgId, e.type, log.id, :position, log.campaign_id, log.recipient, :at::timestamptz, e.counted, e.data
               FROM log, json_to_recordset(:events::json) AS e(type text, counted boolean, data jsonb)
               RETURNING 1)
   SELECT (SELECT count(*) FROM log)::int AS known`,
);

/**
 * The logs whose id begins with a prefix (the first 28 characters of a UUID, as Herald's own
 * per-recipient reference carries them, see `LogTarget.clientId`), `:low` to `:high` being that
 * prefix followed by the lowest and highest 8 hex digits: a range of the primary key.
 */
export const logByPrefix = statement<{ orgId: string; low: string; high: string }, { id: string }>(
  'herald_receipts_log_by_prefix',
  `SELECT id FROM message_logs WHERE organization_id = :orgId AND id BETWEEN :low::uuid AND :high::uuid LIMIT 2`,
);

/** The log and position holding a provider's message id (through the GIN index of the logs' ids). */
export const logByProviderId = statement<{ orgId: string; providerId: string }, { id: string; position: number }>(
  'herald_receipts_log_by_provider_id',
  `SELECT id, array_position(provider_ids, :providerId::text) AS position
   FROM message_logs WHERE organization_id = :orgId AND provider_ids @> ARRAY[:providerId::text] LIMIT 1`,
);

/** The receipts of some logs' recipients, for showing them. */
export const receiptsOfLogs = statement<{ orgId: string; logIds: string[] }, StoredReceipt>(
  'herald_receipts_of_logs',
  `SELECT log_id, position, delivered_at, read_at, opened_at, clicked_at, delivery_error, bounced_at, bounce_type, bounce_reason, complained_at
   FROM recipient_receipts WHERE organization_id = :orgId AND log_id = ANY(:logIds::uuid[])`,
);

export interface EventRow {
  id: string;
  type: string;
  log_id: string;
  position: number;
  campaign_id: string | null;
  recipient: string;
  occurred_at: Date;
  counted: boolean;
  data: Record<string, unknown>;
  created_at: Date;
}

/** A log's events, in the order they happened. */
export const eventsOfLog = statement<{ orgId: string; logId: string }, EventRow>(
  'herald_receipts_events_of_log',
  `SELECT id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data, created_at
   FROM message_events WHERE organization_id = :orgId AND log_id = :logId
   -- A receipt's own event before those it implies (a click before the open it makes).
   ORDER BY occurred_at, created_at, data ? 'impliedBy', id`,
);
