import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Transaction-scoped advisory locks, named: a name is hashed to the lock's 64-bit key, so that
 * every part of Herald that serialises some work (one address's consent, one endpoint's queued run)
 * names it in words. Held until the transaction ends.
 */
export const lockKey = (name: string): string => createHash('sha256').update(name).digest().readBigInt64BE(0).toString();

export async function lockFor(trx: Knex.Transaction, name: string): Promise<void> {
  await trx.raw('SELECT pg_advisory_xact_lock(?::bigint)', [lockKey(name)]);
}
