import type { Knex } from 'knex';

/**
 * Sending hours (`src/lib/sending-hours.ts`):
 *
 * - `organizations.sending_hours`, `campaigns.sending_hours`: a daily window, `HH:MM-HH:MM`, in each
 *   recipient's time zone, outside which a campaign's messages wait (null: any time; a campaign's
 *   null: its organization's).
 * - `campaigns.local_send_at`: a date and time on the wall clock (no zone) at which each recipient
 *   gets the campaign in their own zone.
 * - `campaign_batches.due_at`: when a batch may be sent (null: at once); a batch's recipients that
 *   must wait are moved into batches due when they may go.
 */
const WINDOW = `'^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$'`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations ADD COLUMN sending_hours text CHECK (sending_hours ~ ${WINDOW})`);
  await knex.raw(`ALTER TABLE campaigns ADD COLUMN sending_hours text CHECK (sending_hours ~ ${WINDOW}), ADD COLUMN local_send_at timestamp`);
  await knex.raw('ALTER TABLE campaign_batches ADD COLUMN due_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE campaign_batches DROP COLUMN due_at');
  await knex.raw('ALTER TABLE campaigns DROP COLUMN sending_hours, DROP COLUMN local_send_at');
  await knex.raw('ALTER TABLE organizations DROP COLUMN sending_hours');
}
