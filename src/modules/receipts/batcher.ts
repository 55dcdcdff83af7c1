import type { Db } from '../../db/database.js';
import { recordMany, type Outcome, type Receipt, type RecipientRef } from './service.js';

interface Waiting {
  orgId: string;
  ref: RecipientRef;
  receipt: Receipt;
  resolve: (outcome: Outcome) => void;
  reject: (err: unknown) => void;
}

/**
 * Records receipts that arrive one per request (readers' opens and clicks, a provider's webhook
 * calls) together: what arrives while earlier receipts are being written is written next, in one
 * `recordMany` per organization. A campaign's counters then move once per batch rather than once
 * per receipt, so concurrent receipts of one campaign no longer take turns on its row, one commit
 * each; a lone receipt is written at once, as it would be alone. Each caller gets its own
 * receipt's outcome, or the error of the statement that was to write it.
 */
export class ReceiptBatcher {
  private readonly waiting: Waiting[] = [];
  private writing = 0;
  private scheduled = false;

  /** `writers`: batches written at once; `maxBatch`: receipts in one batch. */
  constructor(
    private readonly db: Db,
    private readonly writers = 2,
    private readonly maxBatch = 500,
  ) {}

  /** Records a receipt (never a scanner's: `record` keeps those) with the others waiting. */
  record(orgId: string, ref: RecipientRef, receipt: Receipt): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ orgId, ref, receipt, resolve, reject });
      this.schedule();
    });
  }

  /** Starts the next batches after the current turn of the event loop, so requests read meanwhile join them. */
  private schedule(): void {
    if (this.scheduled || this.writing >= this.writers || !this.waiting.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.writing < this.writers && this.waiting.length) {
        const batch = this.waiting.splice(0, this.maxBatch);
        this.writing++;
        void this.write(batch).finally(() => {
          this.writing--;
          this.schedule();
        });
      }
    });
  }

  private async write(batch: Waiting[]): Promise<void> {
    const byOrganization = new Map<string, Waiting[]>();
    for (const w of batch) {
      const same = byOrganization.get(w.orgId);
      if (same) same.push(w);
      else byOrganization.set(w.orgId, [w]);
    }
    await Promise.all(
      [...byOrganization].map(async ([orgId, receipts]) => {
        try {
          const outcomes = await recordMany(this.db, orgId, receipts);
          receipts.forEach((w, i) => w.resolve(outcomes[i]!));
        } catch (err) {
          for (const w of receipts) w.reject(err);
        }
      }),
    );
  }
}
