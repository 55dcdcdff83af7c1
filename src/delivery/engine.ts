import { sendInFlight } from '../lib/metrics.js';
import type { Lane, Pacer, PaceKey, Park } from './pace.js';
import type { DeliveryResult, DeliveryTarget } from './types.js';

/** Tries of a recipient whose failure is retryable but not throttling (timeouts, 5xx): the last one's answer stands. */
const ATTEMPTS = 3;
/**
 * How long a recipient of queued bulk work (a campaign's) that the provider keeps throttling is sent
 * again, at its credential's slowed rate and however many times, before it fails with the
 * provider's answer. A send whose caller waits for the answer (`0` here) tries a throttled recipient
 * like any retryable failure, `ATTEMPTS` times, its credential slowed down all the same.
 */
export const THROTTLED_FOR_MS: Record<Lane, number> = { bulk: 10 * 60_000, transactional: 0 };

/** What `transmit` needs: the credential's pacer, and how the provider's answers are labelled. */
export interface TransmitContext {
  pacer: Pacer;
  pace: PaceKey;
  lane: Lane;
  /** The provider (metrics). */
  provider: string;
  /** How a wait for the rate is spent (the dispatcher lends its slot meanwhile); a sleep by default. */
  park?: Park;
  /** How long throttled recipients are tried again (`THROTTLED_FOR_MS` by default). */
  throttledForMs?: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The engine's one way to a provider, for every send (ad hoc, test, campaign batch, run,
 * automation): calls `call` for `targets` at the credential's pace (paced sends go in slices, each
 * at its reserved time, unpaced ones at once), tries retryable failures again a few times with
 * backoff, and throttling answers again, without limit of tries, once the credential's rate (halved
 * for them) allows, until `throttledForMs`. Results come back in the order of `targets`.
 */
export async function transmit(
  ctx: TransmitContext,
  call: (targets: DeliveryTarget[]) => Promise<DeliveryResult[]>,
  targets: DeliveryTarget[],
): Promise<DeliveryResult[]> {
  const final: DeliveryResult[] = new Array(targets.length);
  if (!targets.length) return final;
  const tries = new Uint8Array(targets.length);
  const park = ctx.park ?? sleep;
  const throttledForMs = ctx.throttledForMs ?? THROTTLED_FOR_MS[ctx.lane];
  const gauge = { channel: ctx.pace.channel, lane: ctx.lane };
  let pending: number[] | null = null; // positions still to send; null: all of them
  let throttledSince: number | null = null;
  sendInFlight.inc(gauge, targets.length);
  try {
    for (;;) {
      const positions = pending;
      const count = positions ? positions.length : targets.length;
      const calls: Promise<[number, DeliveryResult[]]>[] = [];
      for (let from = 0; from < count;) {
        const size = ctx.pacer.sliceSize(ctx.pace, count - from);
        await ctx.pacer.acquire(ctx.pace, size, ctx.lane, park);
        const slice = positions
          ? positions.slice(from, from + size).map((i) => targets[i]!)
          : from === 0 && size === count
            ? targets
            : targets.slice(from, from + size);
        ctx.pacer.sent(ctx.pace, slice.length);
        const at = from;
        calls.push(call(slice).then((results) => [at, results]));
        from += size;
      }
      const retry: number[] = [];
      let throttled = 0;
      let backoff = false;
      for (const [at, results] of await Promise.all(calls)) {
        results.forEach((r, j) => {
          const i = positions ? positions[at + j]! : at + j;
          if (!r.ok && r.throttled) throttled++;
          if (!r.ok && r.throttled && throttledForMs > 0) {
            retry.push(i);
            final[i] = r; // its answer, should it be the last
          } else if (!r.ok && r.retryable && ++tries[i]! < ATTEMPTS) {
            backoff = true;
            retry.push(i);
            delete final[i]; // a throttling answer before this one is not its last
          } else final[i] = r;
        });
      }
      if (throttled) {
        await ctx.pacer.throttled(ctx.pace, ctx.provider, throttled);
        throttledSince ??= Date.now();
      }
      if (!retry.length) return final;
      if (throttledSince !== null && Date.now() - throttledSince > throttledForMs) {
        // Throttled for longer than the work may wait: the recipients still throttled fail with the
        // provider's answer; the others are tried again as usual.
        const kept = retry.filter((i) => !final[i]?.throttled);
        if (!kept.length) return final;
        retry.length = 0;
        retry.push(...kept);
      }
      pending = retry.sort((a, b) => a - b);
      if (backoff) {
        const attempt = Math.max(...retry.map((i) => tries[i]!));
        await park(200 * 2 ** (attempt - 1) * (0.5 + Math.random()));
      }
    }
  } finally {
    sendInFlight.dec(gauge, targets.length);
  }
}
