import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { decryptJson, encryptJson } from '../lib/crypto.js';
import { AFRICASTALKING_FIELDS } from './channels/africastalking.js';
import { SMPP_FIELDS } from './channels/smpp.js';
import { TWILIO_FIELDS } from './channels/twilio.js';
import type { StoredCredentials } from './credentials.js';
import type { Channel, ProviderAccount, ProviderField, ProviderSettings } from './types.js';

/**
 * The provider types Herald speaks, per channel, and how a provider's row becomes the account an
 * adapter sends with. The three original types (`sms-gateway`, `smtp`, `whatsapp-cloud`) are also
 * what the organization's v1.0 credentials show and change: each channel's first provider of its
 * original type, field by field (`legacy`).
 */

export interface ProviderType {
  readonly type: string;
  readonly channel: Channel;
  /** What the console and the API reference call it. */
  readonly label: string;
  readonly fields: readonly ProviderField[];
  /** The rate it is sent at when the organization sets none (the provider's documented default). */
  readonly defaultRate?: number;
  /** The original types: the v1.0 credential each field is (`sms_apiKey` is `apiKey`). */
  readonly legacy?: Readonly<Record<string, keyof StoredCredentials>>;
}

const SMS_GATEWAY: ProviderType = {
  type: 'sms-gateway',
  channel: 'sms',
  label: 'SMS gateway (apikey, partnerID, shortcode)',
  fields: [
    { name: 'apiKey', secret: true, required: true, description: 'The gateway account API key.' },
    { name: 'partnerID', required: true, description: 'The gateway partner id.' },
    { name: 'shortCode', required: true, description: 'The sender id or short code messages come from.' },
  ],
  legacy: { apiKey: 'sms_apiKey', partnerID: 'sms_partnerID', shortCode: 'sms_shortCode' },
};

const SMTP: ProviderType = {
  type: 'smtp',
  channel: 'email',
  label: 'SMTP relay (SES, Postmark, Mailgun, SendGrid, your own)',
  fields: [
    { name: 'host', required: true, description: 'The relay host name or address.' },
    { name: 'port', required: true, description: 'The relay port (465 for TLS from the first byte, else 587 or 25).' },
    { name: 'user', description: 'The user for SMTP AUTH; none for a relay without AUTH.' },
    { name: 'pass', secret: true, description: 'The password for SMTP AUTH.' },
    { name: 'from', required: true, description: 'The address emails come from.' },
    { name: 'secure', description: 'tls, starttls, starttls-if-offered or none (default: tls on 465, else starttls-if-offered).' },
    { name: 'tlsVerify', kind: 'boolean', description: "Whether the relay's certificate is verified (default true)." },
    { name: 'tlsCa', description: "PEM certificates the relay's certificate must chain to." },
  ],
  legacy: {
    host: 'email_host',
    port: 'email_port',
    user: 'email_user',
    pass: 'email_pass',
    from: 'email_from',
    secure: 'email_secure',
    tlsVerify: 'email_tls_verify',
    tlsCa: 'email_tls_ca',
  },
};

const WHATSAPP_CLOUD: ProviderType = {
  type: 'whatsapp-cloud',
  channel: 'whatsapp',
  label: 'WhatsApp Cloud API',
  fields: [
    { name: 'accessToken', secret: true, required: true, description: 'A system user access token with whatsapp_business_messaging.' },
    { name: 'phoneNumberId', required: true, description: 'The business phone number id messages are sent from.' },
    { name: 'appSecret', secret: true, description: "The Meta app's secret: webhooks are accepted only when signed with it." },
    { name: 'verifyToken', secret: true, description: "The token Meta's webhook verification must present." },
  ],
  // WhatsApp Cloud's documented default throughput of a business phone number.
  defaultRate: 80,
  legacy: { accessToken: 'whatsapp_access_token', phoneNumberId: 'whatsapp_phone_number_id', appSecret: 'whatsapp_app_secret', verifyToken: 'whatsapp_verify_token' },
};

export const PROVIDER_TYPES: readonly ProviderType[] = [
  SMS_GATEWAY,
  { type: 'africastalking', channel: 'sms', label: "Africa's Talking", fields: AFRICASTALKING_FIELDS },
  { type: 'twilio', channel: 'sms', label: 'Twilio Programmable Messaging', fields: TWILIO_FIELDS },
  { type: 'smpp', channel: 'sms', label: 'SMPP 3.4 (aggregators and operators)', fields: SMPP_FIELDS },
  SMTP,
  WHATSAPP_CLOUD,
];

const BY_TYPE = new Map(PROVIDER_TYPES.map((t) => [t.type, t]));
export const providerType = (type: string): ProviderType | undefined => BY_TYPE.get(type);

/** Each channel's original type: what the v1.0 credentials are a view of. */
export const ORIGINAL_TYPES: Record<Channel, ProviderType> = { sms: SMS_GATEWAY, email: SMTP, whatsapp: WHATSAPP_CLOUD };

/** A provider as stored. */
export interface ProviderRow {
  id: string;
  organization_id: string;
  channel: Channel;
  type: string;
  name: string;
  position: number;
  enabled: boolean;
  rate: number | null;
  settings: Record<string, string | number | boolean>;
  secrets: Buffer | null;
  circuit: 'closed' | 'open' | 'half-open';
  circuit_changed_at: Date | null;
  last_failure_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export const PROVIDER_COLUMNS = [
  'id',
  'organization_id',
  'channel',
  'type',
  'name',
  'position',
  'enabled',
  'rate',
  'settings',
  'secrets',
  'circuit',
  'circuit_changed_at',
  'last_failure_at',
  'last_error',
  'created_at',
  'updated_at',
] as const;

export const readSecrets = (config: Pick<Config, 'credentialsKey'>, row: Pick<ProviderRow, 'secrets'>): Record<string, string> =>
  row.secrets ? decryptJson<Record<string, string>>(config.credentialsKey, row.secrets) : {};

export const sealSecrets = (config: Pick<Config, 'credentialsKey'>, secrets: Record<string, string>): Buffer | null =>
  Object.keys(secrets).length ? encryptJson(config.credentialsKey, secrets) : null;

/** The account an adapter sends with. */
export const accountOf = (config: Pick<Config, 'credentialsKey'>, row: ProviderRow): ProviderAccount => ({
  id: row.id,
  orgId: row.organization_id,
  type: row.type,
  settings: row.settings as ProviderSettings,
  secrets: readSecrets(config, row),
});

/** The required fields a provider lacks (by name). */
export function missingFields(account: Pick<ProviderAccount, 'type' | 'settings' | 'secrets'>): string[] {
  const type = providerType(account.type);
  if (!type) return [];
  return type.fields.filter((f) => f.required && (f.secret ? !account.secrets[f.name] : account.settings[f.name] === undefined || account.settings[f.name] === '')).map((f) => f.name);
}

/** An original type's account as the v1.0 credentials it stands for (what its adapter takes). */
export function credentialsOf(account: Pick<ProviderAccount, 'type' | 'settings' | 'secrets'>): StoredCredentials {
  const legacy = providerType(account.type)?.legacy ?? {};
  const creds: Record<string, unknown> = {};
  for (const [field, v1] of Object.entries(legacy)) {
    const value = account.secrets[field] ?? account.settings[field];
    if (value !== undefined) creds[v1] = value;
  }
  return creds as StoredCredentials;
}

/** The part of v1.0 credentials that belongs to one channel's original type: its settings and secrets, by field. */
export function fieldsOf(channel: Channel, creds: StoredCredentials): { settings: Record<string, string | number | boolean>; secrets: Record<string, string> } {
  const type = ORIGINAL_TYPES[channel];
  const settings: Record<string, string | number | boolean> = {};
  const secrets: Record<string, string> = {};
  for (const field of type.fields) {
    const value = creds[type.legacy![field.name]!];
    if (value === undefined || value === null) continue;
    if (field.secret) secrets[field.name] = String(value);
    else settings[field.name] = value as string | number | boolean;
  }
  return { settings, secrets };
}

/** The rate field of the v1.0 credentials per channel. */
export const RATE_FIELDS = { sms: 'sms_rate', email: 'email_rate', whatsapp: 'whatsapp_rate' } as const satisfies Record<Channel, keyof StoredCredentials>;

/** The v1.0 display name of each channel's provider of the original type, when the credentials create it. */
const ORIGINAL_NAMES: Record<Channel, string> = { sms: 'SMS gateway', email: 'SMTP relay', whatsapp: 'WhatsApp Cloud API' };

/** The channel's providers, in order (enabled or not). */
export const providersOf = (db: Db, orgId: string, channel: Channel): Promise<ProviderRow[]> =>
  db('providers').where({ organization_id: orgId, channel }).orderBy([{ column: 'position' }, { column: 'created_at' }]).select(PROVIDER_COLUMNS) as Promise<ProviderRow[]>;

/**
 * The organization's v1.0 credentials: each channel's first provider of its original type, as the
 * credential fields it stands for, with its rate.
 */
export async function legacyCredentials(db: Db, config: Pick<Config, 'credentialsKey'>, orgId: string): Promise<StoredCredentials> {
  const rows = (await db('providers')
    .where({ organization_id: orgId })
    .whereIn('type', Object.values(ORIGINAL_TYPES).map((t) => t.type))
    .orderBy([{ column: 'position' }, { column: 'created_at' }])
    .select(PROVIDER_COLUMNS)) as ProviderRow[];
  const creds: StoredCredentials = {};
  for (const channel of Object.keys(ORIGINAL_TYPES) as Channel[]) {
    const row = rows.find((r) => r.channel === channel && r.type === ORIGINAL_TYPES[channel].type);
    if (!row) continue;
    Object.assign(creds, credentialsOf(accountOf(config, row)));
    if (row.rate !== null) creds[RATE_FIELDS[channel]] = row.rate;
  }
  return creds;
}

/**
 * Writes v1.0 credentials (`after`, the whole document as it should now be) into each channel's
 * first provider of its original type, for the channels whose fields changed from `before`: that
 * provider is changed, or, when the channel has none, added after the channel's others.
 */
export async function writeLegacyCredentials(db: Db, config: Pick<Config, 'credentialsKey'>, orgId: string, before: StoredCredentials, after: StoredCredentials): Promise<void> {
  for (const channel of Object.keys(ORIGINAL_TYPES) as Channel[]) {
    const type = ORIGINAL_TYPES[channel];
    const names = [...Object.values(type.legacy!), RATE_FIELDS[channel]];
    if (names.every((n) => before[n] === after[n])) continue;
    const { settings, secrets } = fieldsOf(channel, after);
    const rate = after[RATE_FIELDS[channel]] ?? null;
    const [current] = (await db('providers')
      .where({ organization_id: orgId, channel, type: type.type })
      .orderBy([{ column: 'position' }, { column: 'created_at' }])
      .limit(1)
      .forUpdate()
      .select('id')) as { id: string }[];
    const values = { settings: JSON.stringify(settings), secrets: sealSecrets(config, secrets), rate };
    if (current) {
      await db('providers').where({ organization_id: orgId, id: current.id }).update({ ...values, updated_at: db.raw("date_trunc('milliseconds', now())") });
    } else {
      // Read first, not a subquery of the INSERT: Citus plans no subquery inside an INSERT.
      const [last] = (await db('providers').where({ organization_id: orgId, channel }).max('position as position')) as { position: number | null }[];
      await db('providers').insert({
        organization_id: orgId,
        channel,
        type: type.type,
        name: ORIGINAL_NAMES[channel],
        position: (last?.position ?? 0) + 1,
        ...values,
      });
    }
  }
}

/**
 * Organizations whose credentials are still the single v1.0 document get a provider of each
 * channel's original type for what it holds, and the document is cleared; each organization in
 * a transaction of its own, so a start that stops halfway resumes where it stopped.
 */
export async function moveCredentials(db: Db, config: Pick<Config, 'credentialsKey'>): Promise<number> {
  const rows = (await db('organizations').whereNotNull('credentials').select('id')) as { id: string }[];
  for (const { id } of rows) {
    await db.transaction(async (trx) => {
      const row = (await trx('organizations').where({ id }).forUpdate().first('credentials')) as { credentials: Buffer | null } | undefined;
      if (!row?.credentials) return;
      const creds = decryptJson<StoredCredentials>(config.credentialsKey, row.credentials);
      await writeLegacyCredentials(trx, config, id, {}, creds);
      await trx('organizations').where({ id }).update({ credentials: null });
    });
  }
  return rows.length;
}
