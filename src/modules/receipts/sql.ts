import { statement } from '../../db/statements.js';

/**
 * The statements of receipts and engagement (platform.md): a recipient's state after its send
 * (`recipient_receipts`), its events (`message_events`) and its campaign's counters. Every one is
 * one organization's, filtered by it in every table it reads or writes (on Citus, one shard).
 */

/** SQL: the address at `:position` of the log `m` (its recipients in stored form, see `delivery/log-recipients.ts`). */
const recipientAt = `CASE WHEN json_typeof(m.recipients -> (:position - 1)) = 'string'
                          THEN m.recipients -> (:position - 1) #>> '{}' ELSE m.recipients -> (:position - 1) ->> 'recipient' END`;

/** The log and campaign a recipient belongs to (a test send's recipients count in no campaign); none when the log or position is not one. */
const LOG = `SELECT m.id, CASE WHEN m.test THEN NULL ELSE m.campaign_id END AS campaign_id, ${recipientAt} AS recipient
             FROM message_logs m
             WHERE m.organization_id = :orgId AND m.id = :logId AND :position BETWEEN 1 AND json_array_length(m.recipients)`;

/** `jsonRows` of events: `{ type, counted, data }`, all at `:at`. */
const EVENTS = `json_to_recordset(:events::json) AS e(type text, counted boolean, data jsonb)`;

/** SQL: records the events (`:events`) of the recipient at `:position`, its log, campaign and address given as SQL, from `from` (tables or CTEs) and the events. */
const insertEvents = (logId: string, campaignId: string, recipient: string, from: string[] = []) =>
  `INSERT INTO message_events (organization_id, type, log_id, position, campaign_id, recipient, occurred_at, counted, data)
   SELECT :orgId, e.type, ${logId}, :position, ${campaignId}, ${recipient}, :at::timestamptz, e.counted, e.data
   FROM ${[...from, EVENTS].join(', ')}`;

/** SQL: moves the counters of the campaign `campaignId` (SQL, read from `from` when given) by `:delivered`, `:opened` and `:clicked`. */
const countInCampaign = (campaignId: string, from?: string) =>
  `UPDATE campaigns c SET delivered = c.delivered + :delivered::int, opened = c.opened + :opened::int, clicked = c.clicked + :clicked::int
   ${from ? `FROM ${from} ` : ''}WHERE c.organization_id = :orgId AND c.id = ${campaignId} AND :delivered::int + :opened::int + :clicked::int > 0`;

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

/** What a receipt writes for its recipient: its state, its events (`jsonRows` of `{ type, counted, data }`) and its counters. */
type ReceiptWrite = { orgId: string; logId: string; position: number; at: Date; events: string } & ReceiptState & CounterMoves;

/**
 * A recipient's first receipt, in one statement: its row written with what the receipt sets, its
 * events recorded and its campaign counted. Nothing is written when the recipient has a row already
 * (`inserted` 0: the caller takes `lockReceipt`), or when the log or position is unknown (`known` 0).
 */
export const firstReceipt = statement<ReceiptWrite, { known: number; inserted: number }>(
  'herald_receipts_first',
  `WITH log AS (${LOG}),
        ins AS (
          INSERT INTO recipient_receipts (organization_id, log_id, position, campaign_id, delivered_at, read_at, opened_at, clicked_at, failed_at, delivery_error)
          SELECT :orgId, log.id, :position, log.campaign_id, :deliveredAt::timestamptz, :readAt::timestamptz, :openedAt::timestamptz, :clickedAt::timestamptz,
                 :failedAt::timestamptz, :error::text
          FROM log
          ON CONFLICT (organization_id, log_id, position) DO NOTHING
          RETURNING campaign_id),
        ev AS (${insertEvents('log.id', 'log.campaign_id', 'log.recipient', ['log', 'ins'])}),
        counted AS (${countInCampaign('ins.campaign_id', 'ins')})
   SELECT (SELECT count(*) FROM log)::int AS known, (SELECT count(*) FROM ins)::int AS inserted`,
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

/** A recipient's row, locked until the transaction ends: its state, campaign and address. */
export const lockReceipt = statement<{ orgId: string; logId: string; position: number }, ReceiptState & { campaignId: string | null; recipient: string }>(
  'herald_receipts_lock',
  `SELECT r.campaign_id AS "campaignId", ${recipientAt} AS recipient, r.delivered_at AS "deliveredAt", r.read_at AS "readAt",
          r.opened_at AS "openedAt", r.clicked_at AS "clickedAt", r.failed_at AS "failedAt", r.delivery_error AS error
   FROM recipient_receipts r
   JOIN message_logs m ON m.organization_id = :orgId AND m.id = r.log_id
   WHERE r.organization_id = :orgId AND r.log_id = :logId AND r.position = :position
   FOR UPDATE OF r`,
);

/** A locked recipient's new state, its events and its campaign's counters, in one statement. */
export const updateReceipt = statement<ReceiptWrite & { campaignId: string | null; recipient: string }>(
  'herald_receipts_update',
  `WITH upd AS (
          UPDATE recipient_receipts r
          SET delivered_at = :deliveredAt::timestamptz, read_at = :readAt::timestamptz, opened_at = :openedAt::timestamptz,
              clicked_at = :clickedAt::timestamptz, failed_at = :failedAt::timestamptz, delivery_error = :error::text,
              updated_at = date_trunc('milliseconds', now())
          WHERE r.organization_id = :orgId AND r.log_id = :logId AND r.position = :position
          RETURNING r.log_id),
        ev AS (${insertEvents(':logId::uuid', ':campaignId::uuid', ':recipient::text')}),
        counted AS (${countInCampaign(':campaignId::uuid')})
   SELECT count(*)::int AS n FROM upd`,
);

/** An event that changes nothing (a scanner's open or click): recorded, not counted; none for an unknown log or position. */
export const uncountedEvent = statement<{ orgId: string; logId: string; position: number; at: Date; events: string }, { known: number }>(
  'herald_receipts_uncounted',
  `WITH log AS (${LOG}),
        ev AS (${insertEvents('log.id', 'log.campaign_id', 'log.recipient', ['log'])})
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
