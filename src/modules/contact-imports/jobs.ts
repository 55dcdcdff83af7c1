import type { JobSpec } from '../../jobs/queue.js';

/** The contact imports' task, by name. */
export const IMPORT_TASK = 'contact-import';

/** An import's run: keyed by the import, so the sweeper queueing it again while it waits is one job. */
export const importJob = (orgId: string, importId: string): JobSpec => ({
  task: IMPORT_TASK,
  payload: { orgId, importId },
  jobKey: `contact-import:${importId}`,
  maxAttempts: 5,
});
