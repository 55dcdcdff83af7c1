import { Redis } from 'ioredis';
import { RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Db } from '../../db/database.js';
import { HttpError } from '../../lib/errors.js';

export interface QuotaConfig {
  requestsPerHour: number;
  messagesPerDay: number;
  redisUrl?: string;
}

/**
 * The interface's planned per-organization limits (requests per hour, messages per day), off unless
 * configured. Counters live where every API and worker process sees them: Postgres (the table
 * rate-limiter-flexible expects), or Redis when `REDIS_URL` is set.
 */
export class Quotas {
  private readonly requests: RateLimiterAbstract | null;
  private readonly messages: RateLimiterAbstract | null;
  private readonly redis: Redis | null;

  constructor(db: Db, config: QuotaConfig) {
    this.redis = config.redisUrl && (config.requestsPerHour || config.messagesPerDay) ? new Redis(config.redisUrl, { enableOfflineQueue: false, lazyConnect: false }) : null;
    const make = (keyPrefix: string, points: number, duration: number) => {
      if (!points) return null;
      return this.redis
        ? new RateLimiterRedis({ storeClient: this.redis, keyPrefix, points, duration })
        : new RateLimiterPostgres({ storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, keyPrefix, points, duration });
    };
    this.requests = make('quota_requests', config.requestsPerHour, 3600);
    this.messages = make('quota_messages', config.messagesPerDay, 86_400);
  }

  /** One request of the organization; 429 with the seconds to wait once the hour's allowance is spent. */
  async request(orgId: string): Promise<void> {
    if (this.requests) await consume(this.requests, orgId, 1, 'Request quota exceeded for this organization, try again later');
  }

  /** `count` messages of the organization; all or nothing. */
  async sendMessages(orgId: string, count: number): Promise<void> {
    if (this.messages && count > 0) await consume(this.messages, orgId, count, 'Daily message quota exceeded for this organization');
  }

  async close(): Promise<void> {
    this.redis?.disconnect();
  }
}

async function consume(limiter: RateLimiterAbstract, key: string, points: number, message: string): Promise<void> {
  try {
    await limiter.consume(key, points);
  } catch (err) {
    if (err instanceof RateLimiterRes) {
      // A refused consume still counted its points; give them back so the refusal costs nothing.
      await limiter.reward(key, points).catch(() => undefined);
      throw new HttpError(429, message, { retryAfter: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) });
    }
    throw err;
  }
}
