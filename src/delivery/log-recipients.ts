/**
 * How a message log stores its recipients (the `recipients` json column). A recipient in its log's
 * default state is stored as its bare address: `pending` while the log is unsettled, `success` once
 * it is settled. Any other recipient is an object with its status and error. The API always shows
 * the full `{ recipient, status, error? }`; large sends and campaigns store a third of the JSON.
 * (The sweepers' SQL reads the same form: `settleAbandoned` in pipeline.ts.)
 */
export interface LogRecipient {
  recipient: string;
  status: string;
  error?: string;
}

export type StoredRecipient = string | LogRecipient;

/** A settled log's recipients as stored, in JSON text. */
export function settledRecipientsJson(outcomes: readonly LogRecipient[]): string {
  return `[${outcomes.map((o) => JSON.stringify(o.status === 'success' ? o.recipient : o)).join(',')}]`;
}

/** A log's stored recipients as the API shows them. */
export function expandRecipients(stored: readonly StoredRecipient[], settled: boolean): LogRecipient[] {
  const bare = settled ? 'success' : 'pending';
  return stored.map((r) => (typeof r === 'string' ? { recipient: r, status: bare } : r));
}
