import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../../db/database.js';
import { tooManyRequests } from '../../lib/errors.js';

const WINDOW_SECONDS = 15 * 60;
const PER_EMAIL = 10;
const PER_ADDRESS = 100;
const CODES_PER_USER = 10;
const CODES_SPENT = 'Too many failed authentication codes, try again later';

/**
 * Failed-login counters kept in Postgres (shared by every API process): 10 failures for one
 * email or 100 from one client address within 15 minutes lock further attempts until the
 * window passes. Two-factor codes are counted the same way: 10 codes for one user without a right
 * one, or the address's 100 failures. The user's counter is its own, which a right password does not
 * reset, so that a known password never buys more guesses at the code.
 */
export class LoginThrottle {
  private readonly byEmail: RateLimiterPostgres;
  private readonly byAddress: RateLimiterPostgres;
  private readonly codesByUser: RateLimiterPostgres;

  constructor(db: Db) {
    const common = { storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, duration: WINDOW_SECONDS };
    this.byEmail = new RateLimiterPostgres({ ...common, keyPrefix: 'login_email', points: PER_EMAIL });
    this.byAddress = new RateLimiterPostgres({ ...common, keyPrefix: 'login_ip', points: PER_ADDRESS });
    this.codesByUser = new RateLimiterPostgres({ ...common, keyPrefix: 'mfa_user', points: CODES_PER_USER });
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

  /**
   * Counts an attempt at a two-factor code before it is checked (atomically, in the same statement
   * as the count, so that many codes sent at once are counted as many); throws 429 once the user's
   * attempts since their last right code, or the address's failures, are spent.
   */
  async codeAttempt(userId: string, address: string): Promise<void> {
    const blocked = blockedFor(await this.byAddress.get(address), PER_ADDRESS);
    if (blocked) throw tooManyRequests(blocked, CODES_SPENT);
    try {
      await this.codesByUser.consume(userId, 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw tooManyRequests(Math.max(1, Math.ceil(err.msBeforeNext / 1000)), CODES_SPENT);
      throw err;
    }
  }

  async codeFailed(address: string): Promise<void> {
    await this.byAddress.penalty(address, 1);
  }

  async codeSucceeded(userId: string): Promise<void> {
    await this.codesByUser.delete(userId);
  }
}

function blockedFor(res: RateLimiterRes | null, limit: number): number {
  if (!res || res.consumedPoints < limit) return 0;
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}
