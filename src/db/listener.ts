import pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_MS = 1_000;

/** What a `PgListener`'s owner does with what happens to its connection. */
export interface ListenerHooks {
  /** A notification on the channel, with its payload. */
  notified(payload: string | undefined): void;
  /** Listening, at first or again: whatever was notified while nobody listened is unknown. */
  listening(): void;
  /** The connection is lost (Postgres restarting, say); it is made again after a second. */
  lost(): void;
}

/**
 * One connection of a process that LISTENs on one channel, made again a second after it is lost,
 * until `close`. Its owner learns of each notification and of the connection's comings and goings
 * (`ListenerHooks`): the caller cache (`modules/auth/caller-cache.ts`) and the campaign progress
 * subscriptions (`modules/campaigns/progress-listener.ts`).
 */
export class PgListener {
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly channel: string,
    private readonly applicationName: string,
    private readonly hooks: ListenerHooks,
    private readonly log?: Logger,
    /** What the log says when the connection is lost. */
    private readonly lostMessage = `${channel} listener lost; listening again shortly`,
  ) {}

  /** Connects to `connectionString`'s database and listens; a failure is retried like a loss. */
  async listen(connectionString: string): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString, application_name: this.applicationName });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      if (err) this.log?.warn({ err }, this.lostMessage);
      this.client = null;
      this.hooks.lost();
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      this.scheduleReconnect(connectionString);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (msg) => this.hooks.notified(msg.payload));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      if (this.client === client) this.hooks.listening();
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

  /** Stops listening for good. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
