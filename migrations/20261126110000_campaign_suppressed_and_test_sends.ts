import type { Knex } from 'knex';

/**
 * `campaigns.suppressed`: the addresses a campaign's launch left out because a contact with them
 * unsubscribed from the channel (`analytics.suppressed`). `message_logs.test`: the logs of a
 * campaign's test sends (`POST /campaigns/:id/test`), never counted in its analytics.
 *
 * Statistics on the channels' consent entries, so the planner knows how few contacts left a channel
 * (without them it takes `(unsubscribed -> 'email') IS NOT NULL` to hold for most contacts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE campaigns ADD COLUMN suppressed integer NOT NULL DEFAULT 0');
  await knex.raw('ALTER TABLE message_logs ADD COLUMN test boolean NOT NULL DEFAULT false');
  await knex.raw(`CREATE STATISTICS contacts_unsubscribed_stats ON (unsubscribed -> 'email'), (unsubscribed -> 'sms'), (unsubscribed -> 'whatsapp') FROM contacts`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP STATISTICS contacts_unsubscribed_stats');
  await knex.raw('ALTER TABLE message_logs DROP COLUMN test');
  await knex.raw('ALTER TABLE campaigns DROP COLUMN suppressed');
}
