import { operation } from '../../operation.js';
import { ProgressFeed, PROGRESS_INTERVAL_MS, type Watched } from '../campaigns/progress.js';
import type { ContactImportDto } from './dto.js';
import { get } from './service.js';

const FINAL = new Set(['completed', 'failed', 'canceled']);

const IMPORT: Watched<ContactImportDto> = {
  isFinal: (i) => FINAL.has(i.status),
  shown: (i) => JSON.stringify([i.status, i.rowsRead, i.created, i.updated, i.skipped, i.failed, i.updatedAt]),
};

/**
 * An import's live progress (`contactImportProgress`), authorized as `contactImport(id)` is: the
 * process's listener (the campaigns' channel carries imports' announcements too) marks it changed,
 * and the feed reads it again at most every 250 ms.
 */
export const watch = operation({
  access: { role: 'any', apiKeys: true },
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<AsyncIterableIterator<ContactImportDto>> {
    const feed = new ProgressFeed(() => get(ctx, undefined, { id }), ctx.log, PROGRESS_INTERVAL_MS, IMPORT);
    feed.onEnd(ctx.progress.subscribe(ctx.caller.orgId, id, () => feed.changed()));
    await feed.start();
    return feed;
  },
});
