import type { TaskList } from 'graphile-worker';
import type { Db } from '../db/database.js';
import { run, statement } from '../db/statements.js';
import { jobDuration, queueJobs, secondsSince } from '../lib/metrics.js';

/** Every task of `tasks`, timed into `herald_job_duration_seconds` by its name and outcome. */
export function timedTasks(tasks: TaskList): TaskList {
  const timed: TaskList = {};
  for (const [name, task] of Object.entries(tasks)) {
    if (!task) continue;
    timed[name] = async (payload, helpers) => {
      const start = process.hrtime.bigint();
      let outcome = 'failure';
      try {
        const result = await task(payload, helpers);
        outcome = 'success';
        return result;
      } finally {
        jobDuration.observe({ task: name, outcome }, secondsSince(start));
      }
    };
  }
  return timed;
}

const STATES = ['waiting', 'scheduled', 'locked', 'failed'] as const;
type QueueRow = { task: string } & Record<(typeof STATES)[number], number>;

/**
 * The queue's jobs per task and state, through graphile-worker's public `jobs` view: one pass over
 * the jobs table, which holds only what is queued or running (finished jobs are deleted), so it stays
 * small however much has been sent.
 */
export const queueDepth = statement<Record<string, never>, QueueRow>(
  'herald_queue_depth',
  `SELECT task_identifier AS task,
          count(*) FILTER (WHERE locked_at IS NULL AND attempts < max_attempts AND run_at <= now())::int AS waiting,
          count(*) FILTER (WHERE locked_at IS NULL AND attempts < max_attempts AND run_at > now())::int AS scheduled,
          count(*) FILTER (WHERE locked_at IS NOT NULL)::int AS locked,
          count(*) FILTER (WHERE locked_at IS NULL AND attempts >= max_attempts)::int AS failed
   FROM graphile_worker.jobs GROUP BY task_identifier`,
);

/**
 * A scrape-time reading of `herald_queue_jobs`: every state of each task with jobs, and of each task
 * in `known` (0 when it has none). The gauge is emptied first, so a scrape the database does not
 * answer in time (see `metricsText`) shows no queue rather than old numbers.
 */
export function readQueueDepth(db: Db, known: readonly string[]): () => Promise<void> {
  return async () => {
    queueJobs.reset();
    const rows = await run(db, queueDepth, {});
    for (const task of known) for (const state of STATES) queueJobs.set({ task, state }, 0);
    for (const row of rows) for (const state of STATES) queueJobs.set({ task: row.task, state }, row[state]);
  };
}
