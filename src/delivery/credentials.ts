import type { Config } from '../config/config.js';
import { decryptJson, encryptJson } from '../lib/crypto.js';

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
  whatsapp_access_token?: string;
  whatsapp_phone_number_id?: string;
}

/** The organization's credentials as stored: one AES-256-GCM sealed JSON document (`CREDENTIALS_KEY`). */
export function readCredentials(config: Config, row: { credentials: Buffer | null }): StoredCredentials {
  return row.credentials ? decryptJson<StoredCredentials>(config.credentialsKey, row.credentials) : {};
}

export const sealCredentials = (config: Config, creds: StoredCredentials): Buffer => encryptJson(config.credentialsKey, creds);
