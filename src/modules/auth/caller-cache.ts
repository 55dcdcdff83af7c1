import { PgListener } from '../../db/listener.js';
import type { Logger } from 'pino';

/** The Postgres channel the `users` and `api_keys` triggers notify (payload `u:<id>` or `k:<id>`). */
export const CALLER_CHANNEL = 'herald_callers';

const MAX_ENTRIES = 50_000;

interface Entry<Row> {
  row: Row | undefined;
  expires: number;
  /** The user or key id a notification names (for keys, the cache is keyed by hash). */
  id: string | undefined;
}

/**
 * The user and API-key rows that authentication re-reads, kept for at most `ttlMs` (decisions.md:
 * "cached briefly at most"). A change is seen at once, not after the TTL:
 *  - in this process, the service that made it calls `forgetUser` / `forgetKey` after its commit;
 *  - in every other process, a trigger on `users` and `api_keys` notifies `herald_callers` on commit,
 *    and the listener here drops the entry (loopback latency, well under a millisecond).
 * While the listener is not connected (start-up, Postgres restarting) nothing is cached, so a missed
 * notification can never keep a revoked credential alive; the TTL bounds only a notification lost in
 * flight. A lookup that began before an eviction never stores its (possibly older) row.
 */
export class CallerCache<UserRow, KeyRow> {
  private readonly users = new Map<string, Entry<UserRow>>();
  private readonly keys = new Map<string, Entry<KeyRow>>();
  private listening = false;
  private readonly listener: PgListener;
  /** Bumped by every eviction: a lookup stores its row only if none happened while it ran. */
  private epoch = 0;

  constructor(
    private readonly ttlMs: number,
    log?: Logger,
  ) {
    this.listener = new PgListener(
      CALLER_CHANNEL,
      'herald-callers',
      {
        notified: (payload) => this.onNotification(payload),
        listening: () => {
          this.clear();
          this.listening = true;
        },
        lost: () => this.stopCaching(),
      },
      log,
      'caller cache listener lost; caching off until it is back',
    );
  }

  get enabled(): boolean {
    return this.ttlMs > 0 && this.listening;
  }

  /** Starts listening for changes on `connectionString`'s database; caching starts once it listens. */
  async listen(connectionString: string): Promise<void> {
    if (this.ttlMs <= 0) return;
    await this.listener.listen(connectionString);
  }

  private onNotification(payload: string | undefined) {
    if (!payload) return this.clear();
    const id = payload.slice(2);
    if (payload.startsWith('u:')) this.forgetUser(id);
    else if (payload.startsWith('k:')) this.forgetKey(id);
    else this.clear();
  }

  private stopCaching() {
    this.listening = false;
    this.clear();
  }

  clear() {
    this.epoch++;
    this.users.clear();
    this.keys.clear();
  }

  forgetUser(id: string) {
    this.epoch++;
    this.users.delete(id);
  }

  forgetKey(id: string) {
    this.epoch++;
    for (const [hash, entry] of this.keys) if (entry.id === id) this.keys.delete(hash);
  }

  /** The user row, from the cache or from `load` (a missing row is remembered too). */
  user(id: string, load: () => Promise<UserRow | undefined>): Promise<UserRow | undefined> {
    return this.through(this.users, id, load, () => id);
  }

  /** The active key with this hash, from the cache or from `load`. */
  key(hash: string, load: () => Promise<KeyRow | undefined>, idOf: (row: KeyRow) => string): Promise<KeyRow | undefined> {
    return this.through(this.keys, hash, load, (row) => (row ? idOf(row) : undefined));
  }

  private async through<Row>(
    map: Map<string, Entry<Row>>,
    key: string,
    load: () => Promise<Row | undefined>,
    idOf: (row: Row | undefined) => string | undefined,
  ): Promise<Row | undefined> {
    if (!this.enabled) return load();
    const now = Date.now();
    const hit = map.get(key);
    if (hit && hit.expires > now) return hit.row;
    const epoch = this.epoch;
    const row = await load();
    if (this.enabled && epoch === this.epoch) {
      if (map.size >= MAX_ENTRIES) map.clear();
      map.set(key, { row, expires: now + this.ttlMs, id: idOf(row) });
    }
    return row;
  }

  async close(): Promise<void> {
    this.stopCaching();
    await this.listener.close();
  }
}
