import { run, type Runner, type TaskList } from 'graphile-worker';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { quietLogger } from './logger.js';
import { queuePool } from './pool.js';

/** What running workers needs of the process. */
export interface WorkerDeps {
  config: { workerConcurrency: number };
  log: Logger;
}

/**
 * A runner on a pool of its own (`queuePool`), closed once the runner has ended: asked to stop, or
 * stopping itself when its pool failed (then `supervise` starts another on a new pool).
 */
async function startRunner(deps: WorkerDeps, connectionString: string, taskList: TaskList): Promise<RunnerLike> {
  const { pool, end } = queuePool(connectionString, QUEUE_CONNECTIONS_PER_LANE, deps.log.child({ component: 'queue' }));
  let runner: Runner;
  try {
    runner = await runOn(deps, pool, taskList);
  } catch (err) {
    await end();
    throw err;
  }
  const ended = runner.promise.then(end, end);
  return {
    promise: runner.promise,
    events: runner.events,
    stop: async (...args: Parameters<Runner['stop']>) => {
      try {
        await runner.stop(...args);
      } finally {
        await ended;
      }
    },
    kill: async (...args: Parameters<Runner['kill']>) => {
      try {
        await runner.kill(...args);
      } finally {
        await end();
      }
    },
  };
}

function runOn(deps: WorkerDeps, pgPool: Pool, taskList: TaskList): Promise<Runner> {
  return run({
    pgPool,
    concurrency: deps.config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger(deps.log),
    taskList,
    preset: {
      worker: {
        gracefulShutdownAbortTimeout: ABORT_JOBS_AFTER_MS,
        localQueue: { size: Math.max(10, deps.config.workerConcurrency * 5) },
        // Record job outcomes through graphile-worker's batching path, which retries with backoff
        // (minutes) while Postgres is away. Unbatched, a failure to record one is left as an
        // unhandled rejection (worker.js calls failJob without awaiting it) and ends the process.
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
  } as Parameters<typeof run>[0]);
}

/**
 * The most connections a lane's runner holds (its own pool, beside `DATABASE_POOL_MAX`): it uses
 * them to listen (one, held), fetch a batch and record outcomes; its lane's jobs use Herald's own
 * pool. Each lane of a process has a runner.
 */
export const QUEUE_CONNECTIONS_PER_LANE = 4;

/**
 * Stopping, running jobs get this long to end by themselves; then their `abortSignal` asks them to
 * stop (a long task, the contact import, leaves at its next row or batch for another worker to resume).
 */
export const ABORT_JOBS_AFTER_MS = 5_000;
/**
 * A job still running this long after the stop began is failed back to the queue, which hands it to
 * another worker within seconds (every task is safe to run twice), and the stop goes on: a job
 * never holds a process's shutdown longer than this.
 */
export const KILL_JOBS_AFTER_MS = 20_000;

export interface Workers {
  stop(): Promise<void>;
}

/** What supervision needs of a graphile-worker runner. */
export type RunnerLike = Pick<Runner, 'promise' | 'stop' | 'kill'> & { events?: Pick<Runner['events'], 'on'> };

/** The jobs a runner is running, as task names by job id (for what a slow stop says it waits on). */
function runningJobs(runner: RunnerLike): Map<string, string> {
  const running = new Map<string, string>();
  runner.events?.on('job:start', ({ job }) => running.set(job.id, job.task_identifier));
  runner.events?.on('job:complete', ({ job }) => running.delete(job.id));
  return running;
}

/**
 * Stops `runner`: no new jobs, running ones end (asked to after ABORT_JOBS_AFTER_MS); those still
 * running after KILL_JOBS_AFTER_MS are failed back to the queue, logged, and the stop returns.
 */
async function stopRunner(runner: RunnerLike, running: Map<string, string>, log: Logger): Promise<void> {
  let late: NodeJS.Timeout | undefined;
  const stopped = runner.stop().catch((err: unknown) => log.warn({ err }, 'queue workers stopped with an error'));
  const killed = new Promise<void>((resolve) => {
    late = setTimeout(() => {
      log.warn({ jobs: [...running.values()] }, 'jobs still running as the workers stop: handed back to the queue for another worker');
      runner
        .kill('stopping')
        .catch((err: unknown) => log.warn({ err }, 'queue workers could not hand their jobs back'))
        .finally(resolve);
    }, KILL_JOBS_AFTER_MS);
  });
  try {
    await Promise.race([stopped, killed]);
  } finally {
    clearTimeout(late);
  }
}

/**
 * Keeps a runner running: when it ends without being asked to (graphile-worker shuts its pool down
 * when it can not record a job's outcome, e.g. Postgres away), that is logged and a new runner started, with growing pauses while starting fails. The jobs the old pool
 * held are unlocked by graphile-worker after its lock timeout, and every task is safe to run twice.
 */
export async function supervise(start: () => Promise<RunnerLike>, log: Logger, onStart: () => Promise<void> = async () => {}): Promise<Workers> {
  let runner: RunnerLike | null = null;
  let running = new Map<string, string>();
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;

  // graphile-worker's runner stops itself when its pool fails, and its promise then resolves (or,
  // for other failures, rejects): either way, a runner that ends while not asked to is replaced.
  const watch = (current: RunnerLike) => {
    const ended = (err: unknown) => {
      if (stopping || runner !== current) return;
      runner = null;
      log.error({ err }, 'queue workers stopped unexpectedly; starting them again');
      restart(1000);
    };
    current.promise.then(() => ended(null), ended);
  };
  const restart = (delayMs: number) => {
    timer = setTimeout(() => {
      if (stopping) return;
      start().then(
        (next) => {
          if (stopping) return void next.stop().catch(() => undefined);
          runner = next;
          running = runningJobs(next);
          watch(next);
          onStart().catch((err: unknown) => log.warn({ err }, 'queue workers restarted, but their start-up step failed'));
        },
        (err: unknown) => {
          log.warn({ err }, 'queue workers could not start yet');
          restart(Math.min(delayMs * 2, 15_000));
        },
      );
    }, delayMs);
  };

  runner = await start();
  running = runningJobs(runner);
  watch(runner);
  await onStart();
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      const current = runner;
      runner = null;
      if (current) await stopRunner(current, running, log);
    },
  };
}

/** Runs `tasks` under supervision; `onStart` runs after each (re)start (the sweep schedules itself there). */
export function startWorkers(deps: WorkerDeps, connectionString: string, tasks: TaskList, onStart?: () => Promise<void>): Promise<Workers> {
  return supervise(() => startRunner(deps, connectionString, tasks), deps.log, onStart);
}

/** A runner of its own for some tasks: it fetches only their jobs, at most `concurrency` at once. */
export interface WorkerLane {
  name: string;
  tasks: TaskList;
  concurrency: number;
  /** What the lane's tasks left going beside their jobs, ended when the process stops (with the runners). */
  drain?: () => Promise<void>;
}

/**
 * Runs a process's lanes (`tasks.ts` `workerLanes`), each a runner of its own with its own slots;
 * `onStart` runs with the first. A runner fetches only its own tasks' jobs, a batch ahead (its local
 * queue), so a lane's jobs never wait in another's batch nor for its slots: in one runner, a
 * campaign launched while another's simulated receipts were recorded waited for the receipts jobs
 * fetched before its chunks (seconds: bench/campaign, under receipts), and a slow webhook endpoint's
 * delivery run held a sending slot while it lasted.
 */
export async function startWorkerLanes(
  deps: WorkerDeps,
  connectionString: string,
  lanes: readonly WorkerLane[],
  onStart?: () => Promise<void>,
): Promise<Workers> {
  const started: Workers[] = [];
  try {
    for (const [i, lane] of lanes.entries()) {
      const laneDeps = { config: { workerConcurrency: lane.concurrency }, log: deps.log.child({ lane: lane.name }) };
      started.push(await startWorkers(laneDeps, connectionString, lane.tasks, i === 0 ? onStart : undefined));
    }
  } catch (err) {
    await Promise.all(started.map((w) => w.stop()));
    throw err;
  }
  return {
    async stop() {
      await Promise.all([...started.map((w) => w.stop()), ...lanes.map((lane) => lane.drain?.())]);
    },
  };
}
