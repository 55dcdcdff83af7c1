import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';

const WRITE_EVERY_MS = 60_000;

/**
 * Keeps `api_keys.last_used_at` without a write per request: each process writes a key's time
 * at most once a minute, so the value is accurate to about a minute.
 */
export class KeyUsage {
  private readonly written = new Map<string, number>();
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  touch(keyId: string): void {
    const now = Date.now();
    const last = this.written.get(keyId) ?? 0;
    if (now - last < WRITE_EVERY_MS) return;
    this.written.set(keyId, now);
    if (this.written.size > 100_000) this.written.clear();
    this.db('api_keys')
      .where({ id: keyId })
      .update({ last_used_at: this.db.raw("date_trunc('milliseconds', now())") })
      .catch((err: unknown) => this.log.warn({ err }, 'could not record API key use'));
  }
}
