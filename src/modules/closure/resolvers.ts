import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import * as closure from './service.js';

export const resolvers: Resolvers = {
  Mutation: {
    closeOrganization: (_, { password, code }, ctx) => closure.close(ctx, { password, ...(code == null ? {} : { code }) }, {}),
    cancelOrganizationClosure: (_, __, ctx) => closure.cancel(ctx, undefined, {}),
  },
};
