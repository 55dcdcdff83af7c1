import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as acceptance from './accept.js';
import * as invitations from './service.js';

export const resolvers: Resolvers = {
  Query: {
    invitations: async (_, args, ctx) => connection(await invitations.list(ctx, undefined, pageArgs(args))),
    invitation: (_, { token }, ctx) => acceptance.preview(ctx, undefined, { token }),
  },
  Mutation: {
    inviteMember: (_, { input }, ctx) => invitations.invite(ctx, compact(input), {}),
    revokeInvitation: (_, { id }, ctx) => invitations.revoke(ctx, undefined, { id }),
    acceptInvitation: async (_, { token, input }, ctx) => {
      const result = await acceptance.accept(ctx, compact(input), { token });
      return { token: result.token, user: result.user, mfaRequired: false, mfaToken: null, twoFactorSetupRequired: result.twoFactorSetupRequired };
    },
  },
};
