import type { Knex } from 'knex';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Db } from './database.js';

interface PooledClient {
  acquireConnection(): Promise<pg.PoolClient & { __knexUid?: string }>;
  releaseConnection(connection: pg.PoolClient): Promise<void>;
  emit(event: 'query', data: object): void;
}

/**
 * A value of a query written into its text: knex's own Postgres escaping of a string (quotes
 * doubled, `E'...'` once there is a backslash). A number is written as its text in quotes too: an
 * untyped literal takes its type from where it stands, as the bound parameter did (`pg` sends a
 * number as untyped text), and a negative number cannot meet a `-` before it as a comment. Anything
 * else is a mistake of the caller: a value with no one text (a date, an array, null) or a NUL, which
 * would end the statement's text where it stands.
 */
function literal(db: Db, value: unknown): string {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string') {
    const what = typeof value === 'number' ? String(value) : value === null ? 'null' : typeof value;
    throw new TypeError(`copyOut: a binding must be a string or a finite number, not ${what}`);
  }
  if (text.includes('\0')) throw new TypeError('copyOut: a binding holds a NUL character');
  return db.raw('?', [text]).toQuery();
}

/**
 * The statement's text with its values in place of its placeholders, found as knex finds them when
 * it numbers them for Postgres (`positionBindings`: a `?` after an odd number of backslashes is the
 * character itself, as in the jsonb operator written `\\?` in a knex raw).
 */
function inlined(db: Db, sql: string, bindings: readonly unknown[]): string {
  let next = 0;
  const text = sql.replace(/(\\*)(\?)/g, (_, escapes: string) => (escapes.length % 2 ? '?' : literal(db, bindings[next++])));
  if (next !== bindings.length) throw new Error(`copyOut: ${bindings.length} bindings for ${next} placeholders`);
  return text;
}

/**
 * The rows of a query as CSV written by Postgres: `COPY (<query>) TO STDOUT (FORMAT csv)` on one of
 * knex's pooled connections, read whole and answered as bytes (a caller that streams them to a
 * client holds no connection while the client reads). COPY takes no parameters, so the query's
 * values are written into its text (`literal`). knex's `query` listeners see the query as knex
 * would have run it (its text with `$n` and its bindings), so what watches every statement (the
 * tenancy tests, EXPLAIN of what ran) sees this one too.
 *
 * The connection goes back to the pool whatever happens: a failed statement or a connection lost
 * mid-copy rejects only after the COPY has ended, and a connection never released would hold
 * `db.destroy()` at shutdown.
 */
export async function copyOut(db: Db, query: Knex.QueryBuilder): Promise<Buffer> {
  const compiled = query.toSQL();
  const native = compiled.toNative();
  const text = `COPY (${inlined(db, compiled.sql, compiled.bindings)}) TO STDOUT (FORMAT csv)`;
  const pool = db.client as PooledClient;
  const connection = await pool.acquireConnection();
  try {
    pool.emit('query', { __knexUid: connection.__knexUid, __knexTxId: undefined, ...compiled, sql: native.sql, bindings: native.bindings });
    const chunks: Buffer[] = [];
    // Read to its end or its error: a COPY left half read would leave the connection in the middle of it.
    for await (const chunk of connection.query(copyTo(text))) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } finally {
    await pool.releaseConnection(connection);
  }
}
