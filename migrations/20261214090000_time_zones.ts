import type { Knex } from 'knex';
import { countryTimeZone } from '../src/lib/time-zones.js';

/**
 * Time zones (`src/lib/time-zones.ts`):
 *
 * - `organizations.time_zone`: the organization's zone, an IANA name: its country's when the country
 *   has one, else UTC, until an admin sets another. A contact without a zone of its own is in it.
 * - `contacts.time_zone`: the contact's zone, set through the API or an import (`time_zone_set`),
 *   or the one zone of its phone number's country, or null (the organization's).
 * - the same two on the staged rows of an import.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'`);
  const organizations = (await knex('organizations').select('id', 'country')) as { id: string; country: string }[];
  const byZone = new Map<string, string[]>();
  for (const o of organizations) {
    const zone = countryTimeZone(o.country);
    if (zone) byZone.set(zone, [...(byZone.get(zone) ?? []), o.id]);
  }
  for (const [zone, ids] of byZone) await knex('organizations').whereIn('id', ids).update({ time_zone: zone });
  await knex.raw('ALTER TABLE contacts ADD COLUMN time_zone text, ADD COLUMN time_zone_set boolean NOT NULL DEFAULT false');
  await knex.raw('ALTER TABLE contact_import_rows ADD COLUMN time_zone text, ADD COLUMN time_zone_set boolean NOT NULL DEFAULT false');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE contact_import_rows DROP COLUMN time_zone, DROP COLUMN time_zone_set');
  await knex.raw('ALTER TABLE contacts DROP COLUMN time_zone, DROP COLUMN time_zone_set');
  await knex.raw('ALTER TABLE organizations DROP COLUMN time_zone');
}
