import type { FrequencyCaps } from '../campaigns/caps.js';
import type { EmailSecure, StoredCredentials } from '../../delivery/credentials.js';
import type { ClosureDto } from '../closure/service.js';

export interface OrganizationRow {
  id: string;
  name: string;
  sector: string;
  country: string;
  credits: number;
  email_from_name: string | null;
  credentials: Buffer | null;
  tracking: boolean;
  require_two_factor: boolean;
  retention_days: number;
  time_zone: string;
  /** When campaigns may reach a recipient (`HH:MM-HH:MM` in their zone); null: any time. */
  sending_hours: string | null;
  /** Per channel, at most `messages` campaign messages to one address in `days` days (`campaigns/caps.ts`). */
  frequency_caps: FrequencyCaps;
  created_at: Date;
  updated_at: Date;
}

export const CREDENTIAL_FIELDS = [
  'sms_apiKey',
  'sms_partnerID',
  'sms_shortCode',
  'email_host',
  'email_port',
  'email_user',
  'email_pass',
  'email_from',
  'email_secure',
  'email_tls_verify',
  'email_tls_ca',
  'whatsapp_access_token',
  'whatsapp_phone_number_id',
  'whatsapp_app_secret',
  'whatsapp_verify_token',
  'sms_rate',
  'email_rate',
  'whatsapp_rate',
] as const satisfies readonly (keyof StoredCredentials)[];

export interface CredentialsDto {
  sms_apiUrl: string;
  sms_apiKey: string | null;
  sms_partnerID: string | null;
  sms_shortCode: string | null;
  email_host: string | null;
  email_port: string | null;
  email_user: string | null;
  email_pass: string | null;
  email_from: string | null;
  email_secure: EmailSecure | null;
  email_tls_verify: boolean | null;
  email_tls_ca: string | null;
  whatsapp_phone_number_id: string | null;
  whatsapp_app_secret_set: boolean;
  whatsapp_verify_token_set: boolean;
  whatsapp_webhookUrl: string;
  /** Admins only: null for other roles. */
  sms_reportUrl: string | null;
  /** Each channel's rate as set (messages a second); null: the default. */
  sms_rate: number | null;
  email_rate: number | null;
  whatsapp_rate: number | null;
}

export interface OrganizationSummary {
  _id: string;
  name: string;
  sector: string;
  country: string;
  credits: number;
}

export interface OrganizationDto extends OrganizationSummary {
  /** The platform's, the same for every organization: `sandbox` records messages in the outbox instead of sending them. */
  deliveryMode: 'sandbox' | 'live';
  emailFromName: string | null;
  tracking: boolean;
  /** Members must use two-factor authentication: until they enrol, their sessions may only enrol. */
  requireTwoFactor: boolean;
  /** Days its logs, receipts, events, outbox and webhook events are kept (30-3650; 395 by default). */
  retentionDays: number;
  /** Its time zone (IANA): its contacts' unless they have their own. */
  timezone: string;
  /** When campaigns may reach a recipient, in their zone (`HH:MM-HH:MM`); null: any time. */
  sendingHours: string | null;
  /** Per channel, how many campaign messages one address may get in a period. */
  frequencyCaps: FrequencyCaps;
  /** Its closing while one is scheduled or under way, else null. */
  closure: ClosureDto | null;
  credentials: CredentialsDto;
  createdAt: string;
  updatedAt: string;
}

export const toSummary = (row: Pick<OrganizationRow, 'id' | 'name' | 'sector' | 'country' | 'credits'>): OrganizationSummary => ({
  _id: row.id,
  name: row.name,
  sector: row.sector,
  country: row.country,
  credits: Number(row.credits),
});

/** GraphQL's Organization: a summary (from a loader) or the full object; missing parts are resolved on demand. */
export type OrganizationGraph = OrganizationSummary & Partial<OrganizationDto>;
