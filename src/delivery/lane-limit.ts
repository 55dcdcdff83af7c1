import pLimit, { type LimitFunction } from 'p-limit';
import type { SendOptions } from './types.js';

/**
 * Calls in flight to one provider account: bulk work (campaign batches, sends to everyone) at most
 * `capacity`, and transactional work (a one-time code, a test send) a quarter more of its own, so
 * that it never queues behind a campaign's calls, only behind other transactional ones, and a
 * campaign alone still uses the whole `capacity`.
 */
export class LaneLimit {
  private readonly all: LimitFunction;
  private readonly bulk: LimitFunction;

  constructor(capacity: number) {
    const reserved = Math.max(1, Math.ceil(capacity / 4));
    this.bulk = pLimit(Math.max(1, capacity));
    this.all = pLimit(Math.max(1, capacity) + reserved);
  }

  run<T>(options: SendOptions | undefined, fn: () => Promise<T>): Promise<T> {
    return options?.lane === 'transactional' ? this.all(fn) : this.bulk(() => this.all(fn));
  }
}

/**
 * A `LaneLimit` per provider account, made on first use and keyed by the account's credentials (a
 * wrong key never shares a real account's bound); forgotten all at once past 10,000 accounts.
 */
export function accountLimits(capacity: number): (...credentials: string[]) => LaneLimit {
  const limits = new Map<string, LaneLimit>();
  return (...credentials) => {
    const key = credentials.join('\u0000');
    let limit = limits.get(key);
    if (!limit) {
      if (limits.size >= 10_000) limits.clear();
      limits.set(key, (limit = new LaneLimit(capacity)));
    }
    return limit;
  };
}
