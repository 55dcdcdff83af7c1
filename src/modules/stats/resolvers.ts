import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as stats from './service.js';

export const resolvers: Resolvers = {
  Query: {
    dailyStats: (_, args, ctx) => stats.daily(ctx, compact(args), {}),
  },
  Campaign: {
    funnel: (campaign, _, ctx) => stats.funnel(ctx, undefined, { id: campaign._id }),
  },
};
