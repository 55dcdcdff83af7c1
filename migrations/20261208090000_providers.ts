import type { Knex } from 'knex';

/**
 * Providers: the accounts an organization sends each channel through, in its order of preference.
 *
 * - `providers`: one row per account: its channel and type (`sms-gateway`, `africastalking`,
 *   `twilio`, `smpp`, `smtp`, `whatsapp-cloud`), a name, its place in the channel's order
 *   (`position`, the first enabled one is tried first), `enabled`, its rate (messages a second, null:
 *   the provider's default), its settings (shown) and secrets (AES-256-GCM under CREDENTIALS_KEY,
 *   never shown), and its circuit as the process that sent last saw it (`circuit`, since
 *   `circuit_changed_at`, with the last failure).
 * - `message_logs.carriers`: which provider carried each recipient, by position (null where none did).
 *
 * The organizations' single credentials document (`organizations.credentials`) becomes each
 * channel's provider of its original type when Herald starts (`delivery/providers.ts`, which needs
 * the credentials key, hence not here).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE providers (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL CHECK (channel IN ('sms', 'email', 'whatsapp')),
      type text NOT NULL,
      name text NOT NULL,
      position int NOT NULL,
      enabled boolean NOT NULL DEFAULT true,
      rate double precision,
      settings jsonb NOT NULL DEFAULT '{}',
      secrets bytea,
      circuit text NOT NULL DEFAULT 'closed' CHECK (circuit IN ('closed', 'open', 'half-open')),
      circuit_changed_at timestamptz,
      last_failure_at timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX providers_channel_idx ON providers (organization_id, channel, position)');
  await knex.raw('ALTER TABLE message_logs ADD COLUMN carriers uuid[]');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE message_logs DROP COLUMN carriers');
  await knex.raw('DROP TABLE providers');
}
