import ct from 'countries-and-timezones';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { IANAZone } from 'luxon';
import { z } from 'zod';
import { regionOf } from './phone.js';

/**
 * Time zones, the one home of what Herald takes for one: an IANA name (`Africa/Nairobi`, `UTC`),
 * never an offset (`+03:00`, which Postgres reads with its sign the other way), and the zone a phone
 * number or a country implies when it has exactly one.
 */

export const NOT_A_ZONE = 'must be an IANA time zone (Africa/Nairobi, UTC)';

/**
 * Whether `name` is an IANA time zone that Herald takes: an area and a location (`Africa/Nairobi`,
 * `Etc/GMT+3`) or `UTC`; not the legacy one-word names and abbreviations the database also knows
 * (`EAT`, `Japan`), which name no place.
 */
export const isTimeZone = (name: string): boolean =>
  name.length <= 64 && (name === 'UTC' || /^[A-Za-z][\w+\-]*(\/[\w+\-]+)+$/.test(name)) && IANAZone.isValidZone(name);

/** An IANA time zone, as input takes it. */
export const timeZone = () => z.string().trim().refine(isTimeZone, { error: NOT_A_ZONE });

/** The one zone of a country (an ISO code or an English name), or null when it has several or none known. */
export function countryTimeZone(country: string | null | undefined): string | null {
  const region = regionOf(country);
  const zones = region ? ct.getCountry(region)?.timezones : undefined;
  return zones?.length === 1 ? zones[0]! : null;
}

/**
 * The one zone of the country of a phone number in E.164, or null when its country has several.
 * A number's country is told by its first digits (a calling code and at most a few more: `+1` and an
 * area code, `+44 1481` Guernsey), so the answer is kept per 8-character prefix: an import of a
 * million Kenyan numbers parses a handful.
 */
export function phoneTimeZone(e164: string | null | undefined): string | null {
  if (!e164) return null;
  const prefix = e164.slice(0, 8);
  const known = BY_PREFIX.get(prefix);
  if (known !== undefined) return known;
  const country = parsePhoneNumberFromString(e164)?.country;
  const zone = country ? countryTimeZone(country) : null;
  if (BY_PREFIX.size >= 50_000) BY_PREFIX.clear();
  BY_PREFIX.set(prefix, zone);
  return zone;
}

const BY_PREFIX = new Map<string, string | null>();
