/**
 * Parts handed from work that must run to its end (a send that reserved credits for every
 * recipient) to one reader that may stop reading (a client that goes away). At most `capacity`
 * parts wait for the reader: past that the work waits for room (`put`), so it goes no faster than
 * the reader takes its parts. Once the reader stops (its iterator returned), the parts waiting are
 * dropped and the work runs on without waiting, its parts dropped as they come.
 */
export class Relay<T> implements AsyncIterable<T> {
  private readonly parts: T[] = [];
  private ended = false;
  private failure: { error: unknown } | null = null;
  private reading = true;
  private wakeReader: (() => void) | null = null;
  private wakeWriter: (() => void) | null = null;

  constructor(private readonly capacity: number) {}

  /** Hands on a part; resolves once there is room for the next one (at once when the reader has stopped). */
  async put(part: T): Promise<void> {
    if (!this.reading) return;
    this.parts.push(part);
    this.wake('reader');
    while (this.reading && this.parts.length >= this.capacity) await new Promise<void>((resolve) => (this.wakeWriter = resolve));
  }

  /** No more parts: the reader ends once it has read those waiting. */
  end(): void {
    this.ended = true;
    this.wake('reader');
  }

  /** The work failed: the reader reads the parts waiting, then gets `error`. */
  fail(error: unknown): void {
    this.failure = { error };
    this.wake('reader');
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    try {
      for (;;) {
        if (this.parts.length) {
          const part = this.parts.shift()!;
          this.wake('writer');
          yield part;
        } else if (this.failure) {
          throw this.failure.error;
        } else if (this.ended) {
          return;
        } else {
          await new Promise<void>((resolve) => (this.wakeReader = resolve));
        }
      }
    } finally {
      // Read to the end, or stopped early: either way the work no longer waits for this reader.
      this.reading = false;
      this.parts.length = 0;
      this.wake('writer');
    }
  }

  private wake(who: 'reader' | 'writer') {
    const wake = who === 'reader' ? this.wakeReader : this.wakeWriter;
    if (who === 'reader') this.wakeReader = null;
    else this.wakeWriter = null;
    wake?.();
  }
}
