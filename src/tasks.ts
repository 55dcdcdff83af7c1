import type { Deps } from './context.js';
import { timedTasks } from './jobs/metrics.js';
import type { WorkerLane } from './jobs/worker.js';
import { sweeper } from './jobs/sweeper.js';
import { Dispatcher } from './delivery/scheduler.js';
import { serveTurn } from './modules/campaigns/batches.js';
import { campaignTasks, sweepCampaigns } from './modules/campaigns/tasks.js';
import { importTasks, sweepImports } from './modules/contact-imports/tasks.js';
import { sweepSends } from './modules/notifications/tasks.js';
import { sweepStats } from './modules/stats/tasks.js';
import { sandboxTasks } from './modules/sandbox/receipts.js';
import { sweepWebhooks, webhookTasks } from './modules/webhooks/delivery.js';
import { erasureTasks } from './modules/erasure/service.js';
import { retentionTasks } from './modules/retention/service.js';
import { closureTasks } from './modules/closure/service.js';

/**
 * Every task a worker process runs, in lanes that never take each other's jobs: `sending`, the
 * campaigns' chunks and runs and the periodic sweep made of the modules' parts, on the process's
 * `WORKER_CONCURRENCY` slots; `webhooks`, the jobs that start endpoints' delivery runs, on as many
 * (a job ends once its run is started, never waiting on a receiver, and is never queued behind a
 * campaign's chunks);
 * `imports`, the contact imports, erasures of people, closings of organizations and the daily retention purge, on as many (one organization's import at a
 * time, but a 1,000,000-row file held a sending slot for as long as it took); and `receipts`, the sandbox's simulated
 * receipts, one job at a time (a campaign chunk's job records thousands, for a second and more).
 * `onStart` schedules the sweep whenever the workers (re)start. Each task is timed into the job
 * metrics.
 */
export function workerLanes(deps: Deps): { lanes: WorkerLane[]; onStart: () => Promise<void> } {
  const sweep = sweeper(deps, [sweepCampaigns, sweepSends, sweepWebhooks, sweepImports, sweepStats]);
  const concurrency = deps.config.workerConcurrency;
  const webhooks = webhookTasks(deps);
  const imports = importTasks(deps);
  const retention = retentionTasks(deps);
  return {
    lanes: [
      { name: 'sending', tasks: timedTasks({ ...campaignTasks(deps), ...sweep.tasks }), concurrency },
      { name: 'webhooks', tasks: timedTasks(webhooks.tasks), concurrency, drain: webhooks.drain },
      { name: 'imports', tasks: timedTasks({ ...imports.tasks, ...erasureTasks(deps), ...closureTasks(deps), ...retention.tasks }), concurrency, drain: imports.drain },
      { name: 'receipts', tasks: timedTasks(sandboxTasks(deps)), concurrency: 1 },
    ],
    onStart: async () => {
      await sweep.schedule();
      await retention.schedule();
    },
  };
}

/**
 * The delivery engine's dispatcher of a worker process: `WORKER_CONCURRENCY` turns at once, taken
 * fairly across organizations from the send queue, each serving a campaign's (or run's) batches.
 */
export function sendDispatcher(deps: Deps, connectionString: string): Dispatcher {
  return new Dispatcher({
    db: deps.db,
    log: deps.log.child({ component: 'dispatcher' }),
    connectionString,
    slots: deps.config.workerConcurrency,
    serve: (turn) => serveTurn(deps, turn),
  });
}
