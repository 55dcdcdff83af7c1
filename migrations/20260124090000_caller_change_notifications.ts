import type { Knex } from 'knex';

/**
 * Authentication keeps the user and API-key rows it re-reads for a moment (src/modules/auth/caller-cache.ts).
 * These triggers tell every Herald process, on commit, that a row authentication depends on changed or
 * went away, so deactivation, deletion, role and password changes and revocation apply at once in
 * every process, whoever made the change (the API, the operator's CLI, or SQL by hand).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION herald_notify_caller_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('herald_callers', TG_ARGV[0] || ':' || OLD.id::text);
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER users_caller_changed AFTER UPDATE ON users FOR EACH ROW
    WHEN (OLD.role IS DISTINCT FROM NEW.role OR OLD.is_active IS DISTINCT FROM NEW.is_active
          OR OLD.tokens_valid_after IS DISTINCT FROM NEW.tokens_valid_after OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
    EXECUTE FUNCTION herald_notify_caller_change('u')`);
  await knex.raw(`CREATE TRIGGER users_caller_deleted AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION herald_notify_caller_change('u')`);
  await knex.raw(`
    CREATE TRIGGER api_keys_caller_changed AFTER UPDATE ON api_keys FOR EACH ROW
    WHEN (OLD.role IS DISTINCT FROM NEW.role OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
          OR OLD.key_hash IS DISTINCT FROM NEW.key_hash OR OLD.created_by IS DISTINCT FROM NEW.created_by
          OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
    EXECUTE FUNCTION herald_notify_caller_change('k')`);
  await knex.raw(`CREATE TRIGGER api_keys_caller_deleted AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION herald_notify_caller_change('k')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER api_keys_caller_deleted ON api_keys');
  await knex.raw('DROP TRIGGER api_keys_caller_changed ON api_keys');
  await knex.raw('DROP TRIGGER users_caller_deleted ON users');
  await knex.raw('DROP TRIGGER users_caller_changed ON users');
  await knex.raw('DROP FUNCTION herald_notify_caller_change()');
}
