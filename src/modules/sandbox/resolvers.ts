import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import { simulateEvent } from './receipts.js';
import * as sandbox from './service.js';

export const resolvers: Resolvers = {
  Query: {
    sandboxOutbox: async (_, { channel, recipient, ...page }, ctx) =>
      connection(await sandbox.list(ctx, compact({ channel, recipient }), pageArgs(page))),
  },
  Mutation: {
    simulateSandboxEvent: (_, { input }, ctx) => simulateEvent(ctx, compact(input), {}),
  },
};
