import { makeWorkerUtils, runMigrations, type WorkerUtils } from 'graphile-worker';
import type { Logger as PinoLogger } from 'pino';
import { quietLogger } from './logger.js';

export interface JobSpec {
  task: string;
  payload: Record<string, unknown>;
  runAt?: Date;
  jobKey?: string;
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

export async function createQueue(connectionString: string, log: PinoLogger): Promise<Queue> {
  const utils: WorkerUtils = await makeWorkerUtils({ connectionString, logger: quietLogger(log) });
  return {
    async add(job) {
      await utils.addJob(job.task, job.payload, {
        runAt: job.runAt,
        jobKey: job.jobKey,
        jobKeyMode: job.jobKey ? 'replace' : undefined,
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
    },
  };
}
