import type { Logger } from 'pino';
import { operation } from '../../operation.js';
import type { CampaignDto, CampaignStatus } from './dto.js';
import { get } from './service.js';

/** The shortest time between two events of one subscription, while changes keep coming. */
export const PROGRESS_INTERVAL_MS = 250;

/** What a feed needs to know of what it watches. */
export interface Watched<T> {
  /** A state never left: the last event. */
  isFinal(state: T): boolean;
  /** What an event shows: an event is sent only when this differs from the last one's. */
  shown(state: T): string;
}

/** The statuses a campaign never leaves: the last event of its progress. */
const FINAL: ReadonlySet<CampaignStatus> = new Set(['completed', 'canceled']);

const CAMPAIGN: Watched<CampaignDto> = {
  isFinal: (c) => FINAL.has(c.status),
  shown: (c) => JSON.stringify([c.status, c.analytics, c.updatedAt]),
};

/**
 * A campaign's live progress (the `campaignProgress` subscription), authorized as `campaign(id)`
 * is (it reads the campaign through `get`): the state now, then the state after changes, the last
 * event with a final status. Subscribed to the process's `ProgressListener` before the first read,
 * so a change committed after that read is never missed.
 */
export const watch = operation({
  access: { role: 'any', apiKeys: true },
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<AsyncIterableIterator<CampaignDto>> {
    const feed = new ProgressFeed(() => get(ctx, undefined, { id }), ctx.log);
    feed.onEnd(ctx.progress.subscribe(ctx.caller.orgId, id, () => feed.changed()));
    await feed.start();
    return feed;
  },
});

/**
 * One subscriber's events (of a campaign, or of anything else `Watched` describes, such as a contact
 * import). Announcements mark the campaign changed; it is read again at most once
 * per `interval` (one read for however many announcements came meanwhile), and an event is sent
 * when what it shows changed. A subscriber slower than the events gets the newest state, never a
 * backlog. Once a final status is read nothing more is read, and iteration ends after that event.
 */
export class ProgressFeed<T = CampaignDto> implements AsyncIterableIterator<T> {
  /** The newest state not yet taken by the subscriber. */
  private pending: T | null = null;
  /** The subscriber waiting for the next event. */
  private taker: ((result: IteratorResult<T>) => void) | null = null;
  private last: string | null = null;
  private dirty = false;
  private reading = false;
  private timer: NodeJS.Timeout | null = null;
  private notBefore = 0;
  /** A final status was read: nothing more is read. */
  private finished = false;
  /** Iteration is over. */
  private closed = false;
  /** The last read failed: the next failure in a row is not logged again. */
  private failing = false;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    private readonly read: () => Promise<T>,
    private readonly log: Logger,
    private readonly interval = PROGRESS_INTERVAL_MS,
    private readonly watched: Watched<T> = CAMPAIGN as unknown as Watched<T>,
  ) {}

  /** Runs `cleanup` once nothing more is read (a final status, or the subscriber gone). */
  onEnd(cleanup: () => void): void {
    if (this.finished || this.closed) cleanup();
    else this.cleanups.push(cleanup);
  }

  /** Reads the state of the first event; rejects as that read does (the feed then ends). */
  async start(): Promise<void> {
    this.reading = true;
    try {
      this.show(await this.read());
    } catch (err) {
      this.end();
      throw err;
    } finally {
      this.reading = false;
      this.notBefore = Date.now() + this.interval;
    }
    this.schedule();
  }

  /** The campaign may have changed: it is read again, once the interval since the last read has passed. */
  changed(): void {
    this.dirty = true;
    this.schedule();
  }

  private schedule() {
    if (!this.dirty || this.reading || this.timer || this.finished || this.closed) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(0, this.notBefore - Date.now()));
  }

  private async tick() {
    this.timer = null;
    this.dirty = false;
    this.reading = true;
    try {
      const state = await this.read();
      this.failing = false;
      if (!this.closed) this.show(state);
    } catch (err) {
      // Postgres away, say: read again after the interval rather than end the subscription.
      if (!this.closed && !this.failing) this.log.warn({ err }, 'campaign progress read failed; reading again');
      this.failing = true;
      this.dirty = true;
    } finally {
      this.reading = false;
      this.notBefore = Date.now() + this.interval;
    }
    this.schedule();
  }

  private show(state: T) {
    const now = this.watched.shown(state);
    if (now === this.last) return;
    this.last = now;
    if (this.watched.isFinal(state)) this.finish();
    if (this.taker) {
      const taker = this.taker;
      this.taker = null;
      taker({ value: state, done: false });
    } else {
      this.pending = state;
    }
  }

  /** Nothing more is read: the timer and the subscription to announcements go. */
  private finish() {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  private end() {
    this.finish();
    this.closed = true;
    this.pending = null;
    this.taker?.({ value: undefined, done: true });
    this.taker = null;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.pending) {
      const value = this.pending;
      this.pending = null;
      return Promise.resolve({ value, done: false });
    }
    if (this.finished) {
      this.end();
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => (this.taker = resolve));
  }

  /** The subscriber is gone (it completed the subscription, or its socket closed). */
  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
