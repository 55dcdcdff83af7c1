import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as twoFactor from './service.js';

export const resolvers: Resolvers = {
  Query: {
    twoFactor: (_, __, ctx) => twoFactor.status(ctx, undefined, {}),
  },
  Mutation: {
    startTwoFactorEnrolment: (_, __, ctx) => twoFactor.startEnrolment(ctx, undefined, {}),
    confirmTwoFactor: (_, { input }, ctx) => twoFactor.confirm(ctx, compact(input), {}),
    disableTwoFactor: (_, { input }, ctx) => twoFactor.disable(ctx, compact(input), {}),
    regenerateRecoveryCodes: (_, { input }, ctx) => twoFactor.regenerateRecoveryCodes(ctx, compact(input), {}),
    resetTwoFactor: (_, { id }, ctx) => twoFactor.reset(ctx, undefined, { id }),
  },
  User: {
    // Batched: a page of users costs one query.
    twoFactorEnabled: (user, _, ctx) => ctx.loaders.twoFactorEnabled.load(user._id),
  },
};
