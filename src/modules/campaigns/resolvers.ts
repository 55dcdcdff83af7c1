import type { CampaignTriggerEvent, Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as messageLogs from '../message-logs/service.js';
import type { CampaignDto } from './dto.js';
import * as resend from './resend.js';
import * as dryRun from './dry-run.js';
import { previewMessage } from './message-preview.js';
import * as progress from './progress.js';
import { NOT_SENDING, type Sending } from './sending.js';
import * as campaigns from './service.js';

/** Messages with their nulls read as "not given", each channel's too. */
const messagesInput = (messages: Record<string, object | null | undefined> | null | undefined) =>
  messages ? Object.fromEntries(Object.entries(compact(messages)).map(([channel, m]) => [channel, compact(m as object)])) : undefined;

/** A trigger event as the REST door and the database write it: `CONTACT_ADDED_TO_GROUP` is `contact.added_to_group`. */
const wireEvent = (event: CampaignTriggerEvent) => event.toLowerCase().replace('_', '.') as 'contact.created' | 'contact.added_to_group';

/** The campaign types' inputs as the service reads them. */
const typeInput = (input: { trigger?: { event: CampaignTriggerEvent; groupId?: string | null } | null; recurrence?: object | null }) => ({
  ...(input.trigger ? { trigger: { event: wireEvent(input.trigger.event), ...compact({ groupId: input.trigger.groupId }) } } : {}),
  ...(input.recurrence ? { recurrence: input.recurrence } : {}),
});

/** A campaign's `Sending`: the one `get` read with it, else read once per campaign object of the request. */
const readSending = new WeakMap<CampaignDto, Promise<Sending>>();
function sendingOf(ctx: Parameters<typeof campaigns.sendingFor>[0], campaign: CampaignDto): Promise<Sending> {
  if (campaign.sending) return Promise.resolve(campaign.sending);
  if (campaign.status !== 'active') return Promise.resolve(NOT_SENDING);
  let read = readSending.get(campaign);
  if (!read) readSending.set(campaign, (read = campaigns.sendingFor(ctx, undefined, { id: campaign._id })));
  return read;
}

export const resolvers: Resolvers = {
  Query: {
    campaigns: async (_, args, ctx) => connection(await campaigns.list(ctx, undefined, pageArgs(args))),
    campaign: (_, { id }, ctx) => campaigns.get(ctx, undefined, { id }),
    campaignPreview: (_, { id, contactId }, ctx) => dryRun.preview(ctx, compact({ contactId }), { id }),
    previewMessage: (_, { input }, ctx) => previewMessage(ctx, compact(input), {}),
    campaignEstimate: (_, { id }, ctx) => dryRun.estimate(ctx, undefined, { id }),
    campaignResendEstimate: (_, { id }, ctx) => resend.estimate(ctx, undefined, { id }),
  },
  Mutation: {
    createCampaign: (_, { input }, ctx) =>
      campaigns.create(ctx, { ...compact(input), recipients: compact(input.recipients), messages: messagesInput(input.messages), ...typeInput(input) }, {}),
    updateCampaign: (_, { id, input }, ctx) =>
      campaigns.update(ctx, { ...compact(input, ['sendingHours', 'localSendAt']), ...(input.messages ? { messages: messagesInput(input.messages) } : {}), ...typeInput(input) }, { id }),
    launchCampaign: (_, { id }, ctx) => campaigns.launch(ctx, undefined, { id }),
    cancelCampaign: (_, { id }, ctx) => campaigns.cancel(ctx, undefined, { id }),
    testCampaign: (_, { id, to }, ctx) => dryRun.test(ctx, { to }, { id }),
    resendFailedCampaign: async (_, { id }, ctx) => ({ ...(await resend.resend(ctx, undefined, { id })), campaign: await campaigns.get(ctx, undefined, { id }) }),
  },
  Subscription: {
    campaignProgress: {
      subscribe: (_, { id }, ctx) => progress.watch(ctx, undefined, { id }),
      resolve: (campaign: CampaignDto) => ({ ...campaign, ...(campaign.sending ?? NOT_SENDING) }),
    },
  },
  Campaign: {
    throttled: async (campaign, _, ctx) => (await sendingOf(ctx, campaign)).throttled,
    sendRate: async (campaign, _, ctx) => (await sendingOf(ctx, campaign)).sendRate,
    estimatedCompletionAt: async (campaign, _, ctx) => (await sendingOf(ctx, campaign)).estimatedCompletionAt,
    progress: (campaign, _, ctx) => campaigns.progressOf(ctx, undefined, { id: campaign._id }),
    logs: async (campaign, args, ctx) => connection(await messageLogs.list(ctx, { campaignId: campaign._id }, pageArgs(args))),
    runs: async (campaign, args, ctx) => connection(await campaigns.runs(ctx, undefined, { id: campaign._id, ...pageArgs(args) })),
    pendingSends: async (campaign, args, ctx) => connection(await campaigns.pendingSends(ctx, undefined, { id: campaign._id, ...pageArgs(args) })),
  },
};
