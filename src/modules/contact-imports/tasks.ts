import type { TaskList } from 'graphile-worker';
import type { Deps } from '../../context.js';
import { run } from '../../db/statements.js';
import { IMPORT_TASK, importJob } from './jobs.js';
import { runImport } from './runner.js';
import { nextQueued } from './sql.js';

/**
 * The contact imports' queue task: runs the import, then starts the organization's next one waiting.
 * A worker that stops mid-import throws after giving it up; the job's retry resumes it. `drain`
 * (the process stops) asks its imports to leave at their next row or batch at once, not when the
 * queue's abort comes (`ABORT_JOBS_AFTER_MS` later): another worker resumes them from there, and a
 * fast database merged the rest of a 200,000-row file in those seconds.
 */
export function importTasks(deps: Deps): { tasks: TaskList; drain: () => Promise<void> } {
  const stopping = new AbortController();
  return {
    tasks: {
      [IMPORT_TASK]: async (payload, helpers) => {
        const { orgId, importId } = payload as { orgId: string; importId: string };
        const signal = helpers.abortSignal ? AbortSignal.any([helpers.abortSignal, stopping.signal]) : stopping.signal;
        const outcome = await runImport(deps, orgId, importId, signal);
        if (outcome !== 'done') return;
        const [next] = await run(deps.db, nextQueued, { orgId });
        if (next) await deps.queue.add(importJob(orgId, next.id));
      },
    },
    drain: async () => stopping.abort(),
  };
}

/**
 * The imports' part of the periodic sweep: a running import whose worker's lease ran out (the
 * worker died) is queued again, to resume after its last whole batch; a queued import is queued
 * again when its organization has none running (its job was lost, or it waited for one that died).
 */
export async function sweepImports(deps: Deps): Promise<void> {
  const orphaned = (await deps.db('contact_imports as i')
    .whereIn('i.status', ['queued', 'running'])
    .where((w) =>
      w
        .where((r) => r.where('i.status', 'running').andWhere('i.leased_until', '<', new Date()))
        .orWhere((q) =>
          q
            .where('i.status', 'queued')
            .andWhere('i.created_at', '<', new Date(Date.now() - deps.config.campaignLeaseSeconds * 1000))
            .whereNotExists(deps.db('contact_imports as r').whereRaw('r.organization_id = i.organization_id').andWhere('r.status', 'running')),
        ),
    )
    .select('i.organization_id', 'i.id')
    .limit(1000)) as { organization_id: string; id: string }[];
  if (!orphaned.length) return;
  deps.log.warn({ imports: orphaned.length }, 'requeueing contact imports left by a dead worker');
  await deps.queue.addMany(orphaned.map((i) => ({ ...importJob(i.organization_id, i.id), runAt: new Date() })));
}
