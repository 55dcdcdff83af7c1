import type { Knex } from 'knex';

/**
 * Erasure of a person (`src/modules/erasure`):
 *
 * - `pgcrypto`, for the token of an erased address computed in SQL (`hmac`), where a campaign's
 *   audience or a send is checked against the suppression list;
 * - `organizations.erasure_key`: the organization's own key of those tokens (32 random bytes, made
 *   at its first erasure). The token of an address is the same every time, so an erased address
 *   still counts as itself and is still recognised as suppressed, and it can not be turned back
 *   into the address without guessing it;
 * - `erasures`: each request and how far its job got, never the address itself;
 * - `erased` as a suppression's reason;
 * - the audit log's rule that entries never change gains one exception: an erasure, in its own
 *   transaction, replaces the address in an entry's details by its token.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pgcrypto');
  await knex.raw('ALTER TABLE organizations ADD COLUMN erasure_key bytea');
  await knex.raw(`
    CREATE TABLE erasures (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      contact_id uuid,
      channels text[] NOT NULL,
      tokens text[] NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
      steps_done int NOT NULL DEFAULT 0,
      rows_changed bigint NOT NULL DEFAULT 0,
      requested_by uuid,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      finished_at timestamptz,
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX erasures_created_idx ON erasures (organization_id, created_at DESC, id DESC)');
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'import', 'bounce', 'complaint', 'erased'))`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION herald_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD;
      END IF;
      -- An erasure replaces an address in the details, and nothing else.
      IF TG_OP = 'UPDATE' AND current_setting('herald.erasing', true) = 'on'
         AND (NEW.organization_id, NEW.id, NEW.at, NEW.actor_type, NEW.actor_id, NEW.actor_label, NEW.action, NEW.resource_type, NEW.resource_id, NEW.ip, NEW.request_id)
             IS NOT DISTINCT FROM (OLD.organization_id, OLD.id, OLD.at, OLD.actor_type, OLD.actor_id, OLD.actor_label, OLD.action, OLD.resource_type, OLD.resource_id, OLD.ip, OLD.request_id) THEN
        RETURN NEW;
      END IF;
      RAISE EXCEPTION 'audit_log entries are never changed or removed' USING ERRCODE = 'insufficient_privilege';
    END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION herald_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'audit_log entries are never changed or removed' USING ERRCODE = 'insufficient_privilege';
    END $$`);
  await knex.raw(`DELETE FROM suppressions WHERE reason = 'erased'`);
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check CHECK (reason IN ('manual', 'import', 'bounce', 'complaint'))`);
  await knex.raw('DROP TABLE erasures');
  await knex.raw('ALTER TABLE organizations DROP COLUMN erasure_key');
}
