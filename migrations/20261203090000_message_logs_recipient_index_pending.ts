import type { Knex } from 'knex';

/**
 * The recipients index of `GET /message-logs?recipient=` (20261130100000) was written entry by entry
 * in the settle of each campaign chunk (fastupdate off): about 100 ms of a 100,000-recipient
 * campaign. Its new entries now go to the index's pending list, appended in order, and are merged
 * into the index by vacuum, off the send path. A search reads the pending list too, so it is kept
 * short: the list may grow to 64 MB before an insert must merge it (a campaign's settles never do
 * with the default 4 MB), and the logs table is vacuumed after every 5,000 logs written (at most
 * 500,000 recipients, about 20 MB of entries) whatever its size, where the default waits for a fifth
 * of the table. Searched with a 100,000-recipient campaign's logs pending, the p99 stays under 30 ms
 * (bench/log-search). Both are storage parameters, which Citus passes on to the shards.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER INDEX message_logs_org_recipients_idx SET (fastupdate = on, gin_pending_list_limit = 65536)');
  await knex.raw('ALTER TABLE message_logs SET (autovacuum_vacuum_insert_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_logs RESET (autovacuum_vacuum_insert_threshold, autovacuum_vacuum_insert_scale_factor)');
  await knex.raw('ALTER INDEX message_logs_org_recipients_idx SET (fastupdate = off)');
  await knex.raw('ALTER INDEX message_logs_org_recipients_idx RESET (gin_pending_list_limit)');
}
