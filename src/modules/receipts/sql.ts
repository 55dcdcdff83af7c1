import { statement } from '../../db/statements.js';
import { ANY_ENDPOINT, outboxWrites, WEBHOOK_ENDPOINTS, WOKEN, type Woken } from '../../delivery/outbox.js';
import { ANNOUNCED, announceCounted } from '../../delivery/sql/progress.js';

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

/** `jsonRows` of events: `{ type, counted, data }`, all at `:at`. */
const EVENTS = `json_to_recordset(:events::json) AS e(type text, counted boolean, data jsonb)`;

/** SQL: records the events (`:events`) of a recipient, its log, position, campaign and address given as SQL, read from `from` (tables or CTEs) and the events. */
const insertEvents = (logId: string, position: string, campaignId: string, recipient: string, from: string[] = []) =>
  `INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
   SELECT :orgId, e.type, ${logId}, ${position}, ${campaignId}, ${recipient}, :at::timestamptz, e.counted, e.data
   FROM ${[...from, EVENTS].join(', ')}
   RETURNING type, occurred_at, counted, log_id, position, campaign_id, recipient, data`;

/** SQL: CTEs that give the counted events of the CTE `ev` (`insertEvents`) to the outbound webhooks (`delivery/outbox.ts`). */
const OUTBOX = outboxWrites(`(SELECT ev.type, ev.occurred_at,
                                     jsonb_build_object('logId', ev.log_id, 'position', ev.position, 'recipient', ev.recipient, 'campaignId', ev.campaign_id) || ev.data AS data
                              FROM ev WHERE ev.counted AND ${ANY_ENDPOINT})`);

/**
 * SQL: moves the counters of the campaign `campaignId` (SQL, read from `from` when given) by
 * `:delivered`, `:opened` and `:clicked` for each of `times` (SQL) recipients; returns its `id` when
 * it moved them (for `announceCounted`), and leaves its row alone (unlocked) when they do not move.
 */
const countInCampaign = (campaignId: string, from?: string, times = '1') =>
  `UPDATE campaigns c SET delivered = c.delivered + :delivered::int * ${times}, opened = c.opened + :opened::int * ${times},
                          clicked = c.clicked + :clicked::int * ${times}
   ${from ? `FROM ${from} ` : ''}WHERE c.organization_id = :orgId AND c.id = ${campaignId} AND :delivered::int + :opened::int + :clicked::int > 0
     AND ${times} > 0
   RETURNING c.id, c.parent_id`;

/** A recipient's state as a statement writes it (`null`: not happened). */
export interface ReceiptState {
  deliveredAt: Date | null;
  readAt: Date | null;
  openedAt: Date | null;
  clickedAt: Date | null;
  failedAt: Date | null;
  error: string | null;
}

/** How a receipt moves its campaign's counters (0 or 1 each). */
export interface CounterMoves {
  delivered: number;
  opened: number;
  clicked: number;
}

/** What a receipt writes: the state it leaves, its events (`jsonRows` of `{ type, counted, data }`) and how it moves the counters. */
type ReceiptWrite = { orgId: string; logId: string; at: Date; events: string } & ReceiptState & CounterMoves;

/**
 * The first receipt of some recipients of one log (`:positions`), in one statement: a row for each
 * with what the receipt sets, their events, and their campaign counted once for each (and announced
 * to the API processes, `delivery/sql/progress.ts`). A recipient
 * that has a row already is left as it is (`inserted` lacks it) and its row is returned as the
 * statement saw it (`existing`, `ExistingReceipt` rows; none for a row another transaction was
 * still writing), for the caller to change with `updateReceipt`; a position the log does not have
 * is not `known`, nor any of a log sent at or after `:sentBefore` when it is given.
 */
export const firstReceipts = statement<
  ReceiptWrite & { positions: number[]; sentBefore: Date | null },
  { known: number[]; inserted: number[]; existing: ExistingReceipt[] | null; announced: number } & Woken
>(
  'herald_receipts_first',
  `WITH ${WEBHOOK_ENDPOINTS},
        log AS (SELECT m.id, ${CAMPAIGN_OF_LOG} AS campaign_id, m.recipients FROM message_logs m
               WHERE m.organization_id = :orgId AND m.id = :logId AND m.created_at < coalesce(:sentBefore::timestamptz, 'infinity')),
        pos AS (SELECT p.position, ${recipientAt('p.position', 'log')} AS recipient
                FROM log, unnest(:positions::int[]) AS p(position)
                WHERE p.position BETWEEN 1 AND json_array_length(log.recipients)),
        ins AS (
          INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, delivered_at, read_at, opened_at, clicked_at, failed_at, delivery_error)
          SELECT :orgId, log.id, pos.position, log.campaign_id, :deliveredAt::timestamptz, :readAt::timestamptz, :openedAt::timestamptz, :clickedAt::timestamptz,
                 :failedAt::timestamptz, :error::text
          FROM log, pos
          ON CONFLICT (organization_id, log_id, position) DO NOTHING
          RETURNING position),
        ev AS (${insertEvents('log.id', 'ins.position', 'log.campaign_id', 'pos.recipient', ['log', 'ins JOIN pos ON pos.position = ins.position'])}),
        counted AS (${countInCampaign('log.campaign_id', 'log, (SELECT count(*)::int AS n FROM ins) inserted', 'inserted.n')}),
        ${announceCounted()},
        -- Rows there before this statement (its snapshot): the state their next change starts from.
        existing AS (SELECT pos.position, pos.recipient, r.campaign_id AS "campaignId", r.delivered_at AS "deliveredAt", r.read_at AS "readAt",
                            r.opened_at AS "openedAt", r.clicked_at AS "clickedAt", r.failed_at AS "failedAt", r.delivery_error AS error
                     FROM pos JOIN recipient_receipts r ON r.organization_id = :orgId AND r.log_id = :logId AND r.position = pos.position),
        ${OUTBOX}
   SELECT coalesce((SELECT array_agg(position::int) FROM pos), '{}') AS known, coalesce((SELECT array_agg(position::int) FROM ins), '{}') AS inserted,
          (SELECT json_agg(existing) FROM existing) AS existing, ${ANNOUNCED}, ${WOKEN}`,
);

/** A recipient's stored receipts, as the message log shows them. */
export interface ReceiptRow {
  log_id: string;
  position: number;
  delivered_at: Date | null;
  read_at: Date | null;
  opened_at: Date | null;
  clicked_at: Date | null;
  delivery_error: string | null;
}

/** A recipient's row as `firstReceipts` read it (JSON: its times are ISO strings). */
export type ExistingReceipt = { position: number; campaignId: string | null; recipient: string } & { [K in keyof ReceiptState]: string | null };

/** A recipient's row, locked until the transaction ends: its state, campaign and address. */
export const lockReceipt = statement<{ orgId: string; logId: string; position: number }, ReceiptState & { campaignId: string | null; recipient: string }>(
  'herald_receipts_lock',
  `SELECT r.campaign_id AS "campaignId", ${recipientAt(':position')} AS recipient, r.delivered_at AS "deliveredAt", r.read_at AS "readAt",
          r.opened_at AS "openedAt", r.clicked_at AS "clickedAt", r.failed_at AS "failedAt", r.delivery_error AS error
   FROM recipient_receipts r
   JOIN message_logs m ON m.organization_id = :orgId AND m.id = r.log_id
   WHERE r.organization_id = :orgId AND r.log_id = :logId AND r.position = :position
   FOR UPDATE OF r`,
);

/** The state a recipient's row was read in (`updateReceipt` changes it only from that state). */
type WasState = { [K in keyof ReceiptState as `was${Capitalize<K>}`]: ReceiptState[K] };

/**
 * A recipient's new state, its events and its campaign's counters, in one statement: under the
 * row's lock (`:locked`), or when its row is still in the state it was read in (`was…`); `n` is 0,
 * and nothing is written, when another receipt changed it since (the caller then takes `lockReceipt`).
 * A campaign it counts is announced, as `firstReceipts` announces it.
 */
export const updateReceipt = statement<
  ReceiptWrite & WasState & { locked: boolean; position: number; campaignId: string | null; recipient: string },
  { n: number; announced: number } & Woken
>(
  'herald_receipts_update',
  `WITH ${WEBHOOK_ENDPOINTS},
        upd AS (
          UPDATE recipient_receipts r
          SET delivered_at = :deliveredAt::timestamptz, read_at = :readAt::timestamptz, opened_at = :openedAt::timestamptz,
              clicked_at = :clickedAt::timestamptz, failed_at = :failedAt::timestamptz, delivery_error = :error::text,
              updated_at = date_trunc('milliseconds', now())
          WHERE r.organization_id = :orgId AND r.log_id = :logId AND r.position = :position
            AND (:locked::boolean OR r.delivered_at IS NOT DISTINCT FROM :wasDeliveredAt::timestamptz AND r.read_at IS NOT DISTINCT FROM :wasReadAt::timestamptz
            AND r.opened_at IS NOT DISTINCT FROM :wasOpenedAt::timestamptz AND r.clicked_at IS NOT DISTINCT FROM :wasClickedAt::timestamptz
            AND r.failed_at IS NOT DISTINCT FROM :wasFailedAt::timestamptz AND r.delivery_error IS NOT DISTINCT FROM :wasError::text)
          RETURNING r.log_id),
        ev AS (${insertEvents(':logId::uuid', ':position', ':campaignId::uuid', ':recipient::text', ['upd'])}),
        counted AS (${countInCampaign(':campaignId::uuid', 'upd')}),
        ${announceCounted()},
        ${OUTBOX}
   SELECT (SELECT count(*)::int FROM upd) AS n, ${ANNOUNCED}, ${WOKEN}`,
);

/** An event that changes nothing (a scanner's open or click): recorded, not counted; none for an unknown log or position. */
export const uncountedEvent = statement<{ orgId: string; logId: string; position: number; at: Date; events: string }, { known: number }>(
  'herald_receipts_uncounted',
  `WITH log AS (${LOG}),
        ev AS (${insertEvents('log.id', ':position', 'log.campaign_id', 'log.recipient', ['log'])})
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
export const receiptsOfLogs = statement<{ orgId: string; logIds: string[] }, ReceiptRow>(
  'herald_receipts_of_logs',
  `SELECT log_id, position, delivered_at, read_at, opened_at, clicked_at, delivery_error
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
