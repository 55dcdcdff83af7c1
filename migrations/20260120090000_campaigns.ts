import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE campaigns (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      name text NOT NULL,
      description text,
      type text NOT NULL CHECK (type IN ('broadcast', 'targeted', 'automated', 'recurring')),
      channels text[] NOT NULL,
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'scheduled', 'active', 'completed', 'canceled')),
      recipient_type text NOT NULL CHECK (recipient_type IN ('all', 'selected', 'group')),
      selected_contacts uuid[] NOT NULL DEFAULT '{}',
      selected_groups uuid[] NOT NULL DEFAULT '{}',
      manual_recipients text[] NOT NULL DEFAULT '{}',
      messages json NOT NULL,
      schedule_date timestamptz,
      sent integer NOT NULL DEFAULT 0,
      delivered integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      opened integer NOT NULL DEFAULT 0,
      clicked integer NOT NULL DEFAULT 0,
      total_recipients integer NOT NULL DEFAULT 0,
      created_by uuid,
      started_at timestamptz,
      completed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX campaigns_org_created_idx ON campaigns (organization_id, created_at DESC, id DESC)');

  // The materialised audience: one row per channel and address, claimed and settled by batch.
  await knex.raw(`
    CREATE TABLE campaign_recipients (
      organization_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL,
      address text NOT NULL,
      contact_id uuid,
      batch_no integer NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'canceled')),
      attempts integer NOT NULL DEFAULT 0,
      claimed_at timestamptz,
      error text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, campaign_id, id),
      UNIQUE (organization_id, campaign_id, channel, address),
      FOREIGN KEY (organization_id, campaign_id) REFERENCES campaigns (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw('CREATE INDEX campaign_recipients_batch_idx ON campaign_recipients (organization_id, campaign_id, channel, batch_no, status)');
  await knex.raw(`CREATE INDEX campaign_recipients_open_idx ON campaign_recipients (organization_id, campaign_id, status) WHERE status IN ('pending', 'sending')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE campaign_recipients');
  await knex.raw('DROP TABLE campaigns');
}
