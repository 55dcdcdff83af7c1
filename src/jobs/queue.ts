import { makeWorkerUtils, runMigrations, type WorkerUtils } from 'graphile-worker';
import { statement } from '../db/statements.js';
import type { Logger as PinoLogger } from 'pino';
import { quietLogger } from './logger.js';
import { queuePool } from './pool.js';

export interface JobSpec {
  task: string;
  payload: Record<string, unknown>;
  runAt?: Date;
  jobKey?: string;
  /** With a `jobKey`: `replace` (the default) moves a waiting job to this one's time; `preserve_run_at` keeps the waiting job's time. */
  jobKeyMode?: 'replace' | 'preserve_run_at';
  maxAttempts?: number;
}

/** The durable Postgres job queue (graphile-worker) as Herald's services use it. */
export interface Queue {
  add(job: JobSpec): Promise<void>;
  addMany(jobs: JobSpec[]): Promise<void>;
  remove(jobKey: string): Promise<void>;
  close(): Promise<void>;
}

/** graphile-worker keeps its tables in its own schema; run before any worker or enqueue. */
export async function migrateQueue(connectionString: string, log: PinoLogger): Promise<void> {
  await runMigrations({ connectionString, logger: quietLogger(log) });
}

/** The connections enqueuing holds at most (graphile-worker's default for its utilities). */
const QUEUE_UTILS_CONNECTIONS = 10;

export async function createQueue(connectionString: string, log: PinoLogger): Promise<Queue> {
  const { pool, end } = queuePool(connectionString, QUEUE_UTILS_CONNECTIONS, log.child({ component: 'queue' }));
  let utils: WorkerUtils;
  try {
    utils = await makeWorkerUtils({ pgPool: pool, logger: quietLogger(log) });
  } catch (err) {
    await end();
    throw err;
  }
  return {
    async add(job) {
      await utils.addJob(job.task, job.payload, {
        runAt: job.runAt,
        jobKey: job.jobKey,
        jobKeyMode: job.jobKey ? (job.jobKeyMode ?? 'replace') : undefined,
        maxAttempts: job.maxAttempts ?? 10,
      });
    },
    async addMany(jobs) {
      for (let i = 0; i < jobs.length; i += 1000) {
        // Bulk insert; addJobs has no jobKeyMode, so a matching key is replaced (its default) unless running.
        await utils.addJobs(
          jobs.slice(i, i + 1000).map((j) => ({
            identifier: j.task,
            payload: j.payload,
            runAt: j.runAt,
            jobKey: j.jobKey,
            maxAttempts: j.maxAttempts ?? 10,
          })),
          true,
        );
      }
    },
    async remove(jobKey) {
      await utils.withPgClient((client) => client.query('SELECT graphile_worker.remove_job($1)', [jobKey]));
    },
    close: async () => {
      await utils.release();
      // Closed before the close resolves, so that nothing of the queue's is left on the database.
      await end();
    },
  };
}

/**
 * Queues a job in the caller's transaction (graphile-worker's own `add_job`), so that it exists if
 * and only if the change that needs it commits. Reads no table of Herald's: on Citus it runs on the
 * coordinator, where the queue's schema is.
 */
export const addJobStatement = statement<{ task: string; payload: string; runAt: Date; jobKey: string; mode: string; maxAttempts: number }>(
  'herald_queue_add_job',
  `SELECT graphile_worker.add_job(:task, :payload::json, run_at := :runAt::timestamptz, job_key := :jobKey, job_key_mode := :mode,
                                  max_attempts := :maxAttempts::int)`,
);

/** Removes the waiting job of a key in the caller's transaction (a running one finishes). */
export const removeJobStatement = statement<{ jobKey: string }>('herald_queue_remove_job', `SELECT graphile_worker.remove_job(:jobKey)`);

/** `addJobStatement`'s parameters for a job (which must have a key). */
export const inTransaction = (job: JobSpec & { jobKey: string }) => ({
  task: job.task,
  payload: JSON.stringify(job.payload),
  runAt: job.runAt ?? new Date(),
  jobKey: job.jobKey,
  mode: job.jobKeyMode ?? 'replace',
  maxAttempts: job.maxAttempts ?? 10,
});
