import type { DeliveryResult, DeliveryTarget } from './types.js';

const ATTEMPTS = 3;

/**
 * Calls a channel for `targets`, trying the retryable failures again a few times with exponential
 * backoff and jitter (final failures never). Results come back in the order of `targets` (tracked by
 * position, so a large send builds no map).
 */
export async function sendWithRetries(call: (targets: DeliveryTarget[]) => Promise<DeliveryResult[]>, targets: DeliveryTarget[]): Promise<DeliveryResult[]> {
  const final: DeliveryResult[] = new Array(targets.length);
  if (!targets.length) return final;
  let pending: number[] | null = null; // positions still to send; null: all of them
  for (let attempt = 1; ; attempt++) {
    const results = await call(pending ? pending.map((i) => targets[i]!) : targets);
    const retry: number[] = [];
    results.forEach((r, j) => {
      const i = pending ? pending[j]! : j;
      if (!r.ok && r.retryable && attempt < ATTEMPTS) retry.push(i);
      else final[i] = r;
    });
    if (!retry.length) return final;
    pending = retry;
    await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1) * (0.5 + Math.random())));
  }
}
