import { z } from 'zod';
import { toE164, type PhoneDefaults } from './phone.js';

/** What an address is for: an email channel, or a phone one (SMS and WhatsApp). */
export type AddressKind = 'email' | 'phone';

const EMAIL = z.email();
const DOTLESS_DOMAIN = /@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

export interface EmailRules {
  /**
   * Also accept a domain without a dot (`root@localhost`, `ops@mailhub`): mail only a private relay
   * can deliver, so allowed where tenants may use one (`BLOCK_PRIVATE_HOSTS` off).
   */
  dotlessDomains?: boolean;
}

/** Whether `text` is an email address Herald sends to (zod's rules, which want a dot in the domain). */
export function isEmailAddress(text: string, rules: EmailRules = {}): boolean {
  if (EMAIL.safeParse(text).success) return true;
  // The same address under a top-level domain tells whether its local part is well formed.
  return rules.dotlessDomains === true && DOTLESS_DOMAIN.test(text) && EMAIL.safeParse(`${text}.invalid`).success;
}

/**
 * An address as Herald sends to it, stores it and finds it: a lower-case email address, or a phone
 * number in E.164 (a number without a country prefix takes its region from `defaults`). Null when
 * the text is not such an address. Without `kind`, an `@` makes it an email address.
 */
export function normaliseAddress(raw: string, defaults: PhoneDefaults & EmailRules & { kind?: AddressKind } = {}): string | null {
  const text = raw.trim();
  const kind = defaults.kind ?? (text.includes('@') ? 'email' : 'phone');
  if (kind === 'email') return isEmailAddress(text, defaults) ? text.toLowerCase() : null;
  return toE164(text, defaults);
}
