import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // One log per channel per batch of at most 100 recipients. The recipients live in the log as a
  // JSON array written in one statement; the counts make the status filter an indexed comparison.
  await knex.raw(`
    CREATE TABLE message_logs (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL CHECK (channel IN ('sms', 'email', 'whatsapp')),
      sender_user_id uuid,
      sender_api_key_id uuid,
      campaign_id uuid,
      network text,
      recipients json NOT NULL,
      pending_count integer NOT NULL,
      success_count integer NOT NULL DEFAULT 0,
      failed_count integer NOT NULL DEFAULT 0,
      message_preview text NOT NULL,
      message_length integer NOT NULL,
      unit_cost numeric(14, 2) NOT NULL,
      reserved numeric(14, 2) NOT NULL DEFAULT 0,
      cost numeric(14, 2) NOT NULL DEFAULT 0,
      settled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX message_logs_org_created_idx ON message_logs (organization_id, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX message_logs_org_campaign_idx ON message_logs (organization_id, campaign_id, created_at DESC) WHERE campaign_id IS NOT NULL');
  await knex.raw('CREATE INDEX message_logs_unsettled_idx ON message_logs (organization_id, created_at) WHERE settled_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE message_logs');
}
