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

/** A key claimed for a request's first run: what to store once it is answered (`save`), or to do when it fails (`failed`). */
interface Claim {
  save(response: Stored): Promise<void>;
  failed(err: unknown): Promise<void>;
}

/**
 * Claims the key for this request: a claim when it is the first run (or the key expired), else the
 * first run's stored answer. 422 when the key was used with another request, 409 while the first
 * run is still going.
 */
async function claim(db: Db, orgId: string, key: string, scope: string, input: unknown): Promise<Claim | Stored> {
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
    if (!existing) return claim(db, orgId, key, scope, input);
    if (existing.request_hash !== hash) throw new HttpError(422, 'Idempotency-Key was already used with a different request');
    if (existing.state === 'running') throw conflict('A request with this Idempotency-Key is still in progress');
    return existing.response as Stored;
  }
  const row = () => db('idempotency_keys').where({ organization_id: orgId, key });
  const save = async (response: Stored) => {
    await row().update({ state: 'done', response: JSON.stringify(response) });
  };
  return {
    save,
    async failed(err) {
      // A failure that is not the client's (5xx other than a provider's 502) frees the key for a retry.
      if (err instanceof HttpError && (err.statusCode < 500 || err.statusCode === 502)) await save({ ok: false, statusCode: err.statusCode, message: err.message });
      else await row().delete();
    },
  };
}

/** The first run's answer again: its result, or its error thrown. */
function replayed(stored: Stored): unknown {
  if (stored.ok) return stored.result;
  throw new HttpError(stored.statusCode, stored.message);
}

/**
 * Runs `work` at most once per organization and `Idempotency-Key` for 24 hours. A repeat gets the
 * first answer (results and client errors alike) and sends nothing; a repeat with another request is
 * 422; a repeat while the first is still running is 409. A failure that is not the client's (5xx other
 * than a provider's 502) frees the key so the request can be retried.
 */
export async function idempotent<T>(db: Db, orgId: string, key: string | undefined, scope: string, input: unknown, work: () => Promise<T>): Promise<T> {
  if (key === undefined) return work();
  const claimed = await claim(db, orgId, key, scope, input);
  if (!('save' in claimed)) return replayed(claimed) as T;
  try {
    const result = await work();
    await claimed.save({ ok: true, result });
    return result;
  } catch (err) {
    await claimed.failed(err);
    throw err;
  }
}

/** An answer that goes out as it is produced, and what answers it again once it is complete. */
export interface StreamedWork<A, M> {
  /** The answer, to be read as it comes. */
  answer: A;
  /** What `replay` needs to answer it again (small: never the answer's items), once the work behind the answer has finished. */
  finished: Promise<M>;
}

/**
 * `idempotent` for an answer streamed while its work goes on (`POST /notifications/send-to-all`):
 * the key stays running (409 to a repeat) until `finished`, then stores `finished`'s value, never
 * the answer, and a repeat gets `replay` of it. A failure before the answer (`start` throws) is
 * stored or frees the key as `idempotent`'s does; so does one after it. `after` runs the storing,
 * which outlives the request (the process's background work). `replay` is handed whatever the key
 * holds, which may be an answer stored whole.
 */
export async function idempotentStream<A, M>(
  db: Db,
  orgId: string,
  key: string | undefined,
  scope: string,
  input: unknown,
  work: { start: () => Promise<StreamedWork<A, M>>; replay: (stored: M) => A; after: (task: () => Promise<void>) => void },
): Promise<A> {
  if (key === undefined) return (await work.start()).answer;
  const claimed = await claim(db, orgId, key, scope, input);
  if (!('save' in claimed)) return work.replay(replayed(claimed) as M);
  let started: StreamedWork<A, M>;
  try {
    started = await work.start();
  } catch (err) {
    await claimed.failed(err);
    throw err;
  }
  work.after(() =>
    started.finished.then(
      (result) => claimed.save({ ok: true, result }),
      (err: unknown) => claimed.failed(err),
    ),
  );
  return started.answer;
}
