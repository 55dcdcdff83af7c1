import type { TaskList } from 'graphile-worker';
import type { Deps } from './context.js';
import { timedTasks } from './jobs/metrics.js';
import { sweeper } from './jobs/sweeper.js';
import { campaignTasks, sweepCampaigns } from './modules/campaigns/tasks.js';
import { importTasks, sweepImports } from './modules/contact-imports/tasks.js';
import { sweepSends } from './modules/notifications/tasks.js';
import { sandboxTasks } from './modules/sandbox/receipts.js';
import { sweepWebhooks, webhookTasks } from './modules/webhooks/delivery.js';

/**
 * Every task a worker process runs, in two lanes (`jobs/worker.ts`): `tasks`, the modules' own and
 * the periodic sweep made of their parts, on the process's `WORKER_CONCURRENCY` slots; and
 * `background`, work that must never hold one of those slots while a send waits (the sandbox's
 * simulated receipts: a campaign chunk's job records thousands, for a second and more). `onStart`
 * schedules the sweep whenever the workers (re)start. Each task is timed into the job metrics.
 */
export function workerTasks(deps: Deps): { tasks: TaskList; background: TaskList; onStart: () => Promise<void> } {
  const sweep = sweeper(deps, [sweepCampaigns, sweepSends, sweepWebhooks, sweepImports]);
  return {
    tasks: timedTasks({ ...campaignTasks(deps), ...webhookTasks(deps), ...importTasks(deps), ...sweep.tasks }),
    background: timedTasks(sandboxTasks(deps)),
    onStart: sweep.schedule,
  };
}
