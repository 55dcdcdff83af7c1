/**
 * Deletes (or changes) rows a batch at a time: runs `batch` until it answers fewer rows than
 * `limit`, and after each full batch rests `restFactor` times as long as it took, so the work takes
 * at most 1 / (1 + restFactor) of one connection's time and whatever runs beside it (sending) keeps
 * the machine. Each batch is one short statement: no lock is held for long. Answers the rows in all;
 * `onBatch` hears of each batch and how long it took.
 */
export async function inBatches(
  batch: () => Promise<number>,
  { limit, restFactor, onBatch }: { limit: number; restFactor: number; onBatch?: (rows: number, ms: number) => void },
): Promise<number> {
  let total = 0;
  for (;;) {
    const t0 = performance.now();
    const rows = await batch();
    const took = performance.now() - t0;
    onBatch?.(rows, took);
    total += rows;
    if (rows < limit) return total;
    await new Promise((resolve) => setTimeout(resolve, took * restFactor));
  }
}
