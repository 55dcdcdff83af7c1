import type { Knex } from 'knex';
import type { Db } from '../../db/database.js';
import { newErasureKey } from './tokens.js';

/** The organization's erasure key, made at its first use; null when it has none and `make` is false. */
export async function erasureKey(db: Db | Knex.Transaction, orgId: string, make = false): Promise<Buffer | null> {
  if (make) {
    const [row] = (await db('organizations').where('id', orgId).update({ erasure_key: db.raw('coalesce(erasure_key, ?)', [newErasureKey()]) }).returning('erasure_key')) as { erasure_key: Buffer }[];
    return row?.erasure_key ?? null;
  }
  const row = (await db('organizations').where('id', orgId).first('erasure_key')) as { erasure_key: Buffer | null } | undefined;
  return row?.erasure_key ?? null;
}
