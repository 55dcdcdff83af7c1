import type { Db } from '../db/database.js';
import { run } from '../db/statements.js';
import { paceWaitSeconds, paceWaits, providerThrottles } from '../lib/metrics.js';
import { reservePace, slowPace } from './sql/engine.js';
import type { Channel } from './types.js';

/** Which work a send is: `transactional` (a send to given recipients, a test send, an automated message) goes before `bulk`. */
export type Lane = 'transactional' | 'bulk';

/** A channel credential as it is paced: an organization's channel, and the rate it is set to (null: unpaced). */
export interface PaceKey {
  orgId: string;
  channel: Channel;
  /** The provider account it is of (none: the channel as a whole, as sandbox delivery paces it). */
  provider?: string;
  configured: number | null;
}

/** The row of `send_pace` a credential is paced by: its channel, and its provider's id after a colon. */
export const paceRow = (key: PaceKey) => (key.provider ? `${key.channel}:${key.provider}` : key.channel);

/**
 * How much earlier than the bulk work queued before it transactional work may start: it never waits
 * longer than this for a campaign of its own credential, and the rate is exceeded, over any second,
 * by at most this share of it.
 */
export const AHEAD_SECONDS = 0.05;
/** How late a bulk reservation may be and keep its place (timers fire late): the rate is kept on average. */
const SLACK_SECONDS = 0.01;
/** A paced send goes out in slices of this long at its rate: the grain of the pace. */
const SLICE_SECONDS = 0.05;
/** The slowest a credential is ever slowed to by throttling answers, in messages a second. */
const FLOOR_RATE = 0.2;
/** How long an unpaced credential is taken to be unpaced before the database is asked again. */
const UNPACED_FOR_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits `ms`; the dispatcher's version gives its slot to other work meanwhile. */
export type Park = (ms: number) => Promise<void>;

/**
 * Paces sends to each channel credential across every process, by the rate in `send_pace` (see
 * `reservePace`): `acquire` resolves when `n` messages may go. A credential with no rate (and not
 * slowed by throttling) costs one statement a second per process, not one per send. `throttled`
 * halves the credential's rate (additive increase brings it back).
 */
export class Pacer {
  /** Per credential: until when it is known unpaced, or its last known rate. */
  private readonly known = new Map<string, { unpacedUntil: number; rate: number | null }>();
  /** Per credential: when this process last sent a slice at its rate, and how long that slice takes at it. */
  private readonly lastSlice = new Map<string, { at: number; ms: number }>();
  /** Per credential: messages this process handed to the provider, by second, for the last two seconds. */
  private readonly sentBySecond = new Map<string, { second: number; count: number; previous: number }>();

  constructor(private readonly db: Db) {}

  /** Messages per slice for the credential at its last known rate (all of `remaining` when unpaced). */
  sliceSize(key: PaceKey, remaining: number): number {
    const known = this.known.get(id(key));
    if (!known) return key.configured ? Math.min(remaining, sliceOf(key.configured)) : remaining;
    if (known.rate === null) return remaining;
    return Math.min(remaining, sliceOf(known.rate));
  }

  /**
   * Resolves when `n` messages of `key` may go: at once for an unpaced credential; else at the time
   * reserved for them, after waiting (`park`) for bulk work's turn at the rate. Answers the rate.
   */
  async acquire(key: PaceKey, n: number, lane: Lane, park: Park = sleep): Promise<number | null> {
    const k = id(key);
    const known = this.known.get(k);
    if (!key.configured && known && known.rate === null && known.unpacedUntil > Date.now()) return null;
    let waited = 0;
    for (;;) {
      const [row] = await run(this.db, reservePace, {
        orgId: key.orgId,
        channel: paceRow(key),
        configured: key.configured,
        n,
        transactional: lane === 'transactional',
        aheadSeconds: AHEAD_SECONDS,
        slackSeconds: SLACK_SECONDS,
      });
      const rate = row!.rate;
      this.known.set(k, {
        rate,
        unpacedUntil: rate === null ? Date.now() + UNPACED_FOR_MS : 0,
      });
      if (rate === null) return null;
      const ms = Math.max(0, row!.start_ms);
      if (row!.reserved) {
        // A slice reserved on time may still go out late (a slow round trip, a busy event loop); the
        // next one then never follows it closer than the rate, so slices do not bunch at the provider.
        const last = this.lastSlice.get(k);
        const wait = Math.max(ms, last ? last.at + last.ms - Date.now() : 0);
        if (wait > 0) await park(wait);
        waited += wait;
        if (this.lastSlice.size >= 10_000) this.lastSlice.clear();
        this.lastSlice.set(k, { at: Date.now(), ms: (n / rate) * 1000 });
        this.record(key, lane, waited);
        return rate;
      }
      // Bulk work waits for its turn at the rate; at least a millisecond, never a busy loop.
      const wait = Math.max(1, ms);
      waited += wait;
      await park(wait);
    }
  }

  /** The provider answered with throttling: the credential slows down (see `slowPace`). */
  async throttled(key: PaceKey, provider: string, answers: number): Promise<void> {
    providerThrottles.inc({ channel: key.channel, provider }, answers);
    const [row] = await run(this.db, slowPace, {
      orgId: key.orgId,
      channel: paceRow(key),
      configured: key.configured,
      observed: Math.max(1, this.observed(key)),
      floor: FLOOR_RATE,
    });
    this.known.set(id(key), { rate: row?.rate ?? null, unpacedUntil: 0 });
  }

  /** Counts messages handed to the provider (what an unpaced credential is slowed from). */
  sent(key: PaceKey, n: number) {
    const k = id(key);
    const second = Math.floor(Date.now() / 1000);
    const s = this.sentBySecond.get(k);
    if (!s) {
      if (this.sentBySecond.size >= 10_000) this.sentBySecond.clear();
      this.sentBySecond.set(k, { second, count: n, previous: 0 });
    } else if (s.second === second) s.count += n;
    else {
      s.previous = s.second === second - 1 ? s.count : 0;
      s.second = second;
      s.count = n;
    }
  }

  /** About what this process sent on `key` over the last second. */
  private observed(key: PaceKey): number {
    const s = this.sentBySecond.get(id(key));
    if (!s) return 0;
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (s.second < second - 1) return 0;
    if (s.second === second - 1) return s.count * (1 - (now % 1000) / 1000);
    return s.count + s.previous * (1 - (now % 1000) / 1000);
  }

  private record(key: PaceKey, lane: Lane, waitedMs: number) {
    if (waitedMs <= 0) return;
    paceWaits.inc({ channel: key.channel, lane });
    paceWaitSeconds.inc({ channel: key.channel, lane }, waitedMs / 1000);
  }
}

const id = (key: PaceKey) => `${key.orgId}:${paceRow(key)}`;
const sliceOf = (rate: number) => Math.max(1, Math.min(100, Math.floor(rate * SLICE_SECONDS)));
