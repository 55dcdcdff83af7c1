import { seal, unseal, uuidBytes, uuidOf } from '../../lib/signed-tokens.js';

/**
 * Export links (`/contacts/export?token=<token>`): a download the console can start by navigating,
 * without a credential in the URL. The token names the organization, who asked (a user, or an API
 * key) and the list filter, and when it expires; sealed with the export links' own key
 * (`lib/signed-tokens.ts`), so it can be neither forged nor altered (another filter, another
 * organization, a later expiry).
 *
 * Layout (base64url): version byte, organization (16 bytes), asker kind (1 byte: 1 a user, 2 an API
 * key), asker id (16 bytes), expiry (6 bytes, milliseconds since the epoch), then the filter as JSON
 * (UTF-8), then the first 16 bytes of the HMAC of everything before it.
 */

export const EXPORT_LINK_LIFETIME_MS = 10 * 60 * 1000;

export interface ExportLink {
  orgId: string;
  asker: { kind: 'user' | 'apiKey'; id: string };
  /** The filter as the caller gave it (validated again when the link is used). */
  filter: unknown;
  expiresAt: Date;
}

const VERSION = 1;
const PURPOSE = 'contact-export-links';
const KINDS = ['user', 'apiKey'] as const;
/** Longer tokens would not fit the URL a browser and a server both take (a filter of many attributes). */
export const MAX_TOKEN_LENGTH = 4000;
const HEAD_BYTES = 1 + 16 + 1 + 16 + 6;

/** The token of a link, or null when the filter makes it longer than `MAX_TOKEN_LENGTH`. */
export function exportToken(secret: string, link: ExportLink): string | null {
  const head = Buffer.alloc(HEAD_BYTES);
  head[0] = VERSION;
  uuidBytes(link.orgId).copy(head, 1);
  head[17] = KINDS.indexOf(link.asker.kind) + 1;
  uuidBytes(link.asker.id).copy(head, 18);
  head.writeUIntBE(link.expiresAt.getTime(), 34, 6);
  const token = seal(secret, PURPOSE, Buffer.concat([head, Buffer.from(JSON.stringify(link.filter ?? {}), 'utf8')]));
  return token.length <= MAX_TOKEN_LENGTH ? token : null;
}

/**
 * What a token names, or null when it is not one Herald signed (forged, altered, truncated). An
 * expired link is read all the same: its user is told it expired rather than that it is wrong.
 */
export function readExportToken(secret: string, token: string): ExportLink | null {
  const body = unseal(secret, PURPOSE, token, { maxLength: MAX_TOKEN_LENGTH, minBody: HEAD_BYTES + 2 });
  if (!body || body[0] !== VERSION) return null;
  const kind = KINDS[body[17]! - 1];
  if (!kind) return null;
  let filter: unknown;
  try {
    filter = JSON.parse(body.subarray(HEAD_BYTES).toString('utf8'));
  } catch {
    return null;
  }
  return {
    orgId: uuidOf(body.subarray(1, 17)),
    asker: { kind, id: uuidOf(body.subarray(18, 34)) },
    filter,
    expiresAt: new Date(body.readUIntBE(34, 6)),
  };
}
