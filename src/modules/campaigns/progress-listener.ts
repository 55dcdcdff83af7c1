import type { Logger } from 'pino';
import { PgListener } from '../../db/listener.js';
import { PROGRESS_CHANNEL } from '../../delivery/sql/progress.js';

/** Called when the campaign it was subscribed for may have changed. */
export type OnChange = () => void;

/**
 * The one connection of an API process (a `PgListener`) that listens for campaign changes (`PROGRESS_CHANNEL`,
 * announced on commit by whichever process made them) and hands each to the `campaignProgress`
 * subscribers of that campaign in this process. Subscribers re-read the campaign themselves, at
 * their own pace: an announcement carries no state.
 *
 * A lost connection (Postgres restarting) is made again after a second; announcements made
 * meanwhile are lost, so once it listens again every subscriber is told to re-read.
 */
export class ProgressListener {
  /** Subscribers by `<organizationId>:<campaignId>`, the announcements' payload. */
  private readonly subscribers = new Map<string, Set<OnChange>>();
  private readonly listener: PgListener;

  constructor(log?: Logger) {
    this.listener = new PgListener(
      PROGRESS_CHANNEL,
      'herald-progress',
      {
        notified: (payload) => this.dispatch(payload),
        // Whatever was announced while nobody listened is unknown: everyone looks again.
        listening: () => this.everyone(),
        lost: () => {},
      },
      log,
      'campaign progress listener lost; listening again shortly',
    );
  }

  /** Starts listening on `connectionString`'s database (an API process does; a worker needs not). */
  listen(connectionString: string): Promise<void> {
    return this.listener.listen(connectionString);
  }

  /**
   * Calls `onChange` after each announcement of the campaign, until the returned function is called.
   * Subscribe before reading the campaign: a change committed after that read is then never missed.
   */
  subscribe(orgId: string, campaignId: string, onChange: OnChange): () => void {
    const key = `${orgId}:${campaignId}`;
    let set = this.subscribers.get(key);
    if (!set) this.subscribers.set(key, (set = new Set()));
    set.add(onChange);
    return () => {
      set.delete(onChange);
      if (!set.size && this.subscribers.get(key) === set) this.subscribers.delete(key);
    };
  }

  private dispatch(payload: string | undefined) {
    for (const onChange of this.subscribers.get(payload ?? '') ?? []) onChange();
  }

  private everyone() {
    for (const set of this.subscribers.values()) for (const onChange of set) onChange();
  }

  /** Stops listening; subscribers are no longer called. */
  async close(): Promise<void> {
    this.subscribers.clear();
    await this.listener.close();
  }
}
