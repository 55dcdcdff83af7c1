import { z } from 'zod';
import { toE164, type PhoneDefaults } from './phone.js';

/** What an address is for: an email channel, or a phone one (SMS and WhatsApp). */
export type AddressKind = 'email' | 'phone';

const EMAIL = z.email();

/**
 * An address as Herald sends to it, stores it and finds it: a lower-case email address, or a phone
 * number in E.164 (a number without a country prefix takes its region from `defaults`). Null when
 * the text is not such an address. Without `kind`, an `@` makes it an email address.
 */
export function normaliseAddress(raw: string, defaults: PhoneDefaults & { kind?: AddressKind } = {}): string | null {
  const text = raw.trim();
  const kind = defaults.kind ?? (text.includes('@') ? 'email' : 'phone');
  if (kind === 'email') return EMAIL.safeParse(text).success ? text.toLowerCase() : null;
  return toE164(text, defaults);
}
