import type { Knex } from 'knex';

/**
 * A delivery call's recipients (and errors) are stored out of line but not compressed: every large
 * sandbox call was compressed with pglz on write, the larger part of its insert's cost, for data
 * kept only to be read back in tests and demos. Applies to rows written from now on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE sandbox_sends ALTER COLUMN recipients SET STORAGE EXTERNAL, ALTER COLUMN errors SET STORAGE EXTERNAL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE sandbox_sends ALTER COLUMN recipients SET STORAGE EXTENDED, ALTER COLUMN errors SET STORAGE EXTENDED');
}
