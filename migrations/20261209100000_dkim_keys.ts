import type { Knex } from 'knex';

/**
 * `dkim_keys`: an organization's DKIM signing keys, one per sending domain and selector: the
 * private key (PKCS#8 PEM, AES-256-GCM under CREDENTIALS_KEY) and the public key's DNS record text.
 * Email whose From is on the key's domain is signed with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE dkim_keys (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      domain text NOT NULL,
      selector text NOT NULL,
      algorithm text NOT NULL DEFAULT 'rsa' CHECK (algorithm IN ('rsa')),
      private_key bytea NOT NULL,
      record text NOT NULL,
      checked_at timestamptz,
      published boolean,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE UNIQUE INDEX dkim_keys_domain_idx ON dkim_keys (organization_id, domain, selector)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE dkim_keys');
}
