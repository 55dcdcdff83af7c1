import type { Config } from '../config/config.js';
import { macOf } from '../lib/signed-tokens.js';

/**
 * Where a provider account's delivery reports are posted: `/webhooks/providers/<org>/<provider>/<token>`.
 * The token is the HMAC of the provider's id under the report URLs' own key: for a provider that does
 * not sign its reports (Africa's Talking) it is the proof; one that does (Twilio) is verified by its
 * signature as well.
 */
export const providerReportToken = (jwtSecret: string, providerId: string): string =>
  macOf(jwtSecret, 'provider-report-url', providerId.toLowerCase()).toString('base64url').slice(0, 32);

export const providerReportUrl = (config: Pick<Config, 'publicUrl' | 'jwtSecret'>, orgId: string, providerId: string) =>
  `${config.publicUrl}/webhooks/providers/${orgId}/${providerId}/${providerReportToken(config.jwtSecret, providerId)}`;
