import { seal, unseal, uuidBytes, uuidOf } from '../../lib/signed-tokens.js';

/**
 * Invitation links: `<PUBLIC_URL>/invite/<token>`, where the token names the organization and the
 * invitation, sealed with the invitation links' own key (`lib/signed-tokens.ts`): it can be neither
 * guessed nor altered, and a token of another purpose (an unsubscribe link) is never one. The
 * organization rides along because the accept page is public: the row is found by
 * `(organization_id, id)` like any tenant row, before anyone has signed in.
 *
 * The token holds no expiry or state: both live in the row, so that revoking and accepting act at
 * once and the same invitation always has the same link.
 *
 * Layout (base64url): version byte, organization (16 bytes), invitation (16 bytes), then the first
 * 16 bytes of the HMAC of everything before it.
 */

export interface InvitationRef {
  orgId: string;
  invitationId: string;
}

const VERSION = 1;
const PURPOSE = 'invitation-links';
const BODY_BYTES = 1 + 16 + 16;
const MAX_TOKEN_LENGTH = 200;

export function invitationToken(secret: string, ref: InvitationRef): string {
  return seal(secret, PURPOSE, Buffer.concat([Buffer.from([VERSION]), uuidBytes(ref.orgId), uuidBytes(ref.invitationId)]));
}

/** The console's page for the link. */
export const invitationUrl = (publicUrl: string, secret: string, ref: InvitationRef) => `${publicUrl}/invite/${invitationToken(secret, ref)}`;

/** What a token names, or null when it is not one Herald signed (forged, altered, truncated). */
export function readInvitationToken(secret: string, token: string): InvitationRef | null {
  const body = unseal(secret, PURPOSE, token, { maxLength: MAX_TOKEN_LENGTH, minBody: BODY_BYTES });
  if (!body || body.length !== BODY_BYTES || body[0] !== VERSION) return null;
  return { orgId: uuidOf(body.subarray(1, 17)), invitationId: uuidOf(body.subarray(17, 33)) };
}
