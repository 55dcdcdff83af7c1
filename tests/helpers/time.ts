/**
 * Time in tests, in one place. A test waits for what it expects to happen (`waitFor`), never for a
 * guessed while; and it proves that something does not happen by watching it for a short while
 * (`expectQuiet`, at most half a second) or through a clock it controls, never by sleeping long.
 */

/** Resolves after `ms`: for a pause a test needs for itself (distinct timestamps, a throttle's window), not to wait for Herald. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls `fn` every 100 ms until `ok` holds of its value or `ms` have passed; returns the last value. */
export async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await sleep(100);
  }
}

/**
 * Proves that nothing happens for a while: reads `read` now and every `every` ms for `ms` (at most
 * 500) and fails at once if a reading differs from the first (compared as `toEqual` does), answering
 * the reading otherwise. For "this was not sent again", "the count stays": call it after what could
 * have caused the change has had its chance (a waitFor on what *did* happen, or a clock moved on).
 *
 *   await expectQuiet(() => receiver.count());
 */
export async function expectQuiet<T>(read: () => T | Promise<T>, { ms = 500, every = 50 }: { ms?: number; every?: number } = {}): Promise<T> {
  if (ms > 500) throw new Error(`expectQuiet watches for at most 500 ms, not ${ms}: prove longer quiet with a clock`);
  const first = await read();
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await sleep(Math.min(every, Math.max(0, end - Date.now())));
    const now = await read();
    expect(now).toEqual(first);
  }
  return first;
}
