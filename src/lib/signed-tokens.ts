import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Signed tokens in public URLs (unsubscribe links, tracking links, the SMS report URL): the one home
 * of how they are keyed and sealed. Each use has its own key, derived once per server secret and
 * purpose with HKDF (never the secret itself), so a token of one use is never valid for another. A
 * token is its body followed by the first 16 bytes of the body's HMAC-SHA256, in base64url: it can
 * be neither guessed nor altered, since any change to its bytes fails the MAC.
 */

const MAC_BYTES = 16;
const keys = new Map<string, Buffer>();

/** The key of one purpose under the server secret. */
function keyFor(secret: string, purpose: string): Buffer {
  const id = `${purpose}\0${secret}`;
  let key = keys.get(id);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, 'herald', purpose, 32));
    keys.set(id, key);
  }
  return key;
}

/** The HMAC-SHA256 of `data` under the purpose's key. */
export const macOf = (secret: string, purpose: string, data: Buffer | string): Buffer => createHmac('sha256', keyFor(secret, purpose)).update(data).digest();

/** `body` sealed for `purpose`: the token. */
export function seal(secret: string, purpose: string, body: Buffer): string {
  return Buffer.concat([body, macOf(secret, purpose, body).subarray(0, MAC_BYTES)]).toString('base64url');
}

/**
 * The body of a token sealed for `purpose`, or null when it is not one (forged, altered, truncated,
 * longer than `maxLength` characters, a body shorter than `minBody` bytes, not base64url).
 */
export function unseal(secret: string, purpose: string, token: string, { maxLength, minBody }: { maxLength: number; minBody: number }): Buffer | null {
  if (token.length > maxLength || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < minBody + MAC_BYTES) return null;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  return timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), macOf(secret, purpose, body).subarray(0, MAC_BYTES)) ? body : null;
}

/** Whether two strings are equal, in time that does not depend on where they differ. */
export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A UUID as its 16 bytes, and back. */
export const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
export const uuidOf = (bytes: Buffer) => {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
