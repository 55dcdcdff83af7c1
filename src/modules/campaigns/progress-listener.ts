import pg from 'pg';
import type { Logger } from 'pino';
import { PROGRESS_CHANNEL } from '../../delivery/sql/progress.js';

const RECONNECT_MS = 1_000;

/** Called when the campaign it was subscribed for may have changed. */
export type OnChange = () => void;

/**
 * The one connection of an API process that listens for campaign changes (`PROGRESS_CHANNEL`,
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
  private listener: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly log?: Logger) {}

  /** Starts listening on `connectionString`'s database (an API process does; a worker needs not). */
  async listen(connectionString: string): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString, application_name: 'herald-progress' });
    const lost = (err?: Error) => {
      if (this.listener !== client) return;
      if (err) this.log?.warn({ err }, 'campaign progress listener lost; listening again shortly');
      this.listener = null;
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      this.scheduleReconnect(connectionString);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (msg) => this.dispatch(msg.payload));
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${PROGRESS_CHANNEL}`);
      // Whatever was announced while nobody listened is unknown: everyone looks again.
      if (this.listener === client) this.everyone();
    } catch (err) {
      lost(err as Error);
    }
  }

  private scheduleReconnect(connectionString: string) {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.listen(connectionString);
    }, RECONNECT_MS);
    this.retry.unref();
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
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.listener;
    this.listener = null;
    this.subscribers.clear();
    await client?.end().catch(() => {});
  }
}
