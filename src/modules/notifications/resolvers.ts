import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import { collect } from '../../lib/download.js';
import * as notifications from './service.js';

export const resolvers: Resolvers = {
  Query: {
    notificationEstimate: (_, { input }, ctx) => notifications.estimate(ctx, compact(input), {}),
  },
  Mutation: {
    sendNotification: async (_, { input }, ctx) => {
      const result = await notifications.send(ctx, compact(input), {});
      return Array.isArray(result) ? result : [result];
    },
    // GraphQL answers whole: the items REST writes as they come, collected.
    sendToAll: async (_, { input }, ctx) => collect(await notifications.sendToAll(ctx, { ...compact(input), to: 'all' }, {})),
  },
};
