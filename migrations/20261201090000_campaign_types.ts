import type { Knex } from 'knex';

/**
 * Campaign types that act. A recurring campaign carries its rule and the time of its next run; an
 * automated one its trigger and delay. Each send of either is a run: a campaign row of its own
 * (`parent_id` naming the campaign) that goes through the one send path (audience, batches,
 * credits, logs) and can fail as a whole (`failed`, with `failure_reason`). A recurring run is
 * identified by its campaign and time (the unique index), so a time runs once however many workers
 * fire it. `campaign_triggers` holds each contact an automated campaign was triggered for, once
 * (its key), due at the trigger time plus the delay.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE campaigns
      ADD COLUMN parent_id uuid,
      ADD COLUMN recurrence jsonb,
      ADD COLUMN next_run_at timestamptz,
      ADD COLUMN trigger_event text CHECK (trigger_event IN ('contact.created', 'contact.added_to_group')),
      ADD COLUMN trigger_group_id uuid,
      ADD COLUMN trigger_delay text,
      ADD COLUMN failure_reason text,
      ADD FOREIGN KEY (organization_id, parent_id) REFERENCES campaigns (organization_id, id) ON DELETE CASCADE`);
  await knex.raw(`ALTER TABLE campaigns DROP CONSTRAINT campaigns_status_check`);
  await knex.raw(`ALTER TABLE campaigns ADD CONSTRAINT campaigns_status_check
                    CHECK (status IN ('draft', 'scheduled', 'active', 'completed', 'canceled', 'failed'))`);
  await knex.raw(`CREATE UNIQUE INDEX campaigns_recurring_run_idx ON campaigns (organization_id, parent_id, schedule_date)
                    WHERE parent_id IS NOT NULL AND type = 'recurring'`);
  await knex.raw(`CREATE INDEX campaigns_runs_idx ON campaigns (organization_id, parent_id, created_at DESC, id DESC) WHERE parent_id IS NOT NULL`);
  await knex.raw(`CREATE INDEX campaigns_listed_idx ON campaigns (organization_id, created_at DESC, id DESC) WHERE parent_id IS NULL`);
  await knex.raw(`CREATE INDEX campaigns_automated_idx ON campaigns (organization_id, trigger_event)
                    WHERE status = 'active' AND type = 'automated' AND parent_id IS NULL`);
  await knex.raw(`
    CREATE TABLE campaign_triggers (
      organization_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      contact_id uuid NOT NULL,
      due_at timestamptz NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'queued', 'canceled')),
      run_id uuid,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, campaign_id, contact_id),
      FOREIGN KEY (organization_id, campaign_id) REFERENCES campaigns (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw(`CREATE INDEX campaign_triggers_due_idx ON campaign_triggers (organization_id, campaign_id, due_at, contact_id) WHERE status = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE campaign_triggers');
  await knex.raw(`DELETE FROM campaigns WHERE parent_id IS NOT NULL`);
  await knex.raw(`ALTER TABLE campaigns DROP CONSTRAINT campaigns_status_check`);
  await knex.raw(`ALTER TABLE campaigns ADD CONSTRAINT campaigns_status_check CHECK (status IN ('draft', 'scheduled', 'active', 'completed', 'canceled'))`);
  await knex.raw('DROP INDEX campaigns_listed_idx');
  await knex.raw(`ALTER TABLE campaigns DROP COLUMN parent_id, DROP COLUMN recurrence, DROP COLUMN next_run_at, DROP COLUMN trigger_event,
                    DROP COLUMN trigger_group_id, DROP COLUMN trigger_delay, DROP COLUMN failure_reason`);
}
