import type pg from 'pg';
import type { Db } from './database.js';

/** A fixed statement run by name: each pooled connection parses and plans it once, not on every call. */
export interface Statement {
  name: string;
  text: string;
}

interface PooledClient {
  acquireConnection(): Promise<pg.PoolClient>;
  releaseConnection(connection: pg.PoolClient): Promise<void>;
}

/** Runs a named statement on one of knex's pooled connections (outside any transaction). */
export async function runStatement<Row extends pg.QueryResultRow>(db: Db, statement: Statement, values: unknown[]): Promise<Row[]> {
  const pool = db.client as PooledClient;
  const connection = await pool.acquireConnection();
  try {
    return (await connection.query<Row>({ name: statement.name, text: statement.text, values })).rows;
  } finally {
    void pool.releaseConnection(connection);
  }
}
