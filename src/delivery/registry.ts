import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { badRequest, notFound } from '../lib/errors.js';
import { providerErrorsTotal, providerRequestDuration, secondsSince } from '../lib/metrics.js';
import { readCredentials, type StoredCredentials } from './credentials.js';
import { createSandboxAdapter } from './channels/sandbox.js';
import { createSmsGatewayAdapter } from './channels/sms-gateway.js';
import { createSmtpAdapter } from './channels/smtp.js';
import { createWhatsAppCloudAdapter } from './channels/whatsapp-cloud.js';
import { CHANNELS, REQUIRED_CREDENTIALS, type Channel, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage } from './types.js';

/** A channel ready to send for one organization: its adapter with the organization's credentials. */
export type BoundChannel = (message: OutboundMessage, targets: DeliveryTarget[]) => Promise<DeliveryResult[]>;

/** What binding a channel reads of an organization's row. */
export type SenderRow = { name: string; email_from_name: string | null; credentials: Buffer | null };

export interface Delivery {
  readonly mode: 'sandbox' | 'live';
  /** Binds a channel to the organization's credentials; in live mode, 400 naming the missing ones. */
  channelFor(orgId: string, channel: Channel): Promise<{ send: BoundChannel; fromName: string }>;
  /** `channelFor` with the organization's row already read. */
  bind(org: SenderRow, channel: Channel): { send: BoundChannel; fromName: string };
  close(): Promise<void>;
}

/** The provider each channel's live adapter calls: the `provider` label of its metrics. */
const LIVE_PROVIDERS: Record<Channel, string> = { sms: 'sms-gateway', email: 'smtp', whatsapp: 'whatsapp-cloud' };

/**
 * An adapter whose calls are timed into `herald_provider_request_duration_seconds`, and whose failed
 * recipients (and calls that threw) are counted in `herald_provider_errors_total`.
 */
function measured(adapter: ChannelAdapter, provider: string): ChannelAdapter {
  const labels = { channel: adapter.channel, provider };
  return {
    channel: adapter.channel,
    async send(message, targets, credentials) {
      const start = process.hrtime.bigint();
      let results: DeliveryResult[];
      try {
        results = await adapter.send(message, targets, credentials);
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
  const bind = (org: SenderRow, channel: Channel): { send: BoundChannel; fromName: string } => {
    const credentials: StoredCredentials = config.deliveryMode === 'live' ? readCredentials(config, org) : {};
    if (config.deliveryMode === 'live') {
      const missing = REQUIRED_CREDENTIALS[channel].filter((field) => !credentials[field]);
      if (missing.length) throw badRequest(`Missing ${channel} credentials: ${missing.join(', ')}`);
    }
    const adapter = adapters[channel];
    return { send: (message, targets) => adapter.send(message, targets, credentials), fromName: org.email_from_name ?? org.name };
  };
  return {
    mode: config.deliveryMode,
    async channelFor(orgId, channel) {
      const org = (await db('organizations').where({ id: orgId }).first('name', 'email_from_name', 'credentials')) as SenderRow | undefined;
      if (!org) throw notFound();
      return bind(org, channel);
    },
    bind,
    async close() {
      await Promise.all(Object.values(adapters).map((a) => a.close?.()));
    },
  };
}
