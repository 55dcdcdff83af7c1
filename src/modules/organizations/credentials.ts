import type { Config } from '../../config/config.js';
import type { StoredCredentials } from '../../delivery/credentials.js';
import { mask } from '../../lib/crypto.js';
import type { CredentialsDto } from './dto.js';

/** The fields the interface returns: secrets masked, the WhatsApp token never shown. */
export function showCredentials(config: Config, creds: StoredCredentials): CredentialsDto {
  return {
    sms_apiUrl: config.smsApiUrl,
    sms_apiKey: mask(creds.sms_apiKey),
    sms_partnerID: creds.sms_partnerID ?? null,
    sms_shortCode: creds.sms_shortCode ?? null,
    email_host: creds.email_host ?? null,
    email_port: creds.email_port ?? null,
    email_user: creds.email_user ?? null,
    email_pass: mask(creds.email_pass),
    email_from: creds.email_from ?? null,
    whatsapp_phone_number_id: creds.whatsapp_phone_number_id ?? null,
  };
}
