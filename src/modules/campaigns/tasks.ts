import type { TaskList } from 'graphile-worker';
import type { Deps } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { enqueue } from '../../delivery/scheduler.js';
import type { Channel } from '../../delivery/types.js';
import { laneOf, settleInterruptedBatches, stalledWork } from './batches.js';
import type { CampaignRow } from './dto.js';
import { AUTOMATION_TASK, CHUNK_TASK, RUN_TASK, START_TASK, startJob } from './jobs.js';
import { fireRun, sendDue, startRun, sweepRuns } from './runs.js';
import { enqueueCampaign, start } from './start.js';

/** The campaigns module's queue tasks. Each is safe to run twice: the database decides who sends. */
export function campaignTasks(deps: Deps): TaskList {
  return {
    [START_TASK]: async (payload) => {
      const { orgId, campaignId } = payload as { orgId: string; campaignId: string };
      const campaign = (await tenant(deps.db, orgId).scoped('campaigns').where('campaigns.id', campaignId).first()) as CampaignRow | undefined;
      if (!campaign || campaign.status !== 'scheduled') return;
      if (campaign.parent_id) {
        // A run left `scheduled` by a process that died before starting it.
        await startRun(deps, campaign);
        return;
      }
      if (campaign.schedule_date && campaign.schedule_date.getTime() > Date.now() + 1000) {
        await deps.queue.add(startJob(campaign));
        return;
      }
      const { total } = await start(deps, campaign, { checkCredits: false });
      if (total) await enqueueCampaign(deps, campaign);
    },
    [RUN_TASK]: async (payload) => {
      const { orgId, campaignId, scheduledAt } = payload as { orgId: string; campaignId: string; scheduledAt: string };
      await fireRun(deps, { orgId, campaignId, scheduledAt: new Date(scheduledAt) });
    },
    [AUTOMATION_TASK]: async (payload) => {
      const { orgId, campaignId } = payload as { orgId: string; campaignId: string };
      await sendDue(deps, orgId, campaignId);
    },
    [CHUNK_TASK]: async (payload) => {
      const { orgId, campaignId, channel } = payload as { orgId: string; campaignId: string; channel: Channel };
      const campaign = (await tenant(deps.db, orgId).scoped('campaigns').where('campaigns.id', campaignId).first('type')) as Pick<CampaignRow, 'type'> | undefined;
      if (campaign) await enqueue(deps.db, [{ orgId, campaignId, channel, lane: laneOf(campaign) }]);
    },
  };
}

/**
 * The campaigns module's part of the periodic sweep: campaign channels whose batches' lease ran out
 * (their worker died, or their queue row was lost) are queued again; scheduled starts whose job is stuck (held by a process
 * that died, or by a worker pool that failed while Postgres was away: graphile-worker frees such
 * locks only after hours) are queued again (the start itself only ever moves a campaign out of
 * `scheduled` once); batches of canceled campaigns a dead worker left mid-send are settled.
 */
export async function sweepCampaigns(deps: Deps): Promise<void> {
  const stalled = await stalledWork(deps.db, deps.config.campaignLeaseSeconds);
  if (stalled.length) {
    deps.log.warn({ channels: stalled.length }, 'requeueing campaign channels with stalled batches');
    await enqueue(deps.db, stalled);
  }
  const overdue = (await deps.db('campaigns')
    .where({ status: 'scheduled' })
    .andWhere('schedule_date', '<', deps.db.raw('now() - make_interval(secs => ?)', [deps.config.campaignLeaseSeconds]))
    .limit(1000)) as CampaignRow[];
  if (overdue.length) {
    deps.log.warn({ campaigns: overdue.length }, 'requeueing overdue scheduled campaigns');
    await deps.queue.addMany(overdue.map((c) => ({ ...startJob(c), runAt: new Date() })));
  }
  await sweepRuns(deps);
  const interrupted = await settleInterruptedBatches(deps);
  if (interrupted) deps.log.warn({ batches: interrupted }, 'settled batches of canceled campaigns abandoned by a dead worker');
}
