import { RateLimiterPostgres, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../../db/database.js';
import { tooManyRequests } from '../../lib/errors.js';

const WINDOW_SECONDS = 15 * 60;
const PER_EMAIL = 10;
const PER_ADDRESS = 100;

/**
 * Failed-login counters kept in Postgres (shared by every API process): 10 failures for one
 * email or 100 from one client address within 15 minutes lock further attempts until the
 * window passes.
 */
export class LoginThrottle {
  private readonly byEmail: RateLimiterPostgres;
  private readonly byAddress: RateLimiterPostgres;

  constructor(db: Db) {
    const common = { storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, duration: WINDOW_SECONDS };
    this.byEmail = new RateLimiterPostgres({ ...common, keyPrefix: 'login_email', points: PER_EMAIL });
    this.byAddress = new RateLimiterPostgres({ ...common, keyPrefix: 'login_ip', points: PER_ADDRESS });
  }

  /** Throws 429 with the seconds left when either counter is spent. */
  async check(email: string, address: string): Promise<void> {
    const [e, a] = await Promise.all([this.byEmail.get(email), this.byAddress.get(address)]);
    const blocked = [blockedFor(e, PER_EMAIL), blockedFor(a, PER_ADDRESS)].filter((s) => s > 0);
    if (blocked.length) throw tooManyRequests(Math.max(...blocked), 'Too many failed login attempts, try again later');
  }

  async failed(email: string, address: string): Promise<void> {
    await Promise.all([this.byEmail.penalty(email, 1), this.byAddress.penalty(address, 1)]);
  }

  async succeeded(email: string): Promise<void> {
    await this.byEmail.delete(email);
  }
}

function blockedFor(res: RateLimiterRes | null, limit: number): number {
  if (!res || res.consumedPoints < limit) return 0;
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}
