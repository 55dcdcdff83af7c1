import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (platform.md, "GET /metrics"): one registry per process, here at
 * the bottom so that every layer (the doors, delivery, jobs, the modules) records into it without
 * anything being passed down. Labels are low-cardinality by construction: route templates, root field
 * names, channels, task names and outcomes, never an id, an address or a client's free text.
 * Served by `src/http/metrics.ts`.
 */
export const registry = new Registry();

/** The content type of `metricsText()` (the Prometheus text format, 0.0.4). */
export const METRICS_CONTENT_TYPE = registry.contentType;

const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const httpRequestDuration = new Histogram({
  name: 'herald_http_request_duration_seconds',
  help: 'HTTP requests answered, by method, route template (unmatched for paths no route knows) and status class',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: REQUEST_BUCKETS,
  registers: [registry],
});

export const graphqlOperationDuration = new Histogram({
  name: 'herald_graphql_operation_duration_seconds',
  help: 'GraphQL operations over HTTP, by type and root field (invalid for documents refused before execution), and outcome',
  labelNames: ['type', 'operation', 'outcome'] as const,
  buckets: REQUEST_BUCKETS,
  registers: [registry],
});

export const messagesTotal = new Counter({
  name: 'herald_messages_total',
  help: 'Recipients settled by this process, by channel, outcome (success, failed) and kind (adhoc, campaign, test)',
  labelNames: ['channel', 'outcome', 'kind'] as const,
  registers: [registry],
});

export const providerRequestDuration = new Histogram({
  name: 'herald_provider_request_duration_seconds',
  help: 'Calls of a channel adapter for a batch of recipients (an ad hoc send batch of up to 100, a campaign chunk), each retry a call of its own, by channel and provider',
  labelNames: ['channel', 'provider'] as const,
  buckets: REQUEST_BUCKETS,
  registers: [registry],
});

export const providerErrorsTotal = new Counter({
  name: 'herald_provider_errors_total',
  help: 'Recipients a provider call failed, by channel, provider and reason (retryable, final, exception)',
  labelNames: ['channel', 'provider', 'reason'] as const,
  registers: [registry],
});

export const providerThrottles = new Counter({
  name: 'herald_provider_throttled_total',
  help: 'Recipients a provider answered with throttling (HTTP 429, WhatsApp 130429/131056/80007, SMTP 421/450/451/452, the gateway\'s try-later code), each slowing its credential down and sent again later, by channel and provider',
  labelNames: ['channel', 'provider'] as const,
  registers: [registry],
});

export const providerCircuitsOpen = new Gauge({
  name: 'herald_provider_circuits_open',
  help: "Providers this process sends nothing to while their circuit is open (or half-open, probing), by channel, provider type and state",
  labelNames: ['channel', 'provider', 'state'] as const,
  registers: [registry],
});

export const providerCircuitChanges = new Counter({
  name: 'herald_provider_circuit_changes_total',
  help: "Changes of a provider's circuit in this process, by channel, provider type and the state it went to",
  labelNames: ['channel', 'provider', 'state'] as const,
  registers: [registry],
});

export const providerFailovers = new Counter({
  name: 'herald_provider_failovers_total',
  help: 'Recipients handed to the next provider of their channel, by channel and the provider type they left',
  labelNames: ['channel', 'provider'] as const,
  registers: [registry],
});

export const inboundReports = new Counter({
  name: 'herald_inbound_reports_total',
  help: 'Bounces and complaints recorded (bounce-hard, bounce-soft, complaint), and mail to the bounce listener that was none (unreadable) or named no recipient Herald has (unknown)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const paceWaits = new Counter({
  name: 'herald_send_rate_waits_total',
  help: 'Sends of this process that waited for their credential\'s rate before going out, by channel and lane (transactional, bulk)',
  labelNames: ['channel', 'lane'] as const,
  registers: [registry],
});

export const paceWaitSeconds = new Counter({
  name: 'herald_send_rate_wait_seconds_total',
  help: 'Time sends of this process waited for their credential\'s rate, by channel and lane',
  labelNames: ['channel', 'lane'] as const,
  registers: [registry],
});

export const sendInFlight = new Gauge({
  name: 'herald_send_in_flight',
  help: 'Recipients this process is sending now (claimed, with the provider or waiting for their rate), by channel and lane',
  labelNames: ['channel', 'lane'] as const,
  registers: [registry],
});

export const sendQueued = new Gauge({
  name: 'herald_send_queued',
  help: 'Campaign channels queued for sending at scrape time, by lane and state (ready: to be served, waiting: for their credential\'s rate); the whole cluster',
  labelNames: ['lane', 'state'] as const,
  registers: [registry],
});

export const queueJobs = new Gauge({
  name: 'herald_queue_jobs',
  help: 'Jobs in the queue at scrape time, by task and state (waiting: due, scheduled: later, locked: running, failed: out of attempts); the whole cluster, the same in every process',
  labelNames: ['task', 'state'] as const,
  registers: [registry],
});

export const jobDuration = new Histogram({
  name: 'herald_job_duration_seconds',
  help: 'Queue jobs run by this process, by task and outcome (success, failure)',
  labelNames: ['task', 'outcome'] as const,
  buckets: JOB_BUCKETS,
  registers: [registry],
});

export const webhookDeliveriesTotal = new Counter({
  name: 'herald_webhook_deliveries_total',
  help: 'Webhook delivery attempts, by outcome (success; retry: failed, tried again later; failed: failed for good)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const dbPoolConnections = new Gauge({
  name: 'herald_db_pool_connections',
  help: "This process's database pool at scrape time: connections used and free, and requests pending for one",
  labelNames: ['state'] as const,
  registers: [registry],
});

export const dbPoolMax = new Gauge({
  name: 'herald_db_pool_max_connections',
  help: 'The most connections the database pool opens (DATABASE_POOL_MAX)',
  registers: [registry],
});

let processMetrics = false;

/** The standard process and Node.js metrics (CPU, memory, event loop lag, GC), once per process. */
export function startProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry });
}

/** Readings taken when metrics are asked for: the queue's depth, the pool's use. */
const readers = new Set<() => Promise<void> | void>();
/** A reading that has not answered by then is left out of the scrape (the database may be away). */
const READ_TIMEOUT_MS = 2000;

/** Runs `read` before each scrape (it sets its gauges); the function returned stops that. */
export function readAtScrape(read: () => Promise<void> | void): () => void {
  readers.add(read);
  return () => void readers.delete(read);
}

/** Every metric in the Prometheus text format, the scrape-time readings taken first. */
export async function metricsText(): Promise<string> {
  await Promise.all(
    [...readers].map((read) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, READ_TIMEOUT_MS)));
      return Promise.race([Promise.resolve().then(read), timeout])
        .catch(() => undefined)
        .finally(() => clearTimeout(timer));
    }),
  );
  return registry.metrics();
}

/** Seconds since `start` (a `process.hrtime.bigint()` reading). */
export const secondsSince = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

/** The class of an HTTP status, `2xx` for 204: the label a status is recorded under. */
export const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;

/** Counts recipients settled in `herald_messages_total`. */
export function countSettled(channel: string, kind: 'adhoc' | 'campaign' | 'test', success: number, failed: number): void {
  if (success) messagesTotal.inc({ channel, outcome: 'success', kind }, success);
  if (failed) messagesTotal.inc({ channel, outcome: 'failed', kind }, failed);
}

/** Sets the pool gauges from a reading of the pool (none once it is destroyed). */
export function recordPoolUse(use: { used: number; free: number; pending: number; max: number } | null): void {
  dbPoolConnections.reset();
  dbPoolMax.reset();
  if (!use) return;
  dbPoolConnections.set({ state: 'used' }, use.used);
  dbPoolConnections.set({ state: 'free' }, use.free);
  dbPoolConnections.set({ state: 'pending' }, use.pending);
  dbPoolMax.set(use.max);
}
