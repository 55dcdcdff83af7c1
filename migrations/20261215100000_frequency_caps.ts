import type { Knex } from 'knex';

/**
 * Frequency caps (`src/modules/campaigns/caps.ts`):
 *
 * - `organizations.frequency_caps`: per channel, at most `messages` campaign messages to one address
 *   in `days` days (`{ "sms": { "messages": 3, "days": 7 } }`; a channel left out is not capped).
 * - `campaigns.exempt_from_caps`: a campaign an admin marked as going to everyone it names whatever
 *   they had (a service notice); it does not count against the caps either.
 * - `campaigns.capped`: addresses a campaign left out at launch because they had reached a cap.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations ADD COLUMN frequency_caps jsonb NOT NULL DEFAULT '{}'`);
  await knex.raw('ALTER TABLE campaigns ADD COLUMN exempt_from_caps boolean NOT NULL DEFAULT false, ADD COLUMN capped integer NOT NULL DEFAULT 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE campaigns DROP COLUMN exempt_from_caps, DROP COLUMN capped');
  await knex.raw('ALTER TABLE organizations DROP COLUMN frequency_caps');
}
