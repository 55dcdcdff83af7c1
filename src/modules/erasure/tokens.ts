import { createHmac, randomBytes } from 'node:crypto';
import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * The token that stands for an erased address: `erased:` and the HMAC-SHA256 of the address (as a
 * send stores it: a lower-case email, a phone number in E.164) under the organization's erasure
 * key, in base64url. The same address always gives the same token, so counts keep adding up and an
 * erased address is still recognised (as suppressed); without the key, and without guessing the
 * address, it says nothing of it. `tokenSql` is the same computation in Postgres (pgcrypto), for a
 * check made set-based over many addresses.
 */

export const TOKEN_PREFIX = 'erased:';

export const newErasureKey = () => randomBytes(32);

export function erasedToken(key: Buffer, address: string): string {
  return TOKEN_PREFIX + createHmac('sha256', key).update(address, 'utf8').digest('base64url');
}

/** SQL: the token of the address expression `address` under the key expression `key` (null when the key is). */
export const tokenSql = (address: string, key: string) =>
  `('${TOKEN_PREFIX}' || rtrim(translate(encode(hmac(convert_to(${address}, 'UTF8'), ${key}, 'sha256'), 'base64'), '+/', '-_'), '='))`;

/** SQL: the organization `orgParam`'s erasure key (a reference table: on Citus, joined on any shard). */
export const erasureKeySql = (orgParam: string) => `(SELECT o.erasure_key FROM organizations o WHERE o.id = ${orgParam})`;

/**
 * The forms of an address that may stand in stored text: the address, and for a phone number its
 * national form (`0712345678`) and its digits without the plus sign.
 */
export function writtenForms(address: string): string[] {
  if (address.includes('@')) return [address];
  const parsed = parsePhoneNumberFromString(address);
  const forms = new Set([address, address.slice(1)]);
  if (parsed) forms.add(`0${parsed.nationalNumber}`);
  return [...forms];
}

/**
 * A Postgres regular expression (ARE) that finds any written form of the address in a text, not as
 * part of a longer address or number, in any case.
 */
export function addressPattern(address: string): string {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
  const forms = writtenForms(address).sort((a, b) => b.length - a.length).map(escape);
  return address.includes('@')
    ? `(?<![A-Za-z0-9._%+-])(${forms.join('|')})(?![A-Za-z0-9-])(?!\\.[A-Za-z0-9])`
    : `(?<![0-9+])(${forms.join('|')})(?![0-9])`;
}
