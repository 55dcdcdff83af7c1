import type { Deps } from '../../context.js';
import { foldStats } from './service.js';

/** The stats module's part of the periodic sweep: the rollup's changes folded into its days and campaigns. */
export async function sweepStats(deps: Deps): Promise<void> {
  await foldStats(deps.db);
}
