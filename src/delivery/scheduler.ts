import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { PgListener } from '../db/listener.js';
import { jsonRows, run } from '../db/statements.js';
import { sendQueued } from '../lib/metrics.js';
import type { Lane, Park } from './pace.js';
import { deferTurn, dropTurn, enqueueSends, nextReady, queueDepth, takeTurn } from './sql/engine.js';
import type { Channel } from './types.js';

/** A campaign's (or run's) channel with batches to send, as the queue holds it. */
export interface QueuedWork {
  orgId: string;
  campaignId: string;
  channel: Channel;
  lane: Lane;
}

type TurnRow = NonNullable<(typeof takeTurn)['row']>;

const LANE_NUMBERS: Record<Lane, number> = { transactional: 0, bulk: 1 };
const LANES_BY_NUMBER: Lane[] = ['transactional', 'bulk'];

/**
 * Queues work for the dispatchers (of every worker process): in `trx`, it is queued if and only if
 * the transaction commits; the dispatchers are woken on commit.
 */
export async function enqueue(db: Db | Knex.Transaction, work: QueuedWork[]): Promise<void> {
  if (!work.length) return;
  await run(db, enqueueSends, {
    rows: jsonRows(
      work.map((w) => ({
        organization_id: w.orgId,
        campaign_id: w.campaignId,
        channel: w.channel,
        lane: LANE_NUMBERS[w.lane],
      })),
    ),
  });
}

/** What serving a turn answers. */
export interface Served {
  /** Batches it claimed: none means the work is done (or all in other workers' hands). */
  batches: number;
  /** Where the next turn of this work in this process starts looking for batches (after the last one claimed). */
  next?: number;
  /** With no batch claimed: how long until the first batch that waits (for its recipients' sending hours or local time) comes due. */
  waitMs?: number;
}

/** A turn as the dispatcher hands it to `serve`. */
export interface Turn extends QueuedWork {
  /** Batches to claim at most: sized so that a turn lasts about `TURN_MS`. */
  maxBatches: number;
  /** Spends a wait for the rate: the slot serves other work meanwhile, and the work is not served again until then. */
  park: Park;
  /** How long throttled recipients are tried again (the lane's default: `engine.THROTTLED_FOR_MS`). */
  throttledForMs?: number;
  /** Where to start looking for batches: the last turn's `Served.next` (earlier ones are settled or in flight; none found there, it looks from the first). */
  from?: number;
}

/** How long a turn should last: what one organization's work can delay another's, per slot. */
const TURN_MS = 150;
const MAX_BATCHES = 64;
/** The first turn of an organization's channel in a process, before its pace is known: at most 1,600 recipients. */
const FIRST_BATCHES = 16;
const IDLE_POLL_MS = 1_000;

export interface DispatcherDeps {
  db: Db;
  log: Logger;
  connectionString: string;
  slots: number;
  serve(turn: Turn): Promise<Served>;
}

/**
 * The delivery engine's scheduler in a worker process: `slots` turns at once, each taken from the
 * queue in the order `takeTurn` gives (transactional lane first, then the organization served
 * longest ago), so one organization's campaign of any size delays another's by about one turn per
 * slot, and an organization alone is served in every slot. A turn claims at most a few batches
 * (about `TURN_MS` of work, learnt per organization and channel from its last turns), sends and settles
 * them; a turn waiting for its credential's rate gives its slot back while it waits. Idle slots are
 * woken by the queue's notification, and look again every second (and when a waiting row becomes
 * ready). A worker that dies leaves its batches to their lease; the campaign sweeper queues them again.
 */
export class Dispatcher {
  private stopping = false;
  private free: number;
  private readonly waiters: (() => void)[] = [];
  private readonly running = new Set<Promise<void>>();
  private idle: { promise: Promise<void>; wake: () => void } | null = null;
  private listener: PgListener | null = null;
  private loop: Promise<void> | null = null;
  private readonly sizes = new Map<string, number>();
  /** Per campaign channel: where its next turn in this process starts looking for batches. */
  private readonly cursors = new Map<string, number>();

  constructor(private readonly deps: DispatcherDeps) {
    this.free = deps.slots;
  }

  async start(): Promise<void> {
    this.listener = new PgListener(
      'herald_send',
      'herald-dispatcher',
      {
        notified: () => this.wake(),
        listening: () => this.wake(),
        lost: () => {},
      },
      this.deps.log,
    );
    await this.listener.listen(this.deps.connectionString);
    this.loop = this.run();
  }

  /** Stops taking turns; waits for the turns in progress up to `graceMs` (their batches' leases cover the rest). */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.listener?.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([this.loop, ...this.running]), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  private wake() {
    this.idle?.wake();
  }

  private async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private release() {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }

  private async run(): Promise<void> {
    let backoff = 0;
    while (!this.stopping) {
      await this.acquire();
      if (this.stopping) {
        this.release();
        break;
      }
      let turn: TurnRow | undefined;
      try {
        [turn] = await run(this.deps.db, takeTurn, {});
        backoff = 0;
      } catch (err) {
        this.release();
        backoff = Math.min(Math.max(backoff * 2, 500), 15_000);
        this.deps.log.warn({ err }, 'the send queue could not be read; trying again shortly');
        await this.sleepIdle(backoff);
        continue;
      }
      if (!turn) {
        this.release();
        await this.sleepIdle(await this.untilReady());
        continue;
      }
      const serving = this.serve(turn).finally(() => this.running.delete(serving));
      this.running.add(serving);
    }
  }

  /** How long an idle slot sleeps: until the first row waiting for its rate is ready, at most a second. */
  private async untilReady(): Promise<number> {
    try {
      const [row] = await run(this.deps.db, nextReady, {});
      const wait = row?.wait_ms;
      return wait === null || wait === undefined ? IDLE_POLL_MS : Math.min(IDLE_POLL_MS, Math.max(5, wait));
    } catch {
      return IDLE_POLL_MS;
    }
  }

  private sleepIdle(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (!this.idle) {
      let wake!: () => void;
      const promise = new Promise<void>((resolve) => (wake = resolve));
      this.idle = { promise, wake };
    }
    const idle = this.idle;
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([idle.promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => {
      clearTimeout(timer);
      if (this.idle === idle) {
        this.idle = null;
        idle.wake();
      }
    });
  }

  /** Serves one turn in the slot taken for it, and gives the slot back. */
  private async serve(row: TurnRow): Promise<void> {
    // Learnt per organization and channel: a credential's next campaign starts at its last one's size.
    const key = `${row.organization_id}:${row.channel}`;
    const maxBatches = this.sizes.get(key) ?? FIRST_BATCHES;
    const work: QueuedWork = {
      orgId: row.organization_id,
      campaignId: row.campaign_id,
      channel: row.channel as Channel,
      lane: LANES_BY_NUMBER[row.lane] ?? 'bulk',
    };
    const park: Park = async (ms) => {
      // Not served again before then, by this process or another; the slot serves other work meanwhile.
      run(this.deps.db, deferTurn, {
        campaignId: work.campaignId,
        channel: work.channel,
        waitMs: ms,
      }).catch(() => {});
      this.release();
      try {
        await new Promise<void>((resolve) => setTimeout(resolve, ms));
      } finally {
        await this.acquire();
      }
    };
    const started = Date.now();
    try {
      const cursor = `${work.campaignId}:${work.channel}`;
      const served = await this.deps.serve({ ...work, maxBatches, park, from: this.cursors.get(cursor) ?? 0 });
      if (this.cursors.size >= 10_000) this.cursors.clear();
      if (served.next !== undefined) this.cursors.set(cursor, served.next);
      if (!served.batches) {
        this.cursors.delete(cursor);
        if (served.waitMs !== undefined) {
          // Batches wait for their time: the row stays, not served again before then.
          await run(this.deps.db, deferTurn, { campaignId: work.campaignId, channel: work.channel, waitMs: served.waitMs });
          return;
        }
        await run(this.deps.db, dropTurn, {
          campaignId: work.campaignId,
          channel: work.channel,
          since: row.taken_at,
        });
        return;
      }
      // The next turn of this work: about TURN_MS of it, by how long this one took, waits for the rate
      // included (a paced turn stays small: its batches settle, and show progress, as they go).
      const busy = Math.max(1, Date.now() - started);
      const next = Math.round((served.batches * TURN_MS) / busy);
      if (this.sizes.size >= 10_000) this.sizes.clear();
      this.sizes.set(key, Math.max(1, Math.min(MAX_BATCHES, next, maxBatches * 4)));
      // More may be waiting: another slot may take it at once.
      this.wake();
    } catch (err) {
      this.deps.log.warn(
        { err, campaignId: work.campaignId, channel: work.channel },
        'a send turn failed; its batches are sent again once their lease runs out',
      );
    } finally {
      this.release();
    }
  }
}

/** The queue's depth by lane into `herald_send_queued` (at scrape time). */
export async function readSendQueue(db: Db): Promise<void> {
  const rows = await run(db, queueDepth, {});
  sendQueued.reset();
  for (const lane of LANES_BY_NUMBER) {
    const row = rows.find((r) => LANES_BY_NUMBER[r.lane] === lane);
    sendQueued.set({ lane, state: 'ready' }, row?.ready ?? 0);
    sendQueued.set({ lane, state: 'waiting' }, row?.waiting ?? 0);
  }
}
