import { createHash } from 'node:crypto';
import type { Db } from './database.js';
import { badRequest, conflict, HttpError } from '../lib/errors.js';

const TTL_HOURS = 24;

type Stored = { ok: true; result: unknown } | { ok: false; statusCode: number; message: string };

/** A stable hash of what was asked: the same key with another request is refused (422). */
export function requestHash(scope: string, input: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
        : v;
  return createHash('sha256').update(scope).update('\0').update(JSON.stringify(canonical(input) ?? null)).digest('hex');
}

/**
 * Runs `work` at most once per organization and `Idempotency-Key` for 24 hours. A repeat gets the
 * first answer (results and client errors alike) and sends nothing; a repeat with another request is
 * 422; a repeat while the first is still running is 409. A failure that is not the client's (5xx other
 * than a provider's 502) frees the key so the request can be retried.
 */
export async function idempotent<T>(db: Db, orgId: string, key: string | undefined, scope: string, input: unknown, work: () => Promise<T>): Promise<T> {
  if (key === undefined) return work();
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw badRequest('Idempotency-Key must be 1-255 visible ASCII characters');
  const hash = requestHash(scope, input);
  const claimed = await db.raw(
    `INSERT INTO idempotency_keys (organization_id, key, scope, request_hash, state, expires_at)
     VALUES (?, ?, ?, ?, 'running', now() + interval '${TTL_HOURS} hours')
     -- The claim's own created_at (now()) stands for the present: Citus runs an ON CONFLICT clause
     -- on the shard, so it may call no function whose answer depends on when or where it runs.
     ON CONFLICT (organization_id, key) DO UPDATE
       SET scope = EXCLUDED.scope, request_hash = EXCLUDED.request_hash, state = 'running', response = NULL,
           created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
       WHERE idempotency_keys.expires_at < EXCLUDED.created_at
     RETURNING key`,
    [orgId, key, scope, hash],
  );
  if (!claimed.rows.length) {
    const existing = await db('idempotency_keys').where({ organization_id: orgId, key }).first();
    if (!existing) return idempotent(db, orgId, key, scope, input, work);
    if (existing.request_hash !== hash) throw new HttpError(422, 'Idempotency-Key was already used with a different request');
    if (existing.state === 'running') throw conflict('A request with this Idempotency-Key is still in progress');
    const stored = existing.response as Stored;
    if (stored.ok) return stored.result as T;
    throw new HttpError(stored.statusCode, stored.message);
  }
  const save = (response: Stored) =>
    db('idempotency_keys').where({ organization_id: orgId, key }).update({ state: 'done', response: JSON.stringify(response) });
  try {
    const result = await work();
    await save({ ok: true, result });
    return result;
  } catch (err) {
    if (err instanceof HttpError && (err.statusCode < 500 || err.statusCode === 502)) {
      await save({ ok: false, statusCode: err.statusCode, message: err.message });
    } else {
      await db('idempotency_keys').where({ organization_id: orgId, key }).delete();
    }
    throw err;
  }
}
