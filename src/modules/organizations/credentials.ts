import { X509Certificate } from 'node:crypto';
import type { Config } from '../../config/config.js';
import { emailSecure, type StoredCredentials } from '../../delivery/credentials.js';
import { mask } from '../../lib/crypto.js';
import { smsReportUrl, whatsappWebhookUrl } from '../receipts/webhooks.js';
import type { Role } from '../auth/caller.js';
import type { CredentialsDto } from './dto.js';

/**
 * The fields the interface returns: secrets masked, the WhatsApp token, app secret and verify token
 * never shown (only whether they are set), and the URLs the providers' receipts are pushed to. Once an email
 * host is set, the TLS mode and verification show what sending uses (a default included).
 *
 * The SMS report URL carries the token that is the gateway's only proof (`receipts/webhooks.ts`):
 * whoever holds it can post delivery reports for the organization, so it is shown to admins alone
 * (null for other roles), as platform.md has it.
 */
export function showCredentials(config: Config, creds: StoredCredentials, orgId: string, role: Role): CredentialsDto {
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
    email_secure: creds.email_host ? emailSecure(creds) : null,
    email_tls_verify: creds.email_host ? creds.email_tls_verify !== false : null,
    email_tls_ca: creds.email_tls_ca ?? null,
    whatsapp_phone_number_id: creds.whatsapp_phone_number_id ?? null,
    whatsapp_app_secret_set: !!creds.whatsapp_app_secret,
    whatsapp_verify_token_set: !!creds.whatsapp_verify_token,
    whatsapp_webhookUrl: whatsappWebhookUrl(config, orgId),
    sms_reportUrl: role === 'admin' ? smsReportUrl(config, orgId) : null,
    sms_rate: creds.sms_rate ?? null,
    email_rate: creds.email_rate ?? null,
    whatsapp_rate: creds.whatsapp_rate ?? null,
  };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----/g;

/** One or more PEM certificates, each one readable, and nothing else that looks like PEM (no private key). */
export function isCertificateBundle(text: string): boolean {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (!blocks.length || (text.match(/-----BEGIN /g) ?? []).length !== blocks.length) return false;
  return blocks.every((pem) => {
    try {
      new X509Certificate(pem);
      return true;
    } catch {
      return false;
    }
  });
}
