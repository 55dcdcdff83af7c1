import type { Knex } from 'knex';

/**
 * Two-factor authentication (platform.md): TOTP (RFC 6238) per user, recovery codes, and an
 * organization-wide requirement.
 *
 * - `user_two_factor`: one row per user who started enrolment. `secret` is the TOTP secret,
 *   AES-256-GCM under CREDENTIALS_KEY like channel credentials (it must be read back to check codes,
 *   so it can not be hashed); `confirmed_at` is null until a first code confirmed it (until then it
 *   protects nothing, and a new enrolment replaces it); `last_used_step` is the time step of the last
 *   code accepted, so that a code (or an earlier one) is never accepted twice.
 * - `user_recovery_codes`: the current set of ten one-time codes, as SHA-256 of the code: each has 80
 *   random bits, which no offline search can reach, so a slow hash would buy nothing and cost a
 *   bcrypt comparison per stored code at every use. `used_at` is set by the use that spends it.
 * - `organizations.require_two_factor`: set by an admin; a member without two-factor authentication
 *   may then only enrol until they have.
 *
 * Both tables are global, like `users` (found by the user id before any organization is involved):
 * coordinator tables on Citus. A trigger tells the API processes, as for `users`, when a user's
 * two-factor state changes, since authentication reads it (a setup-only session becomes a full one).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE user_two_factor (
      user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      secret bytea NOT NULL,
      confirmed_at timestamptz,
      last_used_step bigint,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
    )`);
  await knex.raw(`
    CREATE TABLE user_recovery_codes (
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      code_hash bytea NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (user_id, code_hash)
    )`);
  await knex.raw('ALTER TABLE organizations ADD COLUMN require_two_factor boolean NOT NULL DEFAULT false');
  await knex.raw(`
    CREATE FUNCTION herald_notify_two_factor_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('herald_callers', 'u:' || OLD.user_id::text);
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER user_two_factor_changed AFTER UPDATE ON user_two_factor FOR EACH ROW
    WHEN (OLD.confirmed_at IS DISTINCT FROM NEW.confirmed_at OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION herald_notify_two_factor_change()`);
  await knex.raw('CREATE TRIGGER user_two_factor_deleted AFTER DELETE ON user_two_factor FOR EACH ROW EXECUTE FUNCTION herald_notify_two_factor_change()');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER user_two_factor_deleted ON user_two_factor');
  await knex.raw('DROP TRIGGER user_two_factor_changed ON user_two_factor');
  await knex.raw('DROP FUNCTION herald_notify_two_factor_change()');
  await knex.raw('ALTER TABLE organizations DROP COLUMN require_two_factor');
  await knex.raw('DROP TABLE user_recovery_codes');
  await knex.raw('DROP TABLE user_two_factor');
}
