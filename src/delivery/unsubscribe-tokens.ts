import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Channel } from './types.js';
import { CHANNELS } from './types.js';

/**
 * Unsubscribe links (platform.md, "Consent"): `<PUBLIC_URL>/u/<token>`, where the token names the
 * organization, the channel and the recipient (a contact, or the address of a recipient that is
 * not one), and is signed with HMAC-SHA256 under a key derived from the server secret. It cannot be
 * guessed or altered: any change to its bytes fails the signature.
 *
 * Layout (base64url): version byte, organization (16 bytes), channel (1 byte), kind (1 byte: 1 a
 * contact, 2 an address), then the contact id (16 bytes) or the address (UTF-8), then the first 16
 * bytes of the HMAC of everything before it.
 */

export type UnsubscribeRef = { orgId: string; channel: Channel } & ({ contactId: string; address?: undefined } | { contactId?: undefined; address: string });

const VERSION = 1;
const MAC_BYTES = 16;
const CONTACT = 1;
const ADDRESS = 2;
const MAX_TOKEN_LENGTH = 600;

const keys = new Map<string, Buffer>();

/** The key links are signed with, derived once per server secret (never the secret itself). */
function keyFor(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, 'herald', 'unsubscribe-links', 32));
    keys.set(secret, key);
  }
  return key;
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (bytes: Buffer) => {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

const mac = (secret: string, body: Buffer) => createHmac('sha256', keyFor(secret)).update(body).digest().subarray(0, MAC_BYTES);

export function unsubscribeToken(secret: string, ref: UnsubscribeRef): string {
  const head = Buffer.from([VERSION]);
  const who = ref.contactId !== undefined ? Buffer.concat([Buffer.from([CONTACT]), uuidBytes(ref.contactId)]) : Buffer.concat([Buffer.from([ADDRESS]), Buffer.from(ref.address, 'utf8')]);
  const body = Buffer.concat([head, uuidBytes(ref.orgId), Buffer.from([CHANNELS.indexOf(ref.channel)]), who]);
  return Buffer.concat([body, mac(secret, body)]).toString('base64url');
}

/** The link itself, under the configured public URL. */
export const unsubscribeUrl = (publicUrl: string, secret: string, ref: UnsubscribeRef) => `${publicUrl}/u/${unsubscribeToken(secret, ref)}`;

/** What a token names, or null when it is not one Herald signed (forged, altered, truncated). */
export function readUnsubscribeToken(secret: string, token: string): UnsubscribeRef | null {
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < 1 + 16 + 1 + 1 + 1 + MAC_BYTES) return null;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  if (!timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), mac(secret, body))) return null;
  if (body[0] !== VERSION) return null;
  const orgId = uuidOf(body.subarray(1, 17));
  const channel = CHANNELS[body[17]!];
  if (!channel) return null;
  const rest = body.subarray(19);
  if (body[18] === CONTACT && rest.length === 16) return { orgId, channel, contactId: uuidOf(rest) };
  if (body[18] === ADDRESS && rest.length > 0) return { orgId, channel, address: rest.toString('utf8') };
  return null;
}

