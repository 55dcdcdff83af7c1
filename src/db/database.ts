import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from 'pino';

// Postgres numerics (credits) arrive as strings; Herald's amounts fit a double exactly enough
// at two decimals, and the API promises numbers.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// A time on the wall clock without a zone (a campaign's local send time) stays one: `2026-12-05T09:00:00`.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMP, (v) => v.replace(' ', 'T').slice(0, 19));

export type Db = Knex;

export function createDb(connectionString: string, poolMax = 10, log?: Logger): Db {
  return knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'herald' },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
    // knex prints its own warnings (a refused connection while Postgres is away) with console.log;
    // they belong in the structured log.
    ...(log && {
      log: {
        warn: (message: unknown) => log.warn({ knex: String(message) }, 'knex warning'),
        error: (message: unknown) => log.error({ knex: String(message) }, 'knex error'),
        deprecate: (message: unknown) => log.warn({ knex: String(message) }, 'knex deprecation'),
        debug: (message: unknown) => log.debug({ knex: message }, 'knex debug'),
      },
    }),
  });
}

/** `now()` rounded to the millisecond the API shows, so keyset cursors compare exactly. */
export const nowMs = (db: Db) => db.raw("date_trunc('milliseconds', now())");

/** What knex's pool (tarn) holds now: connections in use and idle, and acquisitions waiting for one; null once destroyed. */
export function poolUse(db: Db): { used: number; free: number; pending: number; max: number } | null {
  const pool = (db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number; max: number } }).pool;
  if (!pool) return null;
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires(), max: pool.max };
}
