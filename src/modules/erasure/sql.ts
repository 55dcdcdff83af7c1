import { statement } from '../../db/statements.js';
import { hasRecipientSql } from '../../delivery/log-recipients.js';

/**
 * The steps of an erasure, in order: each one statement over one table, set-based, restricted to
 * the organization (on Citus, its shard), answering how many rows it changed. Each finds rows by
 * the address (`:address`, as a send stores it) or, where a step before it already put the token in
 * their place, by the token (`:token`); `:pattern` (tokens.ts `addressPattern`) finds the address
 * written in free text. A step run again finds nothing left to change: the erasure's job is
 * idempotent, and resumes by running its steps again from the first.
 */

type Params = { orgId: string; address: string; token: string; pattern: string };

/** SQL: the text expression with every written form of the address replaced by the token. */
const scrub = (text: string) => `regexp_replace(${text}, :pattern, :token, 'gi')`;
/** SQL: the same over each element of a text array, in order (null stays null). */
const scrubArray = (array: string) =>
  `CASE WHEN ${array} IS NULL THEN NULL ELSE ARRAY(SELECT ${scrub('x')} FROM unnest(${array}) WITH ORDINALITY AS u(x, o) ORDER BY o) END`;
/** SQL: the same over a JSON value's text (the token holds nothing JSON escapes). */
const scrubJson = (json: string, type: 'json' | 'jsonb') => `${scrub(`${json}::text`)}::${type}`;
/** SQL: whether the text holds a written form of the address. */
const holds = (text: string) => `${text} ~* :pattern`;

/** The logs sent to the person: by the address, or (once rewritten) by its token, through the addresses index. */
const personLogs = `SELECT m.id FROM message_logs m WHERE m.organization_id = :orgId AND (${hasRecipientSql('m.recipients', ':address')} OR ${hasRecipientSql('m.recipients', ':token')})`;

const step = (name: string, sql: string) => ({ name, statement: statement<Params, { changed: number }>(`herald_erasure_${name}`, `WITH changed AS (${sql} RETURNING 1) SELECT count(*)::int AS changed FROM changed`) });

export const ERASURE_STEPS = [
  step('contacts', `DELETE FROM contacts WHERE organization_id = :orgId AND (lower(email) = :address OR phone = :address)`),
  step(
    'message_logs',
    `UPDATE message_logs SET recipients = ${scrubJson('recipients', 'json')}, message_preview = ${scrub('message_preview')}
     WHERE organization_id = :orgId AND ${hasRecipientSql('recipients', ':address')}`,
  ),
  step(
    'recipient_receipts',
    `UPDATE recipient_receipts SET delivery_error = ${scrub('delivery_error')}, bounce_reason = ${scrub('bounce_reason')}
     WHERE organization_id = :orgId AND log_id IN (${personLogs}) AND (${holds('delivery_error')} OR ${holds('bounce_reason')})`,
  ),
  step(
    'message_events',
    `UPDATE message_events SET recipient = ${scrub('recipient')}, data = ${scrubJson('data', 'jsonb')}
     WHERE organization_id = :orgId AND log_id IN (${personLogs}) AND (${holds('recipient')} OR ${holds('data::text')})`,
  ),
  step(
    'sandbox_sends',
    `UPDATE sandbox_sends SET recipients = ${scrubArray('recipients')}, bodies = ${scrubArray('bodies')}, subjects = ${scrubArray('subjects')},
            errors = ${scrubArray('errors')}, body = ${scrub('body')}, subject = ${scrub('subject')}, headers = ${scrubJson('headers', 'jsonb')}
     WHERE organization_id = :orgId AND ${holds("array_to_string(recipients, ' ')")}`,
  ),
  step('webhook_events', `UPDATE webhook_events SET data = ${scrubJson('data', 'jsonb')} WHERE organization_id = :orgId AND ${holds('data::text')}`),
  step(
    'webhook_attempts',
    `UPDATE webhook_attempts SET response = ${scrub('response')}, error = ${scrub('error')}
     WHERE organization_id = :orgId AND (${holds('response')} OR ${holds('error')})`,
  ),
  step('contact_import_rows', `DELETE FROM contact_import_rows WHERE organization_id = :orgId AND (lower(email) = :address OR phone = :address OR match_key = :address)`),
  step(
    'contact_imports',
    `UPDATE contact_imports SET errors = ${scrubJson('errors', 'jsonb')}, merged_through = ${scrub('merged_through')}, file_name = ${scrub('file_name')}
     WHERE organization_id = :orgId AND (${holds('errors::text')} OR ${holds('merged_through')} OR ${holds('file_name')})`,
  ),
  step(
    'campaigns',
    `UPDATE campaigns SET manual_recipients = ${scrubArray('manual_recipients')}
     WHERE organization_id = :orgId AND ${holds("array_to_string(manual_recipients, ' ')")}`,
  ),
  step('campaign_batches', `UPDATE campaign_batches SET addresses = ${scrubArray('addresses')} WHERE organization_id = :orgId AND :address = ANY(addresses)`),
  step(
    'email_bounces',
    `UPDATE email_bounces SET address = :token, reason = ${scrub('reason')} WHERE organization_id = :orgId AND address = :address`,
  ),
  step('idempotency_keys', `UPDATE idempotency_keys SET response = ${scrubJson('response', 'json')} WHERE organization_id = :orgId AND ${holds('response::text')}`),
  // The audit log changes only here, with `herald.erasing` set in the step's transaction (see the migration).
  step('audit_log', `UPDATE audit_log SET details = ${scrubJson('details', 'jsonb')} WHERE organization_id = :orgId AND ${holds('details::text')}`),
  // The suppression survives, under the token: moved (unless the token is listed already), then the address's row removed.
  step(
    'suppressions_moved',
    `INSERT INTO suppressions (organization_id, channel, address, reason, bounce_type, detail, created_at)
     SELECT organization_id, channel, :token, reason, bounce_type, ${scrub('detail')}, created_at FROM suppressions
     WHERE organization_id = :orgId AND address = :address
     ON CONFLICT (organization_id, channel, address) DO NOTHING`,
  ),
  step('suppressions', `DELETE FROM suppressions WHERE organization_id = :orgId AND address = :address`),
] as const;

export const ERASURE_STEP_COUNT = ERASURE_STEPS.length;

/**
 * An erased email address stays suppressed, whether or not it was before: a person who asked to be
 * forgotten is not written to again by a campaign or a send to every contact.
 */
export const suppressErasedEmail = statement<{ orgId: string; token: string }, { changed: number }>(
  'herald_erasure_suppress',
  `WITH changed AS (
     INSERT INTO suppressions (organization_id, channel, address, reason) VALUES (:orgId, 'email', :token, 'erased')
     ON CONFLICT (organization_id, channel, address) DO NOTHING RETURNING 1)
   SELECT count(*)::int AS changed FROM changed`,
);
