import { timingSafeEqual } from 'node:crypto';
import { macOf, uuidBytes, uuidOf } from '../../lib/signed-tokens.js';

/**
 * VERP envelope senders: every email leaves with `bounces+<token>@<BOUNCE_DOMAIN>` as its return
 * path, so the bounce a mail server sends back, and a feedback report sent to it, names the one
 * recipient it is about. The token holds the organization (16 bytes) and the recipient's client id
 * (16 bytes: its log's id with the position in the last four, `LogTarget.clientId`), followed by
 * 10 bytes of their HMAC under a key of its own, in base64url: 56 characters, so the local part is
 * the 64 that RFC 5321 allows at most. Mail servers keep a local part's case (RFC 5321 2.4), which
 * base64url needs.
 */

const PURPOSE = 'bounce-addresses';
const PREFIX = 'bounces+';
const MAC_BYTES = 10;
const BODY_BYTES = 32;

/** Who a bounce address names: the organization, and the recipient as its client id. */
export interface BounceRef {
  orgId: string;
  clientId: string;
}

const macFor = (secret: string, body: Buffer) => macOf(secret, PURPOSE, body).subarray(0, MAC_BYTES);

/** The envelope sender of one recipient's email. */
export function bounceAddress(secret: string, domain: string, ref: BounceRef): string {
  const body = Buffer.concat([uuidBytes(ref.orgId), uuidBytes(ref.clientId)]);
  return `${PREFIX}${Buffer.concat([body, macFor(secret, body)]).toString('base64url')}@${domain}`;
}

/**
 * What a bounce address names, or null when it is not one Herald made for `domain` (another
 * domain or local part, a token altered, truncated or forged). The domain is read in any case.
 */
export function readBounceAddress(secret: string, domain: string, address: string): BounceRef | null {
  const at = address.lastIndexOf('@');
  if (at < 0 || address.slice(at + 1).toLowerCase() !== domain) return null;
  const local = address.slice(0, at);
  if (!local.toLowerCase().startsWith(PREFIX)) return null;
  const token = local.slice(PREFIX.length);
  if (token.length !== 56 || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length !== BODY_BYTES + MAC_BYTES) return null;
  const body = bytes.subarray(0, BODY_BYTES);
  if (!timingSafeEqual(bytes.subarray(BODY_BYTES), macFor(secret, body))) return null;
  return { orgId: uuidOf(body.subarray(0, 16)), clientId: uuidOf(body.subarray(16)) };
}
