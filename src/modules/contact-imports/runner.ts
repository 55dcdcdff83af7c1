import { wakeAutomations } from '../campaigns/triggers.js';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Deps } from '../../context.js';
import { isUniqueViolation } from '../../db/errors.js';
import { queryOf, run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { wake } from '../../delivery/outbox.js';
import { CHANNELS, type Channel } from '../../delivery/types.js';
import { setSubscription } from '../consent/service.js';
import type { ImportOptions, Layout } from './options.js';
import { copyLine, isRowError, stageRow, STAGING_COLUMNS, type RowError, type RowRules } from './rows.js';
import {
  batchEnd,
  batchMerged,
  claimImport,
  countMatched,
  dropStaging,
  finishImport,
  importChanged,
  insertUnmatched,
  lockImport,
  markStaged,
  nameless,
  readChunk,
  releaseImport,
  stagingProgress,
  updateMatched,
  type ImportRow,
} from './sql.js';

/** The most rows a file may have (platform.md). */
export const MAX_ROWS = 1_000_000;
/** Match keys merged per transaction: a batch is whole or absent, and a cancel waits for one at most. */
const BATCH_KEYS = 20_000;
/** Rows between two progress reports while the file is read. */
const PROGRESS_EVERY = 50_000;
/** The row errors an import keeps. */
export const MAX_ERRORS = 1_000;

/** Stored with the import: its options, and the file's layout read at upload. */
export interface StoredOptions extends Omit<ImportOptions, 'mapping'> {
  layout: Layout;
}

/**
 * Why an import stopped short: the file was malformed (it fails), it was canceled (it stops), or this
 * worker is stopping (`interrupted`: it gives the import up for the job's retry to resume).
 */
class Stop extends Error {
  constructor(
    /** `superseded`: another worker took the import over (this one was too slow to renew its lease): it carries on, this one leaves. */
    readonly reason: 'failed' | 'canceled' | 'superseded' | 'interrupted',
    message: string = reason,
  ) {
    super(message);
  }
}

/** Why the import is no longer this worker's to run. */
async function stopped(deps: Deps, job: ImportRow): Promise<Stop> {
  const now = (await tenant(deps.db, job.organization_id).scoped('contact_imports').where('contact_imports.id', job.id).first('status', 'attempts')) as
    | Pick<ImportRow, 'status' | 'attempts'>
    | undefined;
  return new Stop(now?.status === 'running' && now.attempts !== job.attempts ? 'superseded' : 'canceled');
}

/** Leaves when the worker asks its jobs to stop (its process is shutting down). */
function leaveIfAsked(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new Stop('interrupted', 'the worker is stopping');
}

const leaseUntil = (deps: Deps) => new Date(Date.now() + deps.config.campaignLeaseSeconds * 1000);

/**
 * Rows judged between two turns of the event loop (the file is parsed in `readChunk`'s slices): the
 * process (an API process, when it runs workers) answers its requests between them, where a stored
 * chunk of 1 MiB parsed and judged at once held it for 300 ms or more.
 */
const ROWS_PER_TURN = 1_000;

/** The stored file, chunk by chunk as the upload cut it, each in the slices `readChunk` reads it in. */
async function* chunksOf(deps: Deps, orgId: string, importId: string): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const slices = await run(deps.db, readChunk, { orgId, importId, seq });
    if (!slices.length) return;
    for (const slice of slices) yield slice.data;
  }
}

const count = (record: string[], pattern: RegExp) => record.reduce((n, field) => n + (field.match(pattern)?.length ?? 0), 0);

/**
 * The line each record of a file starts on, given the records in order with csv-parse's
 * `info.lines` (the line it ends on): that, less the line breaks inside its fields. csv-parse
 * counts a CRLF inside a quoted field as two lines (its CR and its LF), so each one read so far is
 * taken off once more: without that, every row after one was reported a line late per CRLF.
 * `lineOf` gives the true line for one of csv-parse's counts (a parse error's).
 */
function lineCounter() {
  let doubled = 0;
  return {
    firstLine(record: string[], lastLine: number): number {
      doubled += count(record, /\r\n/g);
      return lastLine - doubled - count(record, /\r\n|\r|\n/g);
    },
    lineOf: (csvLine: number) => csvLine - doubled,
  };
}

/**
 * Reads the file into the staging table: parsed as it streams from its chunks, each row judged and
 * copied in (`COPY ... FROM STDIN`), the rows that break a rule kept as errors (the first 1,000).
 * All in one transaction that also marks the import staged: a worker that dies here leaves nothing,
 * and the next reads the file again. A file that cannot be parsed, or holds more than 1,000,000 rows,
 * fails the import before anything is merged.
 */
async function stage(deps: Deps, job: ImportRow, options: StoredOptions, signal?: AbortSignal): Promise<void> {
  const orgId = job.organization_id;
  const org = (await deps.db('organizations').where('organizations.id', orgId).first('country')) as { country: string } | undefined;
  const rules: RowRules = { layout: options.layout, orgCountry: org?.country ?? null, dotlessDomains: !deps.config.blockPrivateHosts };
  const errors: RowError[] = [];
  let rows = 0;
  let failed = 0;
  const pool = deps.db.client as { acquireConnection(): Promise<pg.PoolClient>; releaseConnection(c: pg.PoolClient): Promise<void> };
  const client = await pool.acquireConnection();
  try {
    await client.query('BEGIN');
    const copy = client.query(copyFrom(`COPY contact_import_rows (${STAGING_COLUMNS}) FROM STDIN`));
    let pending = '';
    const lines = lineCounter();
    const toCopy = new Transform({
      writableObjectMode: true,
      async transform({ record, info }: { record: string[]; info: { lines: number } }, _enc, done) {
        try {
          leaveIfAsked(signal);
          rows++;
          if (rows > MAX_ROWS) throw new Stop('failed', `the file has more than ${MAX_ROWS.toLocaleString('en')} rows`);
          const staged = stageRow(record, lines.firstLine(record, info.lines), rules);
          if (isRowError(staged)) {
            failed++;
            if (errors.length < MAX_ERRORS) errors.push(staged);
          } else {
            pending += copyLine(orgId, job.id, staged);
          }
          if (rows % PROGRESS_EVERY === 0) {
            const [still] = await run(deps.db, stagingProgress, { orgId, importId: job.id, attempt: job.attempts, rowsRead: rows, now: new Date(), leasedUntil: leaseUntil(deps) });
            if (!still) throw await stopped(deps, job);
            await run(deps.db, importChanged, { orgId, importId: job.id });
          }
          // Every ROWS_PER_TURN rows, the next row waits for a turn of the event loop.
          const next: typeof done = rows % ROWS_PER_TURN === 0 ? (err, out) => setImmediate(() => done(err, out)) : done;
          if (pending.length >= 64 * 1024) {
            const out = pending;
            pending = '';
            next(null, out);
            return;
          }
          next();
        } catch (err) {
          done(err as Error);
        }
      },
      flush(done) {
        done(null, pending || undefined);
      },
    });
    const parser = parse({
      bom: true,
      delimiter: options.layout.delimiter,
      from_line: 2,
      relax_column_count: true,
      skip_empty_lines: true,
      info: true,
    });
    try {
      await pipeline(Readable.from(chunksOf(deps, orgId, job.id)), parser, toCopy, copy);
    } catch (err) {
      if (err instanceof Stop) throw err;
      const csv = err as { code?: string; message?: string; lines?: number };
      if (typeof csv.code === 'string' && csv.code.startsWith('CSV_')) {
        throw new Stop('failed', `the file is not valid CSV${csv.lines ? ` at line ${lines.lineOf(csv.lines)}` : ''}: ${csv.message}`);
      }
      throw err;
    }
    const [still] = (
      await client.query(queryOf(markStaged, { orgId, importId: job.id, attempt: job.attempts, rows, failed, errors: JSON.stringify(errors), now: new Date(), leasedUntil: leaseUntil(deps) }))
    ).rows;
    if (!still) throw await stopped(deps, job);
    await client.query(queryOf(importChanged, { orgId, importId: job.id }));
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    await pool.releaseConnection(client);
  }
}

/** The entry a channel left by an import gets (consent's shape: when, and how). */
const leftEntry = (at: Date) => JSON.stringify({ at: at.toISOString(), source: 'import' });

/**
 * Merges the staged rows into the organization's contacts, one transaction per batch of match keys,
 * each ending with the resume point and the counters; the import's row is locked first, so a cancel
 * is seen before a batch and never lands in the middle of one.
 */
async function merge(deps: Deps, job: ImportRow, options: StoredOptions, signal?: AbortSignal): Promise<void> {
  const orgId = job.organization_id;
  const by = options.layout.matchBy;
  let after = job.merged_through ?? '';
  for (let merged = 0; ; merged++) {
    leaveIfAsked(signal);
    // The planner's idea of the organization's contacts must keep up with the import: estimated at
    // a handful (an organization new to the statistics, or grown since they were taken), a batch's
    // lookup of existing contacts was planned as a scan of all of them per row, and the import grew
    // slower with every batch (a batch of 20,000 against 20,000 contacts took over a minute).
    // Statistics taken before the first batch and again as the organization doubles cost a few
    // ANALYZEs per import.
    if ((merged & (merged - 1)) === 0) await deps.db.raw('ANALYZE contacts');
    const woken = new Set<string>();
    const done = await deps.db.transaction(async (trx) => {
      const [locked] = await run(trx, lockImport, { orgId, importId: job.id });
      if (locked?.status !== 'running') throw new Stop('canceled');
      if (locked.attempts !== job.attempts) throw new Stop('superseded');
      const [end] = await run(trx, batchEnd, { orgId, importId: job.id, after, size: BATCH_KEYS });
      if (!end?.upto) return true;
      const now = new Date();
      const batch = { orgId, importId: job.id, after, upto: end.upto };
      const common = { ...batch, tags: options.tags, groups: options.groups, now };
      let updated = 0;
      let skipped = Number(end.rows) - Number(end.keys);
      if (options.existing === 'update') {
        const changed = await run(trx, updateMatched(by), common);
        updated = new Set(changed.map((c) => c.match_key)).size;
        await leaveChannels(trx, orgId, changed, now, woken);
      } else {
        const [matched] = await run(trx, countMatched(by), batch);
        skipped += Number(matched?.matched ?? 0);
      }
      const [created] = await run(trx, insertUnmatched(by), { ...common, left: leftEntry(now) });
      const unnamed = await run(trx, nameless(by), batch);
      const errors = unnamed.map((r) => ({ line: r.line, message: 'name is required for a new contact' }));
      const [still] = await run(trx, batchMerged, {
        orgId,
        importId: job.id,
        upto: end.upto,
        created: Number(created?.created ?? 0),
        updated,
        skipped,
        failed: errors.length,
        errors: JSON.stringify(errors),
        now,
        leasedUntil: leaseUntil(deps),
      });
      if (!still) throw new Stop('canceled');
      await run(trx, importChanged, { orgId, importId: job.id });
      after = end.upto;
      return false;
    });
    await wake(deps.db, orgId, [...woken]);
    // The batch's new contacts and memberships may have triggered automated campaigns.
    if (!done) await wakeAutomations(deps.db, orgId);
    if (done) return;
  }
}

/** Updated contacts whose row says they left channels leave them through consent's one home (events included). */
async function leaveChannels(trx: Parameters<typeof setSubscription>[0], orgId: string, changed: { id: string; leaves: string[] }[], at: Date, woken: Set<string>) {
  const byChannel = new Map<Channel, string[]>(CHANNELS.map((channel) => [channel, []]));
  for (const c of changed) for (const channel of c.leaves) byChannel.get(channel as Channel)?.push(c.id);
  for (const [channel, contactIds] of byChannel) if (contactIds.length) await setSubscription(trx, orgId, { contactIds }, channel, 'unsubscribed', 'import', at, woken);
}

/**
 * Runs an import to its end, or as far as this worker gets: claims it (a second import of the
 * organization waits: this returns and the running one starts it when it ends), stages the file
 * unless an earlier attempt did, merges from the last whole batch, and ends it. Safe to run twice.
 * When `signal` aborts, it leaves at the next row or batch, gives its lease up and throws, so that
 * the job's retry resumes the import.
 */
export async function runImport(deps: Deps, orgId: string, importId: string, signal?: AbortSignal): Promise<'done' | 'waiting' | 'gone'> {
  let job: ImportRow | undefined;
  try {
    [job] = await run(deps.db, claimImport, { orgId, importId, now: new Date(), leasedUntil: leaseUntil(deps) });
  } catch (err) {
    if (isUniqueViolation(err)) return 'waiting';
    throw err;
  }
  if (!job) return 'gone';
  await run(deps.db, importChanged, { orgId, importId });
  const options = job.options as unknown as StoredOptions;
  let outcome: { status: 'completed' | 'failed'; failure: string | null } | null = { status: 'completed', failure: null };
  try {
    if (!job.staged) {
      await stage(deps, job, options, signal);
      // Fresh statistics for the rows just copied: planned without them, the first batch's insert
      // took 20 times as long as the next ones.
      await deps.db.raw('ANALYZE contact_import_rows');
    }
    await merge(deps, job, options, signal);
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    if (err.reason === 'superseded') return 'gone';
    if (err.reason === 'interrupted') {
      await run(deps.db, releaseImport, { orgId, importId, attempt: job.attempts, now: new Date() });
      throw err;
    }
    outcome = err.reason === 'failed' ? { status: 'failed', failure: err.message } : null;
  }
  if (outcome) {
    const [ended] = await run(deps.db, finishImport, { orgId, importId, attempt: job.attempts, ...outcome, now: new Date() });
    if (ended) await run(deps.db, importChanged, { orgId, importId });
    else if ((await stopped(deps, job)).reason === 'superseded') return 'gone';
  }
  await run(deps.db, dropStaging, { orgId, importId });
  return 'done';
}
