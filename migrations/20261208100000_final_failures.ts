import type { Knex } from 'knex';

/**
 * `message_logs.final_failures`: the positions (1 is the first) of a log's recipients that failed
 * for good (a final answer about the recipient, a message that cannot be sent as it is). The other
 * failed recipients are worth another try: a campaign's "resend to the failed" sends to them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_logs ADD COLUMN final_failures int[]');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_logs DROP COLUMN final_failures');
}
