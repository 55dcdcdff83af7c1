import { seal, unseal, uuidBytes, uuidOf } from '../lib/signed-tokens.js';
import type { Channel } from './types.js';
import { CHANNELS } from './types.js';

/**
 * Unsubscribe links (platform.md, "Consent"): `<PUBLIC_URL>/u/<token>`, where the token names the
 * organization, the channel and the recipient (a contact, or the address of a recipient that is
 * not one), sealed with the unsubscribe links' own key (`lib/signed-tokens.ts`): it cannot be
 * guessed or altered.
 *
 * A campaign's message also names the campaign, so an unsubscribe through it counts in the
 * campaign's funnel.
 *
 * Layout (base64url): version byte, organization (16 bytes), channel (1 byte), kind (1 byte: 1 a
 * contact, 2 an address, 3 and 4 the same from a campaign's message), then for 3 and 4 the campaign
 * id (16 bytes), then the contact id (16 bytes) or the address (UTF-8), then the first 16 bytes of
 * the HMAC of everything before it.
 */

export type UnsubscribeRef = { orgId: string; channel: Channel; campaignId?: string } & (
  | { contactId: string; address?: undefined }
  | { contactId?: undefined; address: string }
);

const VERSION = 1;
const PURPOSE = 'unsubscribe-links';
const CONTACT = 1;
const ADDRESS = 2;
/** Added to a kind when a campaign id follows it. */
const FROM_CAMPAIGN = 2;
const MAX_TOKEN_LENGTH = 600;

export function unsubscribeToken(secret: string, ref: UnsubscribeRef): string {
  const head = Buffer.from([VERSION]);
  const kind = (ref.contactId !== undefined ? CONTACT : ADDRESS) + (ref.campaignId !== undefined ? FROM_CAMPAIGN : 0);
  const campaign = ref.campaignId !== undefined ? uuidBytes(ref.campaignId) : Buffer.alloc(0);
  const who = ref.contactId !== undefined ? uuidBytes(ref.contactId) : Buffer.from(ref.address, 'utf8');
  const body = Buffer.concat([head, uuidBytes(ref.orgId), Buffer.from([CHANNELS.indexOf(ref.channel), kind]), campaign, who]);
  return seal(secret, PURPOSE, body);
}

/** The link itself, under the configured public URL. */
export const unsubscribeUrl = (publicUrl: string, secret: string, ref: UnsubscribeRef) => `${publicUrl}/u/${unsubscribeToken(secret, ref)}`;

/** What a token names, or null when it is not one Herald signed (forged, altered, truncated). */
export function readUnsubscribeToken(secret: string, token: string): UnsubscribeRef | null {
  const body = unseal(secret, PURPOSE, token, { maxLength: MAX_TOKEN_LENGTH, minBody: 1 + 16 + 1 + 1 + 1 });
  if (!body) return null;
  if (body[0] !== VERSION) return null;
  const orgId = uuidOf(body.subarray(1, 17));
  const channel = CHANNELS[body[17]!];
  if (!channel) return null;
  let kind = body[18]!;
  let rest = body.subarray(19);
  let campaign: { campaignId?: string } = {};
  if (kind > FROM_CAMPAIGN) {
    if (rest.length < 16) return null;
    campaign = { campaignId: uuidOf(rest.subarray(0, 16)) };
    rest = rest.subarray(16);
    kind -= FROM_CAMPAIGN;
  }
  if (kind === CONTACT && rest.length === 16) return { orgId, channel, ...campaign, contactId: uuidOf(rest) };
  if (kind === ADDRESS && rest.length > 0) return { orgId, channel, ...campaign, address: rest.toString('utf8') };
  return null;
}

