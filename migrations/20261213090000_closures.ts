import type { Knex } from 'knex';

/**
 * Closing an organization (`src/modules/closure`):
 *
 * - `organization_closures`: each request to close, its grace period, and once the organization is
 *   gone, when and how many rows of each table went. It outlives the organization, so it has no key
 *   to it, and it holds nothing personal: ids, times and counts (the requesting user's id is
 *   cleared when the users go). At most one closure of an organization is open at a time.
 * - the audit log's rule that entries never change or go gains a second exception: the closing of
 *   the organization, in its own transactions (`herald.closing` set to the organization's id),
 *   deletes that organization's entries, and no other's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organization_closures (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL,
      status text NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'cancelled', 'deleting', 'deleted')),
      requested_by uuid,
      requested_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      delete_after timestamptz NOT NULL,
      cancelled_at timestamptz,
      started_at timestamptz,
      deleted_at timestamptz,
      rows_deleted jsonb NOT NULL DEFAULT '{}'
    )`);
  await knex.raw(`CREATE UNIQUE INDEX organization_closures_open ON organization_closures (organization_id) WHERE status IN ('scheduled', 'deleting')`);
  await knex.raw('CREATE INDEX organization_closures_org ON organization_closures (organization_id, requested_at DESC)');
  await knex.raw(auditGuard(true));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(auditGuard(false));
  await knex.raw('DROP TABLE organization_closures');
}

/** The audit log's guard, with (`closing`) or without the closing's exception. */
const auditGuard = (closing: boolean) => `
  CREATE OR REPLACE FUNCTION herald_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
      RETURN OLD;
    END IF;
    ${
      closing
        ? `-- The closing of an organization deletes its entries, and only its own.
    IF TG_OP = 'DELETE' AND current_setting('herald.closing', true) = OLD.organization_id::text THEN
      RETURN OLD;
    END IF;`
        : ''
    }
    -- An erasure replaces an address in the details, and nothing else.
    IF TG_OP = 'UPDATE' AND current_setting('herald.erasing', true) = 'on'
       AND (NEW.organization_id, NEW.id, NEW.at, NEW.actor_type, NEW.actor_id, NEW.actor_label, NEW.action, NEW.resource_type, NEW.resource_id, NEW.ip, NEW.request_id)
           IS NOT DISTINCT FROM (OLD.organization_id, OLD.id, OLD.at, OLD.actor_type, OLD.actor_id, OLD.actor_label, OLD.action, OLD.resource_type, OLD.resource_id, OLD.ip, OLD.request_id) THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_log entries are never changed or removed' USING ERRCODE = 'insufficient_privilege';
  END $$`;
