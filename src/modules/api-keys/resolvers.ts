import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as apiKeys from './service.js';

export const resolvers: Resolvers = {
  Query: {
    apiKeys: async (_, args, ctx) => connection(await apiKeys.list(ctx, undefined, pageArgs(args))),
  },
  Mutation: {
    createApiKey: (_, { input }, ctx) => apiKeys.create(ctx, compact(input), {}),
    revokeApiKey: (_, { id }, ctx) => apiKeys.revoke(ctx, undefined, { id }),
    deleteApiKey: (_, { id }, ctx) => apiKeys.remove(ctx, undefined, { id }),
  },
};
