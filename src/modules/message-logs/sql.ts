import { statement } from '../../db/statements.js';

/**
 * The named statements of the message logs. Each is one organization's, filtered by its
 * `organization_id` (on Citus, one shard).
 */

/** A channel's recipients since a moment, by status (bigint sums arrive as strings). */
export interface ChannelCountsRow {
  channel: string;
  success: string;
  failed: string;
  pending: string;
}

/**
 * The recipients of the organization's logs created at or after `:since`, by channel and status:
 * a range of `message_logs_org_created_idx` (organization, created_at), summing the counts every
 * log keeps, so the recipients' JSON is never read.
 */
export const countsByChannel = statement<{ orgId: string; since: Date }, ChannelCountsRow>(
  'herald_message_logs_counts_by_channel',
  `SELECT channel, sum(success_count)::bigint AS success, sum(failed_count)::bigint AS failed, sum(pending_count)::bigint AS pending
   FROM message_logs
   WHERE organization_id = :orgId AND created_at >= :since::timestamptz
   GROUP BY channel`,
);
