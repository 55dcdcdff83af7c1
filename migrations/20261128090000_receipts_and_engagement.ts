import type { Knex } from 'knex';

/**
 * Receipts and engagement (platform.md): what happens to a recipient after it was sent.
 *
 * - `message_logs.provider_ids`: each recipient's provider message id (SMS `messageid`, WhatsApp
 *   `wamid`, the email's `Message-ID`), by position; null for a log whose provider gave none (the
 *   sandbox, a send that failed). Receipts find their recipient by Herald's own reference (the
 *   `clientsmsid` / `biz_opaque_callback_data` derived from the log and position) in the log's
 *   primary key; a receipt that carries only the provider's id finds it through the GIN index.
 * - `recipient_receipts`: one row per recipient something happened to after the send, by (log,
 *   position): when it was delivered, read, opened, clicked, or why it was not delivered. Each
 *   timestamp is set once, so the campaign's counters move once per recipient however often and in
 *   whatever order its events arrive. A 1,000,000-recipient campaign has at most 1,000,000 rows.
 * - `message_events`: what happened, in order, for the outbound webhooks to deliver (issue 15) and
 *   the log to show: one narrow row per change (up to 3,000,000 for such a campaign), plus the
 *   scanners' opens and clicks, kept but not counted.
 * - `organizations.tracking`: whether ad hoc sends' emails track opens and clicks (on by default;
 *   campaign emails always do).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_logs ADD COLUMN provider_ids text[]');
  await knex.raw('CREATE INDEX message_logs_provider_ids_idx ON message_logs USING gin (organization_id, provider_ids) WHERE provider_ids IS NOT NULL');
  await knex.raw(`
    CREATE TABLE recipient_receipts (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      log_id uuid NOT NULL,
      position smallint NOT NULL,
      campaign_id uuid,
      delivered_at timestamptz,
      read_at timestamptz,
      opened_at timestamptz,
      clicked_at timestamptz,
      failed_at timestamptz,
      delivery_error text,
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, log_id, position),
      FOREIGN KEY (organization_id, log_id) REFERENCES message_logs (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw(`
    CREATE TABLE message_events (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      type text NOT NULL,
      log_id uuid NOT NULL,
      position smallint NOT NULL,
      campaign_id uuid,
      recipient text NOT NULL,
      occurred_at timestamptz NOT NULL,
      counted boolean NOT NULL DEFAULT true,
      data jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id),
      FOREIGN KEY (organization_id, log_id) REFERENCES message_logs (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw('CREATE INDEX message_events_org_log_idx ON message_events (organization_id, log_id, position)');
  await knex.raw('CREATE INDEX message_events_org_created_idx ON message_events (organization_id, created_at)');
  await knex.raw('ALTER TABLE organizations ADD COLUMN tracking boolean NOT NULL DEFAULT true');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE organizations DROP COLUMN tracking');
  await knex.raw('DROP TABLE message_events');
  await knex.raw('DROP TABLE recipient_receipts');
  await knex.raw('DROP INDEX message_logs_provider_ids_idx');
  await knex.raw('ALTER TABLE message_logs DROP COLUMN provider_ids');
}
