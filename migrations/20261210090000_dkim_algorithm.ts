import type { Knex } from 'knex';

/**
 * `dkim_keys.algorithm` takes `ed25519` beside `rsa` (RFC 8463): a domain can publish one key of
 * each, and its email carries a signature by each. Going back removes the Ed25519 keys, which the
 * narrower constraint could not hold.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE dkim_keys DROP CONSTRAINT dkim_keys_algorithm_check');
  await knex.raw(`ALTER TABLE dkim_keys ADD CONSTRAINT dkim_keys_algorithm_check CHECK (algorithm IN ('rsa', 'ed25519'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM dkim_keys WHERE algorithm <> 'rsa'`);
  await knex.raw('ALTER TABLE dkim_keys DROP CONSTRAINT dkim_keys_algorithm_check');
  await knex.raw(`ALTER TABLE dkim_keys ADD CONSTRAINT dkim_keys_algorithm_check CHECK (algorithm IN ('rsa'))`);
}
