/**
 * Work a request starts and answers before it ends: a reader's open or click is recorded after the
 * reader has its pixel or its redirect, since neither depends on the write. Each task is kept
 * until it settles, so that a stopping process finishes them before it closes its pool
 * (`settled`), and a test can wait for what its requests started. The tasks in flight are bounded:
 * past `limit`, `run` hands the task back to be awaited, so a request then waits for its own work
 * (and the load generator for the database) rather than memory growing without end.
 */
export class Background {
  private readonly going = new Set<Promise<void>>();

  /** `failed`: told of a task that rejected (a task is to report its own failures; this is the net under it). */
  constructor(
    private readonly failed: (err: unknown) => void,
    private readonly limit = 5_000,
  ) {}

  /**
   * Starts `task`. Returns undefined when the caller can answer at once, or the task's promise (which
   * never rejects) to await first when more than `limit` tasks are going.
   */
  run(task: () => Promise<void>): Promise<void> | undefined {
    const p: Promise<void> = task()
      .catch(this.failed)
      .finally(() => this.going.delete(p));
    this.going.add(p);
    return this.going.size > this.limit ? p : undefined;
  }

  /** How many tasks are going. */
  get size(): number {
    return this.going.size;
  }

  /** Resolves once every task started before or while waiting has settled. */
  async settled(): Promise<void> {
    while (this.going.size) await Promise.allSettled([...this.going]);
  }
}
