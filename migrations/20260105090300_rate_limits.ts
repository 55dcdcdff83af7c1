import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // The layout rate-limiter-flexible's Postgres store expects; shared by every API process.
  await knex.raw(`
    CREATE TABLE rate_limits (
      key varchar(255) PRIMARY KEY,
      points integer NOT NULL DEFAULT 0,
      expire bigint
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE rate_limits');
}
