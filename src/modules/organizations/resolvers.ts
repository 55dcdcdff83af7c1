import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as organizations from './service.js';

export const resolvers: Resolvers = {
  Query: {
    organization: (_, __, ctx) => organizations.current(ctx, undefined, {}),
  },
  Mutation: {
    updateCredentials: (_, { input }, ctx) => organizations.updateCredentials(ctx, compact(input), {}),
  },
};
