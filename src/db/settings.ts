import type { Knex } from 'knex';

/** Herald's own settings of a transaction, read by its triggers (the audit log's guard). */
export type TransactionSetting = 'herald.erasing' | 'herald.closing';

/**
 * Sets one of Herald's settings until the transaction ends. On Citus a trigger runs on the worker
 * that holds the shard, in a session of the coordinator's own: only a `SET LOCAL` reaches it, and
 * only with `citus.propagate_set_commands` at `local` (set the same way, for this transaction alone).
 * On plain Postgres that name is a setting nothing reads.
 */
export async function setLocal(trx: Knex.Transaction, name: TransactionSetting, value: string): Promise<void> {
  await trx.raw(`SET LOCAL citus.propagate_set_commands TO 'local'`);
  // SET takes no parameters: the value is quoted here (names are the fixed ones above).
  await trx.raw(`SET LOCAL ${name} TO '${value.replace(/'/g, "''")}'`);
}
