import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { badRequest, notFound } from '../lib/errors.js';
import { providerErrorsTotal, providerRequestDuration, secondsSince } from '../lib/metrics.js';
import { readCredentials, type StoredCredentials } from './credentials.js';
import { transmit } from './engine.js';
import { Pacer, type Lane, type PaceKey, type Park } from './pace.js';
import { createSandboxAdapter } from './channels/sandbox.js';
import { createSmsGatewayAdapter } from './channels/sms-gateway.js';
import { createSmtpAdapter } from './channels/smtp.js';
import { createWhatsAppCloudAdapter } from './channels/whatsapp-cloud.js';
import { CHANNELS, REQUIRED_CREDENTIALS, type Channel, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from './types.js';

/**
 * A channel ready to send for one organization: its adapter with the organization's credentials,
 * reached only through the engine's `transmit` (paced to the credential, retried, slowed by throttling).
 */
/** How a send goes: its lane, how it spends waits for the rate (a sleep by default), how long throttled recipients are tried again. */
export interface SendHow {
  lane: Lane;
  park?: Park;
  throttledForMs?: number;
}

export interface BoundChannel {
  /** Display name for email's From. */
  fromName: string;
  /** The credential as it is paced. */
  pace: PaceKey;
  /** Sends `targets` through the engine (`transmit`), in its lane. */
  send(message: OutboundMessage, targets: DeliveryTarget[], how: SendHow): Promise<DeliveryResult[]>;
}

/** What binding a channel reads of an organization's row. */
export type SenderRow = { name: string; email_from_name: string | null; credentials: Buffer | null };

export interface Delivery {
  readonly mode: 'sandbox' | 'live';
  /** Binds a channel to the organization's credentials; in live mode, 400 naming the missing ones. */
  channelFor(orgId: string, channel: Channel): Promise<BoundChannel>;
  /** `channelFor` with the organization's row already read. */
  bind(orgId: string, org: SenderRow, channel: Channel): BoundChannel;
  close(): Promise<void>;
}

/** The provider each channel's live adapter calls: the `provider` label of its metrics. */
const LIVE_PROVIDERS: Record<Channel, string> = { sms: 'sms-gateway', email: 'smtp', whatsapp: 'whatsapp-cloud' };

/** The field of a channel's credentials that sets its rate, in messages a second. */
export const RATE_FIELDS = { sms: 'sms_rate', email: 'email_rate', whatsapp: 'whatsapp_rate' } as const satisfies Record<Channel, keyof StoredCredentials>;

/**
 * The rate a provider is sent at when the organization sets none: WhatsApp Cloud's documented
 * default throughput of a business phone number. The SMS gateway and SMTP relays publish none; their
 * throttling answers slow them down instead.
 */
export const PROVIDER_RATES: Partial<Record<string, number>> = { 'whatsapp-cloud': 80 };

/**
 * An adapter whose calls are timed into `herald_provider_request_duration_seconds`, and whose failed
 * recipients (and calls that threw) are counted in `herald_provider_errors_total`.
 */
function measured(adapter: ChannelAdapter, provider: string): ChannelAdapter {
  const labels = { channel: adapter.channel, provider };
  return {
    channel: adapter.channel,
    async send(message, targets, credentials, options) {
      const start = process.hrtime.bigint();
      let results: DeliveryResult[];
      try {
        results = await adapter.send(message, targets, credentials, options);
      } catch (err) {
        providerErrorsTotal.inc({ ...labels, reason: 'exception' }, targets.length);
        throw err;
      } finally {
        providerRequestDuration.observe(labels, secondsSince(start));
      }
      let retryable = 0;
      let final = 0;
      for (const r of results) {
        if (r.ok) continue;
        if (r.retryable) retryable++;
        else final++;
      }
      if (retryable) providerErrorsTotal.inc({ ...labels, reason: 'retryable' }, retryable);
      if (final) providerErrorsTotal.inc({ ...labels, reason: 'final' }, final);
      return results;
    },
    close: adapter.close?.bind(adapter),
  };
}

/** Live adapters are created only in live mode, so a sandbox install never opens provider clients. */
function liveAdapters(config: Config): Record<Channel, ChannelAdapter> {
  return {
    sms: createSmsGatewayAdapter({ baseUrl: config.smsApiUrl, timeoutMs: config.providerTimeoutMs, callsInFlight: config.sendConcurrency * 2 }),
    email: createSmtpAdapter({ timeoutMs: config.providerTimeoutMs, maxConnections: 5, ehloName: config.smtpEhloName }),
    whatsapp: createWhatsAppCloudAdapter({ baseUrl: config.whatsappApiUrl, timeoutMs: config.providerTimeoutMs, concurrency: config.sendConcurrency }),
  };
}

export async function createDelivery(config: Config, db: Db): Promise<Delivery> {
  const unmeasured: Record<Channel, ChannelAdapter> =
    config.deliveryMode === 'sandbox'
      ? {
          sms: createSandboxAdapter(db, 'sms', config.sandboxLatencyMs),
          email: createSandboxAdapter(db, 'email', config.sandboxLatencyMs),
          whatsapp: createSandboxAdapter(db, 'whatsapp', config.sandboxLatencyMs),
        }
      : liveAdapters(config);
  const adapters = Object.fromEntries(
    CHANNELS.map((channel) => [channel, measured(unmeasured[channel], config.deliveryMode === 'sandbox' ? 'sandbox' : LIVE_PROVIDERS[channel])]),
  ) as Record<Channel, ChannelAdapter>;
  const pacer = new Pacer(db);
  const bind = (orgId: string, org: SenderRow, channel: Channel): BoundChannel => {
    const stored = readCredentials(config, org);
    // Sandbox delivery uses no credential but the rate: it paces like the provider it stands for.
    const credentials: StoredCredentials = config.deliveryMode === 'live' ? stored : {};
    if (config.deliveryMode === 'live') {
      const missing = REQUIRED_CREDENTIALS[channel].filter((field) => !credentials[field]);
      if (missing.length) throw badRequest(`Missing ${channel} credentials: ${missing.join(', ')}`);
    }
    const provider = config.deliveryMode === 'sandbox' ? 'sandbox' : LIVE_PROVIDERS[channel];
    const configured = stored[RATE_FIELDS[channel]] ?? (config.deliveryMode === 'live' ? PROVIDER_RATES[provider] : undefined) ?? config.defaultSendRate;
    const pace: PaceKey = { orgId, channel, configured: configured ?? null };
    const adapter = adapters[channel];
    return {
      fromName: org.email_from_name ?? org.name,
      pace,
      send: (message, targets, how) => transmit({ pacer, pace, provider, ...how }, (some) => adapter.send(message, some, credentials, { lane: how.lane }), targets),
    };
  };
  return {
    mode: config.deliveryMode,
    async channelFor(orgId, channel) {
      const org = (await db('organizations').where({ id: orgId }).first('name', 'email_from_name', 'credentials')) as SenderRow | undefined;
      if (!org) throw notFound();
      return bind(orgId, org, channel);
    },
    bind,
    async close() {
      await Promise.all(Object.values(adapters).map((a) => a.close?.()));
    },
  };
}
