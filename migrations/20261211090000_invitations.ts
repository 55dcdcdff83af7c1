import type { Knex } from 'knex';

/**
 * `invitations`: an admin's invitation of a person to join the organization with a role. A tenant
 * table although it is read before anyone has signed in: the link's token carries the organization
 * with the invitation's id, so the public accept still finds the row by `(organization_id, id)`.
 *
 * Nothing secret is stored: the token is the id sealed with a key of its own, so the row is the
 * whole state. `accepted_at` makes it single-use (set in the transaction that creates the user);
 * `revoked_at` closes it otherwise: an admin's withdrawal, or a new invitation to the address of an
 * expired one. One pending invitation per address and organization (the partial unique index).
 *
 * `invited_by` names the admin without a key into `users` (a global table that a distributed
 * table can not reference on Citus); `invited_by_email` keeps how they were named then.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE invitations (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'user')),
      first_name text,
      last_name text,
      invited_by uuid NOT NULL,
      invited_by_email text NOT NULL,
      expires_at timestamptz NOT NULL,
      accepted_at timestamptz,
      accepted_user_id uuid,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw(`
    CREATE UNIQUE INDEX invitations_pending_email_idx ON invitations (organization_id, lower(email))
    WHERE accepted_at IS NULL AND revoked_at IS NULL`);
  await knex.raw(`
    CREATE INDEX invitations_pending_created_idx ON invitations (organization_id, created_at DESC, id DESC)
    WHERE accepted_at IS NULL AND revoked_at IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE invitations');
}
