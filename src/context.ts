import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import type { Db } from './db/database.js';
import type { Loaders } from './loaders.js';
import type { LoginThrottle } from './modules/auth/throttle.js';
import type { KeyUsage } from './modules/api-keys/usage.js';
import type { TokenService } from './modules/auth/tokens.js';
import type { Delivery } from './delivery/registry.js';
import type { Queue } from './jobs/queue.js';
import type { Quotas } from './modules/quotas/quotas.js';
import type { CallerCache } from './modules/auth/caller-cache.js';
import type { ProgressListener } from './modules/campaigns/progress-listener.js';
import type { KeyRow, UserRow } from './modules/auth/authenticate.js';
import type { Caller } from './modules/auth/caller.js';
import type { Background } from './lib/background.js';

/** Process-wide parts, built once at start-up. */
export interface Deps {
  config: Config;
  db: Db;
  log: Logger;
  throttle: LoginThrottle;
  keyUsage: KeyUsage;
  tokens: TokenService;
  delivery: Delivery;
  queue: Queue;
  quotas: Quotas;
  /** The user and API-key rows authentication re-reads, kept briefly and dropped when they change. */
  callers: CallerCache<UserRow, KeyRow>;
  /** Announcements of campaign changes, for this process's `campaignProgress` subscribers (listening in API processes only). */
  progress: ProgressListener;
  /** Work requests started and answered before it ended (readers' opens and clicks): finished before the pool closes. */
  background: Background;
  /**
   * The time as recurring campaigns and two-factor codes read it: the wall clock unless a test sets
   * another (a fake clock). Jobs are queued at the wall-clock time that lies as far ahead as their
   * time does on it.
   */
  clock?: () => Date;
}

/** Everything one request carries; built once at the edge and shared by REST and GraphQL. */
export interface Context extends Deps {
  requestId: string;
  clientIp: string;
  loaders: Loaders;
  /** The request's `Idempotency-Key` header, when given. */
  idempotencyKey?: string;
  /** Resolves the request's credential once; null when none was given. */
  authenticate(): Promise<Caller | null>;
}

export interface AuthedContext extends Context {
  caller: Caller;
}
