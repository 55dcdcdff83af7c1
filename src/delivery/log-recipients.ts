/**
 * How a message log stores its recipients (the `recipients` json column), the one home of that rule:
 * every writer encodes through here and every reader decodes through here, TypeScript and SQL alike.
 *
 * A recipient in its log's default state is stored as its bare address: `pending` while the log is
 * unsettled, `success` once it is settled. Any other recipient is an object with its status and
 * error. The API always shows the full `{ recipient, status, error? }`; large sends and campaigns
 * store a third of the JSON.
 */
export interface LogRecipient {
  recipient: string;
  status: string;
  error?: string;
}

export type StoredRecipient = string | LogRecipient;

/** A log holds at most this many recipients: one log per channel per batch of 100. */
export const MAX_LOG_RECIPIENTS = 100;

/** An unsettled log's recipients as stored, in JSON text: a recipient with `invalid` set failed before sending. */
export function pendingRecipientsJson(recipients: readonly { recipient: string; invalid?: string }[]): string {
  let json = '';
  for (const r of recipients) {
    if (json) json += ',';
    json += r.invalid ? JSON.stringify({ recipient: r.recipient, status: 'failed', error: r.invalid }) : JSON.stringify(r.recipient);
  }
  return `[${json}]`;
}

/** A settled log's recipients as stored. */
export function settledRecipients(outcomes: readonly LogRecipient[]): StoredRecipient[] {
  return outcomes.map((o) => (o.status === 'success' ? o.recipient : o));
}

/** A settled log's recipients as stored, in JSON text. */
export function settledRecipientsJson(outcomes: readonly LogRecipient[]): string {
  return JSON.stringify(settledRecipients(outcomes));
}

/** A log's stored recipients as the API shows them. */
export function expandRecipients(stored: readonly StoredRecipient[], settled: boolean): LogRecipient[] {
  const bare = settled ? 'success' : 'pending';
  return stored.map((r) => (typeof r === 'string' ? { recipient: r, status: bare } : r));
}

// The same rules for statements that write recipients in SQL.

/** SQL: a settled log's recipients when every one succeeded, from its addresses (a text[] expression). */
export const allSucceededSql = (addresses: string) => `array_to_json(${addresses})`;

/**
 * SQL: an unsettled log's recipients (a json expression) with every pending one failed with the
 * reason `error` (a text expression); a pending recipient is a bare address, or, in logs written
 * before that form, a pending object.
 */
export const pendingFailedSql = (recipients: string, error: string) => `(
  SELECT json_agg(CASE WHEN json_typeof(r) = 'string'
                       THEN json_build_object('recipient', r #>> '{}', 'status', 'failed', 'error', ${error})
                       WHEN r->>'status' = 'pending'
                       THEN json_build_object('recipient', r->>'recipient', 'status', 'failed', 'error', ${error})
                       ELSE r END)
  FROM json_array_elements(${recipients}) AS r)`;

/** A recipient of a settled log as a message event shows it: sent (with the provider's id when it gave one) or failed (with why). */
export type SettledOutcome = { recipient: string; position: number; providerMessageId?: string } | { recipient: string; position: number; error: string | null };

/**
 * A settled log's recipients that were sent (`sent`) or that failed, with their positions (from 1),
 * from its stored recipients (parsed JSON) and its provider ids (by position, or null): the
 * recipients of its `message.sent` and `message.failed` events (`outbox.ts`), as the JSON text of
 * `SettledOutcome[]`. Written as text, never as objects handed to `JSON.stringify`: every delivery
 * of a message event carries its log's 100 recipients, and building them as objects first was the
 * most CPU a delivery took in Herald beside its signature and its socket.
 */
export function settledOutcomesJson(stored: readonly StoredRecipient[], providerIds: readonly (string | null)[] | null, sent: boolean): string {
  let json = '';
  for (let i = 0; i < stored.length; i++) {
    const r = stored[i]!;
    let outcome: string;
    if (sent && (typeof r === 'string' || r.status === 'success')) {
      const providerMessageId = providerIds?.[i];
      const id = providerMessageId != null ? `,"providerMessageId":${JSON.stringify(providerMessageId)}` : '';
      outcome = `{"recipient":${JSON.stringify(typeof r === 'string' ? r : r.recipient)},"position":${i + 1}${id}}`;
    } else if (!sent && typeof r !== 'string' && r.status === 'failed') {
      outcome = `{"recipient":${JSON.stringify(r.recipient)},"position":${i + 1},"error":${JSON.stringify(r.error ?? null)}}`;
    } else continue;
    json += json ? `,${outcome}` : outcome;
  }
  return `[${json}]`;
}

/**
 * SQL: the addresses of a log's stored recipients (a json expression), as a text[] of every JSON
 * string in it: its JSON text cut at the double quotes, once the quote, comma, quote between two
 * strings is one quote (no piece for the comma: a log of 100 addresses is 102 pieces, not 201).
 * Whatever its form (bare, or an object's `recipient`), an address is a JSON string, and a
 * normalised address has no character JSON escapes, so it comes out whole (inside a JSON string a
 * quote is escaped, so `","` is only ever between two strings); the rest (brackets, keys, statuses,
 * error texts, cut wherever they hold an escaped quote) is never a normalised address, but for an
 * error text that is one and nothing else. Compared bytewise (`COLLATE "C"`): sorting the pieces in
 * the database's collation was most of writing a log's index entries. Built-in immutable functions
 * only: it is the expression of the index `message_logs_org_recipients_idx` (its migration,
 * 20261205090000, spells it out the same), which answers `@>` exactly, without reading the logs.
 */
export const logAddressesSql = (recipients: string) => `(string_to_array(replace((${recipients})::text, '","', '"'), '"') COLLATE "C")`;

/** SQL: whether a log's stored recipients (a json expression) include `address` (a text expression, normalised). */
export const hasRecipientSql = (recipients: string, address: string) => `${logAddressesSql(recipients)} @> ARRAY[${address}]::text[]`;
