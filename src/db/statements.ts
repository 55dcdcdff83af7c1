import type { Knex } from 'knex';
import type pg from 'pg';
import type { Db } from './database.js';

/**
 * A fixed SQL statement with named parameters, run as a named (prepared) statement: each pooled
 * connection parses and plans it once, not on every call (unless it is planned `perCall`, see
 * `StatementOptions`). The text names its parameters `:name`
 * (`::type` casts are left alone); `statement()` maps them to positions once, here, so callers pass an
 * object and never count `$n`.
 *
 * Passing lists, the one agreed way: a list of scalars is a JavaScript array bound as a Postgres array
 * (`:batchNos::int[]`); rows of several values travel as one JSON array of objects (`jsonRows`) and
 * are read with `json_to_recordset(:rows::json) AS r(column type, ...)`, so a statement's size never
 * depends on the number of rows, and no value is escaped into an array literal.
 */
export interface Statement<P extends object, R extends pg.QueryResultRow> {
  readonly name: string;
  readonly text: string;
  /** Planned on every call (sent unnamed) rather than once per connection: see `StatementOptions`. */
  readonly perCall: boolean;
  /** The parameter at each position, `$1` first. */
  readonly order: readonly (keyof P & string)[];
  /** Only for the type checker: the row type the statement returns. */
  readonly row?: R;
}

const PLACEHOLDER = /(?<![:\w]):([a-zA-Z_]\w*)/g;

export interface StatementOptions {
  /**
   * Plan on every call, from the tables' sizes then. A prepared statement keeps the plan it got
   * after its first calls for as long as its connection lives, or until the next ANALYZE of a table
   * it reads: one first run while a table was a few pages (a new database; the recipients' receipts
   * before a campaign's first opens) joins it by a scan, and every later call scans a table grown by
   * then to thousands of rows, per row of the call. For statements that join such a table to a batch
   * of rows, where planning costs a fraction of a millisecond against the batch's work.
   */
  perCall?: boolean;
}

export function statement<P extends object, R extends pg.QueryResultRow = pg.QueryResultRow>(name: string, sql: string, options: StatementOptions = {}): Statement<P, R> {
  const order: string[] = [];
  const text = sql.replace(PLACEHOLDER, (_, param: string) => {
    let position = order.indexOf(param);
    if (position === -1) position = order.push(param) - 1;
    return `$${position + 1}`;
  });
  return { name, text, order: order as (keyof P & string)[], perCall: options.perCall ?? false };
}

interface PooledClient {
  acquireConnection(): Promise<pg.PoolClient>;
  releaseConnection(connection: pg.PoolClient): Promise<void>;
}

/** A statement with its parameters, as node-postgres runs it: for `run`, or for a connection held outside knex (a `COPY`'s). */
export function queryOf<P extends object, R extends pg.QueryResultRow>(st: Statement<P, R>, params: P): pg.QueryConfig {
  const values = st.order.map((key) => {
    const value = params[key];
    if (value === undefined) throw new Error(`statement ${st.name}: no value for :${key}`);
    return value;
  });
  return st.perCall ? { text: st.text, values } : { name: st.name, text: st.text, values };
}

/**
 * Runs a statement on one of knex's pooled connections, or, given a knex transaction, on its
 * connection (a transaction's client hands out its own connection and keeps it on release).
 */
export async function run<P extends object, R extends pg.QueryResultRow>(db: Db | Knex.Transaction, st: Statement<P, R>, params: P): Promise<R[]> {
  const query = queryOf(st, params);
  const pool = db.client as PooledClient;
  const connection = await pool.acquireConnection();
  try {
    return (await connection.query<R>(query)).rows;
  } finally {
    void pool.releaseConnection(connection);
  }
}

/**
 * Rows for `json_to_recordset`. `raw` names a field whose value is already JSON text (a log's encoded
 * recipients): it is spliced in as it is rather than parsed and written out again.
 */
export function jsonRows<T extends object>(rows: readonly T[], raw?: keyof T & string): string {
  if (!raw) return JSON.stringify(rows);
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    const { [raw]: json, ...rest } = rows[i]! as Record<string, unknown>;
    const head = JSON.stringify(rest);
    out += `${i ? ',' : ''}${head.length > 2 ? `${head.slice(0, -1)},` : '{'}${JSON.stringify(raw)}:${json ?? 'null'}}`;
  }
  return `${out}]`;
}
