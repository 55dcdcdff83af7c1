import { getCountries, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

const COUNTRIES = new Set<string>(getCountries());
const names = new Intl.DisplayNames(['en'], { type: 'region' });
const BY_NAME = new Map(getCountries().map((c) => [names.of(c)!.toLowerCase(), c]));

/** `KE`, `ke` or `Kenya` -> `KE`; anything else -> undefined (no default region). */
export function regionOf(country: string | null | undefined): CountryCode | undefined {
  if (!country) return undefined;
  const trimmed = country.trim();
  if (COUNTRIES.has(trimmed.toUpperCase())) return trimmed.toUpperCase() as CountryCode;
  return BY_NAME.get(trimmed.toLowerCase()) as CountryCode | undefined;
}

export interface PhoneDefaults {
  /** A contact's own `countryCode`: a calling code (`+254`) or a region (`KE`). */
  countryCode?: string | null;
  /** The organization's country, used when the contact gives none. */
  orgCountry?: string | null;
}

/**
 * Normalises a phone number to E.164. A number without a country prefix takes its region from the
 * contact's `countryCode`, else the organization's country; international digits without the plus
 * sign are accepted too. Returns null when the number is not valid.
 */
export function toE164(raw: string, defaults: PhoneDefaults = {}): string | null {
  const input = raw.trim();
  if (!/^[+\d(][\d\s().-]{2,30}$/.test(input)) return null;
  const code = defaults.countryCode?.trim();
  const callingCode = code && /^\+\d{1,4}$/.test(code) ? code.slice(1) : undefined;
  const region = callingCode ? undefined : (regionOf(code) ?? regionOf(defaults.orgCountry));
  const attempts = [
    () => parsePhoneNumberFromString(input, callingCode ? { defaultCallingCode: callingCode } : { defaultCountry: region }),
    () => (input.startsWith('+') ? undefined : parsePhoneNumberFromString(`+${input.replace(/\D/g, '')}`)),
  ];
  for (const attempt of attempts) {
    const parsed = attempt();
    if (parsed?.isValid()) return parsed.number;
  }
  return null;
}
