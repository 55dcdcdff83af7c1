import { run, type Runner, type TaskList } from 'graphile-worker';
import type { Deps } from '../context.js';
import { tenant } from '../db/tenant.js';
import { settleAbandoned } from '../delivery/pipeline.js';
import { processChunk, settleInterruptedBatches, stalledChunks, type ChunkRef } from '../modules/campaigns/batches.js';
import type { CampaignRow } from '../modules/campaigns/dto.js';
import { chunkJob, startJob } from '../modules/campaigns/jobs.js';
import { enqueueChunks, start } from '../modules/campaigns/service.js';
import { quietLogger } from './logger.js';

const SWEEP_KEY = 'campaign-sweep';

/** The tasks every worker process runs. Each is safe to run twice: the database decides who sends. */
export function taskList(deps: Deps): TaskList {
  return {
    'campaign-start': async (payload) => {
      const { orgId, campaignId } = payload as { orgId: string; campaignId: string };
      const campaign = (await tenant(deps.db, orgId).scoped('campaigns').where('campaigns.id', campaignId).first()) as CampaignRow | undefined;
      if (!campaign || campaign.status !== 'scheduled') return;
      if (campaign.schedule_date && campaign.schedule_date.getTime() > Date.now() + 1000) {
        await deps.queue.add(startJob(campaign));
        return;
      }
      const { total } = await start(deps, campaign, { checkCredits: false });
      if (total) await enqueueChunks(deps, orgId, campaignId);
    },
    'campaign-chunk': async (payload) => {
      await processChunk(deps, payload as ChunkRef);
    },
    [SWEEP_KEY]: async () => {
      const stalled = await stalledChunks(deps.db, deps.config.campaignLeaseSeconds);
      if (stalled.length) {
        deps.log.warn({ chunks: stalled.length }, 'requeueing stalled campaign chunks');
        await deps.queue.addMany(stalled.map(chunkJob));
      }
      // A scheduled start whose job is stuck (held by a process that died, or by a worker pool that
      // failed while Postgres was away: graphile-worker frees such locks only after hours) is queued
      // again; the start itself only ever moves a campaign out of `scheduled` once.
      const overdue = (await deps.db('campaigns')
        .where({ status: 'scheduled' })
        .andWhere('schedule_date', '<', deps.db.raw('now() - make_interval(secs => ?)', [deps.config.campaignLeaseSeconds]))
        .limit(1000)) as CampaignRow[];
      if (overdue.length) {
        deps.log.warn({ campaigns: overdue.length }, 'requeueing overdue scheduled campaigns');
        await deps.queue.addMany(overdue.map((c) => ({ ...startJob(c), runAt: new Date() })));
      }
      const interrupted = await settleInterruptedBatches(deps);
      if (interrupted) deps.log.warn({ batches: interrupted }, 'settled batches of canceled campaigns abandoned by a dead worker');
      const abandoned = await settleAbandoned(deps.db, deps.config.sendAbandonSeconds);
      if (abandoned) deps.log.warn({ logs: abandoned }, 'settled message logs abandoned by a dead process');
      await scheduleSweep(deps);
    },
  };
}

/** The sweeper re-queues itself; its job key keeps one pending sweep however many workers run. */
async function scheduleSweep(deps: Deps): Promise<void> {
  const every = Math.max(1, Math.min(30, Math.floor(deps.config.campaignLeaseSeconds / 2)));
  await deps.queue.add({ task: SWEEP_KEY, payload: {}, jobKey: SWEEP_KEY, runAt: new Date(Date.now() + every * 1000), maxAttempts: 3 });
}

function startRunner(deps: Deps, connectionString: string): Promise<Runner> {
  return run({
    connectionString,
    concurrency: deps.config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger(deps.log),
    taskList: taskList(deps),
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
export async function supervise(start: () => Promise<RunnerLike>, log: Deps['log'], onStart: () => Promise<void> = async () => {}): Promise<Workers> {
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

export function startWorkers(deps: Deps, connectionString: string): Promise<Workers> {
  return supervise(() => startRunner(deps, connectionString), deps.log, () => scheduleSweep(deps));
}
