import type { Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config/config.js';
import type { Deps } from './context.js';
import { createDb, poolUse, type Db } from './db/database.js';
import { startEmbeddedPostgres, type EmbeddedServer } from './db/embedded.js';
import { migrateLatest } from './db/migrate.js';
import { moveCredentials } from './delivery/providers.js';
import { createDelivery } from './delivery/registry.js';
import { attachSubscriptions } from './graphql/subscriptions.js';
import { createApp } from './http/app.js';
import { serveMetrics, type MetricsServer } from './http/metrics.js';
import { readQueueDepth } from './jobs/metrics.js';
import { createQueue, migrateQueue } from './jobs/queue.js';
import { KILL_JOBS_AFTER_MS, startWorkerLanes, type Workers } from './jobs/worker.js';
import { readAtScrape, recordPoolUse, startProcessMetrics } from './lib/metrics.js';
import { Background } from './lib/background.js';
import { sendDispatcher, workerLanes } from './tasks.js';
import { readSendQueue, type Dispatcher } from './delivery/scheduler.js';
import { KeyUsage } from './modules/api-keys/usage.js';
import { CallerCache } from './modules/auth/caller-cache.js';
import { ProgressListener } from './modules/campaigns/progress-listener.js';
import { LoginThrottle } from './modules/auth/throttle.js';
import { TokenService } from './modules/auth/tokens.js';
import { Quotas } from './modules/quotas/quotas.js';
import { startBounceListener, type BounceListener } from './modules/bounces/listener.js';
import { syncBounces } from './modules/bounces/service.js';
import { providerReports } from './modules/receipts/webhooks.js';

export interface Herald {
  url: string;
  /** The `METRICS_PORT` listener's address, when it is set. */
  metricsUrl?: string;
  /** The bounce listener's port, when `BOUNCE_SMTP_PORT` is set. */
  bounceSmtpPort?: number;
  db: Db;
  deps: Deps;
  stop(): Promise<void>;
}

/** Structured JSON logs on stdout (or `destination`), credentials redacted. */
export function createLogger(config: Config, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    base: { service: 'herald' },
    redact: {
      paths: ['req.headers.authorization', 'req.headers["unified-api-key"]', 'req.headers.cookie', '*.password', '*.token', '*.key'],
      censor: '[REDACTED]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** The line a person at a terminal reads once Herald listens on `url`: where the console, the IDE and the docs are. */
export const readyLine = (url: string) => `Herald is ready: console ${url}/  GraphQL IDE ${url}/graphql  API docs ${url}/docs`;

export interface Runtime {
  deps: Deps;
  databaseUrl: string;
  workers: Workers | null;
  /** The `METRICS_PORT` listener, when it is set. */
  metrics: MetricsServer | null;
  /** The bounce domain's SMTP listener (`BOUNCE_SMTP_PORT`), when it is set. */
  bounceListener: BounceListener | null;
  close(): Promise<void>;
}

/**
 * Everything but HTTP: the database (embedded unless `DATABASE_URL` is set), migrations (Herald's and
 * the queue's), delivery, the queue, and — when `withWorkers` — the queue workers.
 */
export async function openRuntime(config: Config, log: Logger, withWorkers: boolean): Promise<Runtime> {
  let embedded: EmbeddedServer | null = null;
  let url = config.databaseUrl;
  if (!url) {
    // In a process group of its own: a terminal's Ctrl-C reaches Herald alone, whose shutdown
    // (entry.ts) drains and then stops it.
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), 'herald', { detached: true });
    url = embedded.url;
    log.info({ dataDir: config.dataDir }, 'embedded postgres started');
  }
  const db = createDb(url, config.poolMax, log);
  try {
    const applied = await migrateLatest(db);
    if (applied.length) log.info({ applied }, 'migrations applied');
    await migrateQueue(url, log);
  } catch (err) {
    await db.destroy();
    await embedded?.stop();
    throw err;
  }
  const queue = await createQueue(url, log);
  // Credentials kept as the single document of earlier versions become providers (once).
  const moved = await moveCredentials(db, config);
  if (moved) log.info({ organizations: moved }, 'credentials moved to providers');
  const delivery = await createDelivery(config, db, { onReport: providerReports(db), onBounce: syncBounces(db, config, log) });
  const deps: Deps = {
    config,
    db,
    log,
    throttle: new LoginThrottle(db),
    keyUsage: new KeyUsage(db, log),
    tokens: new TokenService(config.jwtSecret, config.jwtExpiresIn),
    delivery,
    queue,
    quotas: new Quotas(db, config.quotas),
    callers: new CallerCache(config.authCacheMs, log),
    progress: new ProgressListener(log),
    background: new Background((err) => log.error({ err }, 'a request’s background work failed')),
  };
  await deps.callers.listen(url);
  const { lanes, onStart } = workerLanes(deps);
  // This process's metrics: its pool and the queue are read when they are scraped.
  startProcessMetrics();
  // The pool is read first, before the queue's reading takes a connection of it.
  const unread = [
    readAtScrape(() => recordPoolUse(poolUse(db))),
    readAtScrape(readQueueDepth(db, lanes.flatMap((lane) => Object.keys(lane.tasks)))),
    readAtScrape(() => readSendQueue(db)),
  ];
  // Served before the workers start: a worker process's first jobs are in its metrics, and can be
  // scraped as soon as they have run (its lanes start one after another).
  const metrics = config.metricsPort === undefined ? null : await serveMetrics(config.metricsPort, config.host);
  const bounceListener = await startBounceListener(db, config, log);
  const lanesRunning = withWorkers ? await startWorkerLanes(deps, url, lanes, onStart) : null;
  let dispatcher: Dispatcher | null = null;
  if (lanesRunning) {
    dispatcher = sendDispatcher(deps, url);
    try {
      await dispatcher.start();
    } catch (err) {
      await lanesRunning.stop();
      throw err;
    }
  }
  const workers: Workers | null = lanesRunning && {
    async stop() {
      await Promise.all([dispatcher!.stop(KILL_JOBS_AFTER_MS), lanesRunning.stop()]);
    },
  };
  return {
    deps,
    databaseUrl: url,
    workers,
    metrics,
    bounceListener,
    async close() {
      await metrics?.close();
      await bounceListener?.close();
      unread.forEach((stop) => stop());
      // What requests left going (opens and clicks being recorded) is written before anything closes.
      await deps.background.settled();
      // Running jobs finish first; then nothing is left to use the pool.
      await workers?.stop();
      await queue.close();
      await deps.quotas.close();
      await deps.callers.close();
      await deps.progress.close();
      await delivery.close();
      await db.destroy();
      await embedded?.stop();
    },
  };
}

/**
 * Starts the whole service: the runtime and the HTTP server with both doors, and GraphQL
 * subscriptions over WebSocket on it. `stop()` closes the sockets and drains requests, then jobs,
 * then closes the pool and the embedded server.
 */
export async function startHerald(config: Config, log: Logger = createLogger(config)): Promise<Herald> {
  const runtime = await openRuntime(config, log, config.workers);
  const { deps } = runtime;
  const { app, close } = await createApp(deps);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  // Campaign changes are heard by the API processes alone, which have subscribers to tell.
  await deps.progress.listen(runtime.databaseUrl);
  const subscriptions = attachSubscriptions(server, deps);
  const { port } = server.address() as AddressInfo;
  // On an ephemeral port (PORT=0) without PUBLIC_URL, links in messages name the port it got.
  if (config.port === 0 && deps.config.publicUrl.endsWith(':0')) (deps.config as { publicUrl: string }).publicUrl = deps.config.publicUrl.replace(/:0$/, `:${port}`);
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

  // While stopping, every answer closes its connection so that keep-alive clients move on.
  let draining = false;
  server.on('request', (_req, res) => {
    if (draining) res.shouldKeepAlive = false;
  });

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop accepting connections and let in-flight requests finish. `http.Server#close` would
      // also drop at once every connection without a request in progress, including one just
      // accepted whose request has not been read yet: that client would see a reset. So the
      // listener alone is closed, quiet sockets get a second to speak, and only then are idle
      // ones dropped; anything still open after 8 s is cut.
      draining = true;
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      // Upgraded sockets count as the server's connections too: the listener closes after them.
      await subscriptions.close();
      const idle = setInterval(() => server.closeIdleConnections(), 1_000);
      const force = setTimeout(() => server.closeAllConnections(), 8_000);
      await closed;
      clearInterval(idle);
      clearTimeout(force);
      await close();
      await runtime.close();
    })());

  return { url: `http://${host}:${port}`, metricsUrl: runtime.metrics?.url, bounceSmtpPort: runtime.bounceListener?.port, db: deps.db, deps, stop };
}
