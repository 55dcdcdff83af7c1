import { run, type Runner, type TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import { quietLogger } from './logger.js';

/** What running workers needs of the process. */
export interface WorkerDeps {
  config: { workerConcurrency: number };
  log: Logger;
}

function startRunner(deps: WorkerDeps, connectionString: string, taskList: TaskList): Promise<Runner> {
  return run({
    connectionString,
    concurrency: deps.config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger(deps.log),
    taskList,
    preset: {
      worker: {
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

export interface Workers {
  stop(): Promise<void>;
}

/** What supervision needs of a graphile-worker runner. */
export type RunnerLike = Pick<Runner, 'promise' | 'stop'>;

/**
 * Keeps a runner running: when it ends without being asked to (graphile-worker shuts its pool down
 * when it can not record a job's outcome, e.g. Postgres away), that is logged and a new runner started, with growing pauses while starting fails. The jobs the old pool
 * held are unlocked by graphile-worker after its lock timeout, and every task is safe to run twice.
 */
export async function supervise(start: () => Promise<RunnerLike>, log: Logger, onStart: () => Promise<void> = async () => {}): Promise<Workers> {
  let runner: RunnerLike | null = null;
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
  watch(runner);
  await onStart();
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      const current = runner;
      runner = null;
      await current?.stop().catch((err: unknown) => log.warn({ err }, 'queue workers stopped with an error'));
    },
  };
}

/** Runs `tasks` under supervision; `onStart` runs after each (re)start (the sweep schedules itself there). */
export function startWorkers(deps: WorkerDeps, connectionString: string, tasks: TaskList, onStart?: () => Promise<void>): Promise<Workers> {
  return supervise(() => startRunner(deps, connectionString, tasks), deps.log, onStart);
}
