import type { TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import type { Queue } from './queue.js';

const SWEEP_TASK = 'campaign-sweep';

/** What the sweep needs of the process; its parts get the whole of `D`. */
export interface SweepDeps {
  config: { campaignLeaseSeconds: number };
  queue: Queue;
  log: Pick<Logger, 'error'>;
}

/** A module's part of the sweep: finds work a dead process left behind and puts it right. */
export type Sweep<D> = (deps: D) => Promise<void>;

/**
 * One periodic sweep for the whole cluster, made of the modules' parts: it re-queues itself, and its
 * job key keeps one pending sweep however many workers run. (Its task name predates the parts.)
 * A part that fails is logged and does not stop the others, nor the next sweep.
 */
export function sweeper<D extends SweepDeps>(deps: D, parts: readonly Sweep<D>[]): { tasks: TaskList; schedule: () => Promise<void> } {
  const schedule = async () => {
    const every = Math.max(1, Math.min(30, Math.floor(deps.config.campaignLeaseSeconds / 2)));
    await deps.queue.add({ task: SWEEP_TASK, payload: {}, jobKey: SWEEP_TASK, runAt: new Date(Date.now() + every * 1000), maxAttempts: 3 });
  };
  return {
    tasks: {
      [SWEEP_TASK]: async () => {
        try {
          for (const part of parts) {
            try {
              await part(deps);
            } catch (err) {
              deps.log.error({ err, part: part.name }, 'a sweep part failed; the next sweep runs it again');
            }
          }
        } finally {
          await schedule();
        }
      },
    },
    schedule,
  };
}
