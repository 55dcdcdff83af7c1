import type { Knex } from 'knex';

/**
 * The audit log of admin actions (platform.md): who (a user or an API key, with its email or name as
 * it was then), what (`action`), on which resource, when, and from where (client address, request
 * id). Each entry is written in the transaction of the action it records, so an action that fails
 * leaves none.
 *
 * Never edited: the API has no path that changes or removes an entry, and a row trigger refuses
 * UPDATE and DELETE. The trigger only raises and reads no other table, so on Citus it can run on
 * the shards (`src/db/citus.ts` distributes the table with `citus.enable_unsafe_triggers`). A
 * DELETE issued by another trigger is let through: that is the cascade of the organization's own
 * deletion (`ON DELETE CASCADE`), the one way entries go.
 *
 * `action` is compared in the "C" collation, so the list's prefix filter (`user.%`) is read from the
 * same indexes as an exact action.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE audit_log (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      actor_type text NOT NULL CHECK (actor_type IN ('user', 'api_key')),
      actor_id uuid NOT NULL,
      actor_label text NOT NULL,
      action text COLLATE "C" NOT NULL,
      resource_type text NOT NULL,
      resource_id uuid,
      details jsonb NOT NULL DEFAULT '{}',
      ip text,
      request_id text,
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX audit_log_org_at_idx ON audit_log (organization_id, at DESC, id DESC)');
  await knex.raw('CREATE INDEX audit_log_actor_idx ON audit_log (organization_id, actor_id, at DESC, id DESC)');
  await knex.raw('CREATE INDEX audit_log_action_idx ON audit_log (organization_id, action, at DESC, id DESC)');
  await knex.raw('CREATE INDEX audit_log_resource_idx ON audit_log (organization_id, resource_id, at DESC, id DESC)');
  await knex.raw(`
    CREATE FUNCTION herald_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'audit_log entries are never changed or removed' USING ERRCODE = 'insufficient_privilege';
    END $$`);
  await knex.raw(`
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION herald_audit_log_append_only()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE audit_log');
  await knex.raw('DROP FUNCTION herald_audit_log_append_only()');
}
