import type { JobSpec } from '../../jobs/queue.js';
import type { CampaignRow } from './dto.js';

/** The campaigns module's tasks, by name. */
export const START_TASK = 'campaign-start';
/**
 * A campaign chunk's job, as queued before the send queue (`delivery/scheduler.ts`) took over: one
 * still waiting queues its campaign's channel there.
 */
export const CHUNK_TASK = 'campaign-chunk';
/** A recurring campaign's run at one time of its rule. */
export const RUN_TASK = 'campaign-run';
/** An automated campaign's send to the contacts whose delay has passed. */
export const AUTOMATION_TASK = 'campaign-automation';

/** One waiting run job per recurring campaign: the next one. */
export const runJobKey = (campaignId: string) => `campaign-run:${campaignId}`;
export const automationJobKey = (campaignId: string) => `campaign-automation:${campaignId}`;

/**
 * A recurring campaign's run due at `scheduledAt` (its identity with the campaign), queued at the
 * wall-clock time as far ahead as `scheduledAt` is on the campaigns' clock (`Deps.clock`).
 */
export const runJob = (orgId: string, campaignId: string, scheduledAt: Date, clockNow: Date) => ({
  task: RUN_TASK,
  payload: { orgId, campaignId, scheduledAt: scheduledAt.toISOString() },
  runAt: new Date(Date.now() + Math.max(0, scheduledAt.getTime() - clockNow.getTime())),
  jobKey: runJobKey(campaignId),
  maxAttempts: 25,
});

export const startJobKey = (campaignId: string) => `campaign-start:${campaignId}`;

/** The scheduled start: one job per campaign, keyed so rescheduling moves it and cancelling removes it. */
export const startJob = (campaign: CampaignRow): JobSpec => ({
  task: START_TASK,
  payload: { orgId: campaign.organization_id, campaignId: campaign.id },
  runAt: campaign.schedule_date && campaign.schedule_date.getTime() > Date.now() ? campaign.schedule_date : new Date(),
  jobKey: startJobKey(campaign.id),
});
