import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as messageLogs from './service.js';

export const resolvers: Resolvers = {
  Query: {
    messageLogs: async (_, args, ctx) => connection(await messageLogs.list(ctx, compact(args.filter), pageArgs(args))),
    messageLog: (_, { id }, ctx) => messageLogs.get(ctx, undefined, { id }),
    messageStats: (_, args, ctx) => messageLogs.stats(ctx, compact(args), {}),
  },
  MessageLog: {
    events: (log, _, ctx) => messageLogs.events(ctx, undefined, { id: log._id }),
  },
};
