import type { Config } from '../config/config.js';
import { decryptJson, encryptJson } from '../lib/crypto.js';
import type { DkimSigner } from './dkim.js';

/**
 * How an SMTP connection is protected: `tls` from the first byte (port 465), `starttls` required
 * (never sends in clear), `starttls-if-offered` (upgrades when the server offers it), `none`.
 */
export const EMAIL_SECURE_MODES = ['tls', 'starttls', 'starttls-if-offered', 'none'] as const;
export type EmailSecure = (typeof EMAIL_SECURE_MODES)[number];

/** What an organization keeps for its channels, decrypted. */
export interface StoredCredentials {
  sms_apiKey?: string;
  sms_partnerID?: string;
  sms_shortCode?: string;
  email_host?: string;
  email_port?: string;
  email_user?: string;
  email_pass?: string;
  email_from?: string;
  /** Unset: the default for the port (`emailSecure`). */
  email_secure?: EmailSecure;
  /** Unset: true. */
  email_tls_verify?: boolean;
  /** PEM certificates the relay's certificate must chain to, instead of the public roots. */
  email_tls_ca?: string;
  whatsapp_access_token?: string;
  whatsapp_phone_number_id?: string;
  /** The Meta app's secret: webhooks are accepted only when signed with it. */
  whatsapp_app_secret?: string;
  /** The token Meta's webhook verification must present. */
  whatsapp_verify_token?: string;
  /** Never stored: the organization's DKIM keys, handed to the SMTP adapter for signing (`dkim.ts`). */
  dkim?: readonly DkimSigner[];
  /** Each channel's rate, in messages a second; unset: the provider's default, else the platform's (`DEFAULT_SEND_RATE`). */
  sms_rate?: number;
  email_rate?: number;
  whatsapp_rate?: number;
}

/** The TLS mode an SMTP connection uses: the organization's choice, else implicit TLS on 465 only. */
export function emailSecure(creds: Pick<StoredCredentials, 'email_secure' | 'email_port'>): EmailSecure {
  return creds.email_secure ?? (Number(creds.email_port) === 465 ? 'tls' : 'starttls-if-offered');
}

/** The organization's credentials as stored: one AES-256-GCM sealed JSON document (`CREDENTIALS_KEY`). */
export function readCredentials(config: Config, row: { credentials: Buffer | null }): StoredCredentials {
  return row.credentials ? decryptJson<StoredCredentials>(config.credentialsKey, row.credentials) : {};
}

export const sealCredentials = (config: Config, creds: StoredCredentials): Buffer => encryptJson(config.credentialsKey, creds);
