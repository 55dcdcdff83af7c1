import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as messageLogs from '../message-logs/service.js';
import * as campaigns from './service.js';

export const resolvers: Resolvers = {
  Query: {
    campaigns: async (_, args, ctx) => connection(await campaigns.list(ctx, undefined, pageArgs(args))),
    campaign: (_, { id }, ctx) => campaigns.get(ctx, undefined, { id }),
  },
  Mutation: {
    createCampaign: (_, { input }, ctx) =>
      campaigns.create(ctx, { ...compact(input), recipients: compact(input.recipients), messages: compact(input.messages) }, {}),
    updateCampaign: (_, { id, input }, ctx) =>
      campaigns.update(ctx, { ...compact(input), ...(input.messages ? { messages: compact(input.messages) } : {}) }, { id }),
    launchCampaign: (_, { id }, ctx) => campaigns.launch(ctx, undefined, { id }),
    cancelCampaign: (_, { id }, ctx) => campaigns.cancel(ctx, undefined, { id }),
  },
  Campaign: {
    progress: (campaign, _, ctx) => campaigns.progressOf(ctx, undefined, { id: campaign._id }),
    logs: async (campaign, args, ctx) => connection(await messageLogs.list(ctx, { campaignId: campaign._id }, pageArgs(args))),
  },
};
