import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { badRequest, notFound } from '../lib/errors.js';
import { providerErrorsTotal, providerFailovers, providerRequestDuration, secondsSince } from '../lib/metrics.js';
import { createAfricasTalkingAdapter } from './channels/africastalking.js';
import { createSandboxAdapter } from './channels/sandbox.js';
import { createSmppAdapter } from './channels/smpp.js';
import { createSmsGatewayAdapter } from './channels/sms-gateway.js';
import { createSmtpAdapter } from './channels/smtp.js';
import { createTwilioAdapter } from './channels/twilio.js';
import { createWhatsAppCloudAdapter } from './channels/whatsapp-cloud.js';
import { Circuits } from './circuit.js';
import { dkimSigners, type DkimSigner } from './dkim.js';
import { THROTTLED_FOR_MS, transmit } from './engine.js';
import { Pacer, type Lane, type PaceKey, type Park } from './pace.js';
import { accountOf, credentialsOf, missingFields, ORIGINAL_TYPES, providersOf, providerType, type ProviderRow } from './providers.js';
import { providerReportUrl } from './report-urls.js';
import { bounceAddress } from './bounces/verp.js';
import type { BounceType, Channel, ChannelAdapter, DeliveryResult, DeliveryTarget, OutboundMessage, ProviderAccount, ProviderAdapter, ProviderReport } from './types.js';

/** How a send goes: its lane, how it spends waits for the rate (a sleep by default), how long throttled recipients are tried again. */
export interface SendHow {
  lane: Lane;
  park?: Park;
  throttledForMs?: number;
}

/**
 * A channel ready to send for one organization: its enabled providers in order, each reached only
 * through the engine's `transmit` (paced to the provider, retried, slowed by throttling) and its
 * circuit; what one cannot carry for its own reasons goes to the next.
 */
export interface BoundChannel {
  /** Display name for email's From. */
  fromName: string;
  /** The first provider as it is paced. */
  pace: PaceKey;
  /** Sends `targets` through the engine (`transmit`), in its lane. */
  send(message: OutboundMessage, targets: DeliveryTarget[], how: SendHow): Promise<DeliveryResult[]>;
}

/** What binding a channel reads of an organization's row. */
export type SenderRow = { name: string; email_from_name: string | null };

export interface Delivery {
  readonly mode: 'sandbox' | 'live';
  /** Binds a channel to the organization's providers; in live mode, 400 naming what is missing when none can send. */
  channelFor(orgId: string, channel: Channel): Promise<BoundChannel>;
  /** `channelFor` with the organization's row already read. */
  bind(orgId: string, org: SenderRow, channel: Channel): Promise<BoundChannel>;
  /** One provider alone, no failover (a test message to check a provider). */
  viaProvider(org: SenderRow, row: ProviderRow): BoundChannel;
  /** Records the recipients a mail server refused at the send (`bouncesOf` a send's results), once their log is written. */
  bounced(orgId: string, bounces: SyncBounce[]): Promise<void>;
  close(): Promise<void>;
}

/** What happens to a provider's reports (SMPP's arrive on its session): the receipts module records them. */
export interface DeliveryHooks {
  onReport?: (orgId: string, provider: string, report: ProviderReport) => Promise<void>;
  /** Recipients a mail server refused at once (`DeliveryResult.bounce`), by client id, once their log is written: the bounces module counts them. */
  onBounce?: (orgId: string, bounces: SyncBounce[]) => Promise<void>;
}

/** A recipient refused at send time. */
export interface SyncBounce {
  clientId: string;
  type: BounceType;
  reason: string;
}

/** The recipients of a send's `results` that a mail server refused at once. */
export function bouncesOf(targets: readonly DeliveryTarget[], results: readonly DeliveryResult[]): SyncBounce[] {
  const bounces: SyncBounce[] = [];
  results.forEach((r, i) => {
    if (!r.ok && r.bounce && targets[i]) bounces.push({ clientId: targets[i].clientId, type: r.bounce, reason: r.error ?? '' });
  });
  return bounces;
}

/**
 * How long a queued send's recipients that a provider keeps throttling wait for it when the channel
 * has another provider to go to: then they go there.
 */
const THROTTLED_BEFORE_FAILOVER_MS = 30_000;

/**
 * An adapter whose calls are timed into `herald_provider_request_duration_seconds`, and whose failed
 * recipients (and calls that threw) are counted in `herald_provider_errors_total`.
 */
function measured(adapter: ProviderAdapter, provider: string): ProviderAdapter {
  const labels = { channel: adapter.channel, provider };
  return {
    channel: adapter.channel,
    async send(message, targets, account, options) {
      const start = process.hrtime.bigint();
      let results: DeliveryResult[];
      try {
        results = await adapter.send(message, targets, account, options);
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
        if (r.retryable || r.providerFault) retryable++;
        else final++;
      }
      if (retryable) providerErrorsTotal.inc({ ...labels, reason: 'retryable' }, retryable);
      if (final) providerErrorsTotal.inc({ ...labels, reason: 'final' }, final);
      return results;
    },
    close: adapter.close?.bind(adapter),
  };
}

/** An original type's adapter, which takes the v1.0 credentials, as a provider adapter. */
const original = (adapter: ChannelAdapter): ProviderAdapter => ({
  channel: adapter.channel,
  send: (message, targets, account, options) => adapter.send(message, targets, account.dkim ? { ...credentialsOf(account), dkim: account.dkim } : credentialsOf(account), options),
  close: adapter.close?.bind(adapter),
});

/** The live adapter of each provider type, made when a provider of the type first sends. */
function liveAdapter(config: Config, type: string, hooks: DeliveryHooks): ProviderAdapter {
  const timeoutMs = config.providerTimeoutMs;
  switch (type) {
    case 'sms-gateway':
      return original(createSmsGatewayAdapter({ baseUrl: config.smsApiUrl, timeoutMs, callsInFlight: config.sendConcurrency * 2 }));
    case 'smtp':
      return original(createSmtpAdapter({ timeoutMs, maxConnections: 5, ehloName: config.smtpEhloName, bounceAddress: bounceAddressOf(config) }));
    case 'whatsapp-cloud':
      return original(createWhatsAppCloudAdapter({ baseUrl: config.whatsappApiUrl, timeoutMs, concurrency: config.sendConcurrency }));
    case 'africastalking':
      return createAfricasTalkingAdapter({ baseUrl: config.africasTalkingApiUrl, timeoutMs, callsInFlight: config.sendConcurrency * 2 });
    case 'twilio':
      return createTwilioAdapter({ baseUrl: config.twilioApiUrl, timeoutMs, callsInFlight: config.sendConcurrency * 2, statusCallbackUrl: (a) => providerReportUrl(config, a.orgId, a.id) });
    case 'smpp':
      return createSmppAdapter({ timeoutMs, onReport: (account, report) => hooks.onReport?.(account.orgId, 'smpp', report) });
    default:
      throw new Error(`no adapter for provider type ${type}`);
  }
}

/** The VERP envelope sender of each email when a bounce domain is configured. */
function bounceAddressOf(config: Config): ((orgId: string, clientId: string) => string) | undefined {
  const domain = config.bounces.domain;
  return domain ? (orgId, clientId) => bounceAddress(config.jwtSecret, domain, { orgId, clientId }) : undefined;
}

/** One provider of a bound channel: its account, pace and adapter. */
interface Link {
  row: ProviderRow;
  account: ProviderAccount;
  pace: PaceKey;
  adapter: ProviderAdapter;
}

/** The recipients a provider could not carry for its own reasons, which the next provider may. */
const handOver = (r: DeliveryResult) => !r.ok && (r.retryable === true || r.providerFault === true);

export async function createDelivery(config: Config, db: Db, hooks: DeliveryHooks = {}): Promise<Delivery> {
  const sandbox: Partial<Record<Channel, ProviderAdapter>> = {};
  const sandboxOf = (channel: Channel) => (sandbox[channel] ??= measured(original(createSandboxAdapter(db, channel, config.sandboxLatencyMs)), 'sandbox'));
  const adapters = new Map<string, ProviderAdapter>();
  const adapterOf = (type: string) => {
    let adapter = adapters.get(type);
    if (!adapter) adapters.set(type, (adapter = measured(liveAdapter(config, type, hooks), type)));
    return adapter;
  };
  const pacer = new Pacer(db);
  const circuits = new Circuits({ resetMs: config.providerCircuitResetMs, volume: config.providerCircuitVolume, windowMs: 10_000 }, (of, state, error) => {
    // Where the API and other processes read it; a lost write only delays what they show.
    db('providers')
      .where({ organization_id: of.orgId, id: of.id })
      .update({
        circuit: state,
        circuit_changed_at: db.fn.now(),
        ...(state === 'open' && { last_failure_at: db.fn.now(), last_error: error?.slice(0, 500) ?? null }),
      })
      .catch(() => undefined);
  });

  const rateOf = (row: ProviderRow | undefined, live: boolean) =>
    row?.rate ?? (live && row ? providerType(row.type)?.defaultRate : undefined) ?? config.defaultSendRate ?? null;

  const linkOf = (row: ProviderRow, dkim?: readonly DkimSigner[]): Link => ({
    row,
    account: dkim?.length ? { ...accountOf(config, row), dkim } : accountOf(config, row),
    pace: { orgId: row.organization_id, channel: row.channel, provider: row.id, configured: rateOf(row, true) },
    adapter: adapterOf(row.type),
  });

  /** Sends through `links` in order: each takes what the ones before it could not carry, skipping those whose circuit is open. */
  const chain = (links: Link[], message: OutboundMessage, targets: DeliveryTarget[], how: SendHow): Promise<DeliveryResult[]> =>
    (async () => {
      const results: DeliveryResult[] = new Array(targets.length);
      let pending = targets.map((_, i) => i);
      for (let l = 0; l < links.length && pending.length; l++) {
        const link = links[l]!;
        const last = l === links.length - 1;
        const some = pending.map((i) => targets[i]!);
        const throttledForMs = last ? how.throttledForMs : Math.min(how.throttledForMs ?? THROTTLED_FOR_MS[how.lane], THROTTLED_BEFORE_FAILOVER_MS);
        const of = { id: link.row.id, version: link.row.updated_at.getTime(), orgId: link.row.organization_id, channel: link.row.channel, type: link.row.type };
        const attempt = () =>
          transmit(
            { pacer, pace: link.pace, provider: link.row.type, lane: how.lane, park: how.park, throttledForMs },
            (batch) => link.adapter.send(message, batch, link.account, { lane: how.lane }),
            some,
          );
        // The last provider is called whatever its circuit: there is nowhere else for the work to go.
        const sent =
          last && !circuits.allows(of)
            ? await attempt()
            : await circuits.run(of, async () => {
                const value = await attempt();
                const failed = value.every(handOver);
                return { value, failed, error: failed ? value[0]?.error : undefined };
              });
        if (sent === null) continue; // its circuit is open: the next one takes them
        const next: number[] = [];
        sent.forEach((r, j) => {
          const i = pending[j]!;
          results[i] = { ...r, carrier: link.row.id };
          if (!last && handOver(r)) next.push(i);
        });
        if (next.length && !last) providerFailovers.inc({ channel: link.row.channel, provider: link.row.type }, next.length);
        pending = next;
      }
      return results;
    })();

  const transmitVia = (links: Link[]) => (message: OutboundMessage, targets: DeliveryTarget[], how: SendHow) => chain(links, message, targets, how);

  const bind = async (orgId: string, org: SenderRow, channel: Channel): Promise<BoundChannel> => {
    const rows = await providersOf(db, orgId, channel);
    const enabled = rows.filter((r) => r.enabled);
    const fromName = org.email_from_name ?? org.name;
    if (config.deliveryMode === 'sandbox') {
      // Sandbox delivery uses no credential but the rate: it paces like the provider it stands for.
      const first = enabled[0];
      const pace: PaceKey = { orgId, channel, configured: rateOf(first, false) };
      const adapter = sandboxOf(channel);
      const send = (message: OutboundMessage, targets: DeliveryTarget[], how: SendHow) =>
        transmit({ pacer, pace, provider: 'sandbox', ...how }, (some) => adapter.send(message, some, { id: first?.id ?? '', orgId, type: 'sandbox', settings: {}, secrets: {} }, { lane: how.lane }), targets).then(
          (results) => (first ? results.map((r) => ({ ...r, carrier: first.id })) : results),
        );
      return { fromName, pace, send };
    }
    // Email is signed with the organization's DKIM key of its From domain.
    const dkim = channel === 'email' ? await dkimSigners(db, config, orgId) : undefined;
    const links = enabled.map((row) => linkOf(row, dkim)).filter((link) => missingFields(link.account).length === 0);
    if (!links.length) throw badRequest(`Missing ${channel} credentials: ${missingCredentials(channel, enabled, config).join(', ')}`);
    return { fromName, pace: links[0]!.pace, send: transmitVia(links) };
  };

  return {
    mode: config.deliveryMode,
    async channelFor(orgId, channel) {
      const org = (await db('organizations').where({ id: orgId }).first('name', 'email_from_name')) as SenderRow | undefined;
      if (!org) throw notFound();
      return bind(orgId, org, channel);
    },
    bind,
    viaProvider(org, row) {
      const fromName = org.email_from_name ?? org.name;
      if (config.deliveryMode === 'sandbox') {
        const pace: PaceKey = { orgId: row.organization_id, channel: row.channel, provider: row.id, configured: rateOf(row, false) };
        const adapter = sandboxOf(row.channel);
        return {
          fromName,
          pace,
          send: (message, targets, how) =>
            transmit({ pacer, pace, provider: 'sandbox', ...how }, (some) => adapter.send(message, some, accountOf(config, row), { lane: how.lane }), targets).then((results) =>
              results.map((r) => ({ ...r, carrier: row.id })),
            ),
        };
      }
      const link = linkOf(row);
      const missing = missingFields(link.account);
      if (missing.length) throw badRequest(`Missing ${row.channel} provider settings: ${missing.join(', ')}`);
      return { fromName, pace: link.pace, send: transmitVia([link]) };
    },
    async bounced(orgId, bounces) {
      if (bounces.length) await hooks.onBounce?.(orgId, bounces);
    },
    async close() {
      circuits.close();
      await Promise.all([...adapters.values(), ...Object.values(sandbox)].map((a) => a.close?.()));
    },
  };
}

/**
 * What a channel with no provider able to send lacks, as the v1.0 credentials name it: the missing
 * fields of its first enabled provider of the original type, else every required one.
 */
function missingCredentials(channel: Channel, enabled: ProviderRow[], config: Config): string[] {
  const type = ORIGINAL_TYPES[channel];
  const row = enabled.find((r) => r.type === type.type);
  const missing = row ? missingFields(accountOf(config, row)) : type.fields.filter((f) => f.required).map((f) => f.name);
  return missing.map((name) => type.legacy![name]!);
}
