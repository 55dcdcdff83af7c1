import type { Knex } from 'knex';

/**
 * Consent per contact and channel (platform.md, "Consent"): `unsubscribed` holds one entry per
 * channel the contact left, `{ "<channel>": { "at": <ISO time>, "source": <how> } }`; a channel
 * without an entry is subscribed (the default), so re-subscribing removes the entry.
 *
 * Campaigns and send-to-all skip an address when any contact of the organization with that address
 * left the channel. The partial indexes hold only those contacts (few, usually none), keyed like
 * the address indexes the audience is read through: the check is a probe into a tiny index, or a
 * hash of it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE contacts ADD COLUMN unsubscribed jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(unsubscribed) = 'object')`);
  await knex.raw(`CREATE INDEX contacts_org_email_unsubscribed_idx ON contacts (organization_id, lower(email)) WHERE (unsubscribed -> 'email') IS NOT NULL`);
  await knex.raw(`CREATE INDEX contacts_org_sms_unsubscribed_idx ON contacts (organization_id, phone) WHERE (unsubscribed -> 'sms') IS NOT NULL`);
  await knex.raw(`CREATE INDEX contacts_org_whatsapp_unsubscribed_idx ON contacts (organization_id, phone) WHERE (unsubscribed -> 'whatsapp') IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX contacts_org_whatsapp_unsubscribed_idx');
  await knex.raw('DROP INDEX contacts_org_sms_unsubscribed_idx');
  await knex.raw('DROP INDEX contacts_org_email_unsubscribed_idx');
  await knex.raw('ALTER TABLE contacts DROP COLUMN unsubscribed');
}
