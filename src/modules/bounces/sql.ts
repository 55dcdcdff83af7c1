import { statement } from '../../db/statements.js';

/**
 * The statements of bounces: each one organization's, filtered by it in every table it reads or
 * writes (on Citus, one shard).
 */

/** SQL: the address at `:position` of the log `m` (its recipients in stored form, see `delivery/log-recipients.ts`). */
const RECIPIENT_AT = `CASE WHEN json_typeof(m.recipients -> (:position::int - 1)) = 'string'
  THEN m.recipients -> (:position::int - 1) #>> '{}' ELSE m.recipients -> (:position::int - 1) ->> 'recipient' END`;

/**
 * A bounce of one email recipient: kept in `email_bounces` (once per recipient and type), and the
 * address suppressed (`bounce`) when it is permanent, or when it is temporary and the address
 * has bounced temporarily `:softLimit` times since `:since` (this one included). Answers the
 * address (none when the log and position are not an email of the organization), whether the
 * bounce was new, and whether the address was suppressed by it.
 */
export const recordBounce = statement<
  { orgId: string; logId: string; position: number; type: 'hard' | 'soft'; reason: string | null; at: Date; since: Date; softLimit: number },
  { address: string | null; recorded: number; suppressed: number }
>(
  'herald_bounce_record',
  `WITH log AS (
          SELECT lower(${RECIPIENT_AT}) AS address FROM message_logs m
          WHERE m.organization_id = :orgId AND m.id = :logId AND m.channel = 'email' AND :position BETWEEN 1 AND json_array_length(m.recipients)),
        ins AS (
          INSERT INTO email_bounces (organization_id, address, bounce_type, log_id, position, reason, occurred_at)
          SELECT :orgId, log.address, :type::text, :logId, :position::int, :reason::text, :at::timestamptz FROM log
          ON CONFLICT (organization_id, log_id, position, bounce_type) DO NOTHING
          RETURNING address),
        soft AS (
          SELECT count(*) AS n FROM email_bounces b
          WHERE b.organization_id = :orgId AND b.address = (SELECT address FROM log) AND b.bounce_type = 'soft' AND b.occurred_at > :since::timestamptz),
        sup AS (
          INSERT INTO suppressions (organization_id, channel, address, reason, bounce_type, detail)
          SELECT :orgId, 'email', log.address, 'bounce', :type::text, left(:reason::text, 500) FROM log
          WHERE :type::text = 'hard' OR (SELECT n FROM soft) + (SELECT count(*) FROM ins) >= :softLimit::int
          ON CONFLICT (organization_id, channel, address) DO NOTHING
          RETURNING id)
   SELECT (SELECT address FROM log) AS address, (SELECT count(*) FROM ins)::int AS recorded, (SELECT count(*) FROM sup)::int AS suppressed`,
);

/** The email address at a log's position; none when the log and position are not an email of the organization. */
export const emailRecipient = statement<{ orgId: string; logId: string; position: number }, { address: string }>(
  'herald_bounce_email_recipient',
  `SELECT lower(${RECIPIENT_AT}) AS address FROM message_logs m
   WHERE m.organization_id = :orgId AND m.id = :logId AND m.channel = 'email' AND :position BETWEEN 1 AND json_array_length(m.recipients)`,
);

/** A complaint's address suppressed (`complaint`), unless it is already. */
export const suppressComplaint = statement<{ orgId: string; address: string; detail: string }, { id: string }>(
  'herald_bounce_suppress_complaint',
  `INSERT INTO suppressions (organization_id, channel, address, reason, detail)
   VALUES (:orgId, 'email', :address, 'complaint', left(:detail::text, 500))
   ON CONFLICT (organization_id, channel, address) DO NOTHING
   RETURNING id`,
);
