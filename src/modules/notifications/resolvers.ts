import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
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
    sendToAll: (_, { input }, ctx) => notifications.sendToAll(ctx, { ...compact(input), to: 'all' }, {}),
  },
};
