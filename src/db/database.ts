import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// Postgres numerics (credits) arrive as strings; Herald's amounts fit a double exactly enough
// at two decimals, and the API promises numbers.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

export function createDb(connectionString: string, poolMax = 10): Db {
  return knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'herald' },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
  });
}

/** `now()` rounded to the millisecond the API shows, so keyset cursors compare exactly. */
export const nowMs = (db: Db) => db.raw("date_trunc('milliseconds', now())");
