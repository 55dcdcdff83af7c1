import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as auth from './service.js';

export const resolvers: Resolvers = {
  Mutation: {
    signup: (_, { input }, ctx) => auth.signup(ctx, compact(input), {}),
    // Login's user is the interface's short form; GraphQL resolves any other field from the full user.
    login: async (_, { input }, ctx) => {
      const result = await auth.login(ctx, compact(input), {});
      if ('mfaRequired' in result) return { token: null, user: null, mfaRequired: true, mfaToken: result.mfaToken, twoFactorSetupRequired: false };
      return { token: result.token, user: result.fullUser, mfaRequired: false, mfaToken: null, twoFactorSetupRequired: 'twoFactorSetupRequired' in result };
    },
    loginWithTwoFactor: async (_, { input }, ctx) => {
      const result = await auth.loginWithTwoFactor(ctx, compact(input), {});
      return { token: result.token, user: result.fullUser };
    },
  },
};
