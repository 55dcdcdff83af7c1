import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as providers from './service.js';

export const resolvers: Resolvers = {
  Query: {
    providers: (_, { channel }, ctx) => providers.list(ctx, channel ? { channel } : {}, {}),
    provider: (_, { id }, ctx) => providers.get(ctx, undefined, { id }),
    providerTypes: (_, __, ctx) => providers.types(ctx, undefined, {}),
  },
  Mutation: {
    createProvider: (_, { input }, ctx) => providers.create(ctx, compact(input, ['rate']), {}),
    // An explicit `rate: null` goes back to the provider's default; left out, it is kept.
    updateProvider: (_, { id, input }, ctx) => providers.update(ctx, compact(input, ['rate']), { id }),
    deleteProvider: (_, { id }, ctx) => providers.remove(ctx, undefined, { id }),
    reorderProviders: (_, { channel, ids }, ctx) => providers.reorder(ctx, { channel, ids }, {}),
    testProvider: (_, { id, ...input }, ctx) => providers.test(ctx, compact(input), { id }),
  },
};
