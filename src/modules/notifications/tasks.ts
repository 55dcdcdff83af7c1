import type { Deps } from '../../context.js';
import { settleAbandoned } from '../../delivery/pipeline.js';

/** The notifications module's part of the periodic sweep: sends a dead process left unsettled are settled and refunded. */
export async function sweepSends(deps: Deps): Promise<void> {
  const abandoned = await settleAbandoned(deps.db, deps.config.sendAbandonSeconds);
  if (abandoned) deps.log.warn({ logs: abandoned }, 'settled message logs abandoned by a dead process');
}
