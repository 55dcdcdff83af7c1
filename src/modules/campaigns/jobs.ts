import type { JobSpec } from '../../jobs/queue.js';
import { batchRange, type ChunkRef } from './chunks.js';
import type { CampaignRow } from './dto.js';

/** The campaigns module's tasks, by name. */
export const START_TASK = 'campaign-start';
export const CHUNK_TASK = 'campaign-chunk';

export const startJobKey = (campaignId: string) => `campaign-start:${campaignId}`;

/** The scheduled start: one job per campaign, keyed so rescheduling moves it and cancelling removes it. */
export const startJob = (campaign: CampaignRow): JobSpec => ({
  task: START_TASK,
  payload: { orgId: campaign.organization_id, campaignId: campaign.id },
  runAt: campaign.schedule_date && campaign.schedule_date.getTime() > Date.now() ? campaign.schedule_date : new Date(),
  jobKey: startJobKey(campaign.id),
});

export const chunkJob = (ref: ChunkRef): JobSpec => ({
  task: CHUNK_TASK,
  payload: { ...ref },
  // Keyed by its batches: the same chunk queued twice (a retried start, the sweeper) is one job.
  jobKey: `campaign-chunk:${ref.campaignId}:${ref.channel}:${batchRange(ref).join('-')}`,
  maxAttempts: 10,
});
