import pg from 'pg';
import type { Logger } from 'pino';

/** A pool of the queue's own (graphile-worker's utilities, or one lane's runner), ended once. */
export interface QueuePool {
  pool: pg.Pool;
  end(): Promise<void>;
}

/** How long closing waits for connections still in use. */
const END_WAIT_MS = 2_000;

/**
 * A connection pool for graphile-worker that Herald owns rather than one graphile-worker makes from
 * a connection string. graphile-worker takes the error listeners off its own pools as it releases
 * them, before their connections have closed: a connection Postgres ends in that moment (a fast
 * shutdown, a restart) then raises an `error` event nobody listens to, which ends the process. Here
 * the listeners stay for the pool's whole life, and a lost connection is a line in the log (pg
 * drops it from the pool by itself; a query on it fails and is retried by its caller).
 */
export function queuePool(connectionString: string, max: number, log: Logger): QueuePool {
  const pool = new pg.Pool({ connectionString, max });
  const lost = (err: Error & { code?: string }) => log.warn({ code: err.code, reason: err.message }, 'queue connection lost');
  pool.on('error', lost);
  pool.on('connect', (client) => client.on('error', lost));
  let ended: Promise<void> | null = null;
  const close = async () => {
    // `end` waits for connections still checked out; one a killed job never gave back must not hold
    // the process's shutdown.
    let late: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (late = setTimeout(resolve, END_WAIT_MS)));
    try {
      await Promise.race([pool.end(), timeout]);
    } catch (err) {
      log.warn({ err }, 'queue pool did not close cleanly');
    } finally {
      clearTimeout(late);
    }
  };
  return { pool, end: () => (ended ??= close()) };
}
