import { seal, unseal, uuidBytes, uuidOf } from '../lib/signed-tokens.js';

/**
 * Open and click tracking links (platform.md, "Receipts and engagement"): `<PUBLIC_URL>/t/o/<token>`
 * (the open pixel) and `<PUBLIC_URL>/t/c/<token>` (a link, answered with a redirect to the URL it
 * names). A token names the organization, the message log, the recipient's position in it and, for
 * a click, the link's URL; it is sealed with the tracking links' own key (`lib/signed-tokens.ts`),
 * so it can be neither guessed nor altered: a redirect only ever goes where Herald itself wrote the
 * link to go.
 *
 * Layout (base64url): version byte, kind (1 byte: 1 an open, 2 a click), organization (16 bytes),
 * log (16 bytes), position (2 bytes, big-endian), then for a click the URL (UTF-8), then the first
 * 16 bytes of the HMAC of everything before it.
 */

export interface TrackingRef {
  orgId: string;
  logId: string;
  /** The recipient's position in its log, 1 the first. */
  position: number;
}

export type TrackingToken = TrackingRef & ({ kind: 'open'; url?: undefined } | { kind: 'click'; url: string });

const VERSION = 1;
const OPEN = 1;
const CLICK = 2;
const PURPOSE = 'tracking-links';
const MAC_BYTES = 16;
const HEAD_BYTES = 1 + 1 + 16 + 16 + 2;
/** The longest URL a click token carries; a longer link is left as it is (untracked). */
export const MAX_TRACKED_URL_BYTES = 2048;
const MAX_TOKEN_LENGTH = Math.ceil(((HEAD_BYTES + MAX_TRACKED_URL_BYTES + MAC_BYTES) * 4) / 3);

/** A signed token for `ref`'s open (no `url`) or for its click on `url`; null when the URL is too long to carry. */
export function trackingToken(secret: string, ref: TrackingRef, url?: string): string | null {
  const urlBytes = url === undefined ? Buffer.alloc(0) : Buffer.from(url, 'utf8');
  if (urlBytes.length > MAX_TRACKED_URL_BYTES || (url !== undefined && !urlBytes.length)) return null;
  if (!Number.isInteger(ref.position) || ref.position < 1 || ref.position > 0xffff) throw new RangeError(`position ${ref.position} out of range`);
  const head = Buffer.alloc(HEAD_BYTES);
  head[0] = VERSION;
  head[1] = url === undefined ? OPEN : CLICK;
  uuidBytes(ref.orgId).copy(head, 2);
  uuidBytes(ref.logId).copy(head, 18);
  head.writeUInt16BE(ref.position, 34);
  const body = Buffer.concat([head, urlBytes]);
  return seal(secret, PURPOSE, body);
}

/** What a token names, or null when it is not one Herald signed (forged, altered, truncated, too long). */
export function readTrackingToken(secret: string, token: string): TrackingToken | null {
  const body = unseal(secret, PURPOSE, token, { maxLength: MAX_TOKEN_LENGTH, minBody: HEAD_BYTES });
  if (!body) return null;
  if (body[0] !== VERSION) return null;
  const ref: TrackingRef = { orgId: uuidOf(body.subarray(2, 18)), logId: uuidOf(body.subarray(18, 34)), position: body.readUInt16BE(34) };
  if (ref.position < 1) return null;
  const rest = body.subarray(HEAD_BYTES);
  if (body[1] === OPEN && rest.length === 0) return { ...ref, kind: 'open' };
  if (body[1] === CLICK && rest.length > 0) return { ...ref, kind: 'click', url: rest.toString('utf8') };
  return null;
}

/** The open pixel's URL. */
export const openUrl = (publicUrl: string, secret: string, ref: TrackingRef) => `${publicUrl}/t/o/${trackingToken(secret, ref)!}`;

/** The tracked link to `url`, or null when the URL is too long to carry in a token. */
export function clickUrl(publicUrl: string, secret: string, ref: TrackingRef, url: string): string | null {
  const token = trackingToken(secret, ref, url);
  return token === null ? null : `${publicUrl}/t/c/${token}`;
}
