import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as users from './service.js';

export const resolvers: Resolvers = {
  Query: {
    me: async (_, __, ctx) => {
      const { user, organization } = await users.me(ctx, undefined, {});
      ctx.loaders.organizationById.prime(organization._id, organization);
      return user;
    },
    users: async (_, args, ctx) => connection(await users.list(ctx, undefined, pageArgs(args))),
    user: (_, { id }, ctx) => users.get(ctx, undefined, { id }),
  },
  Mutation: {
    createUser: (_, { input }, ctx) => users.create(ctx, compact(input), {}),
    updateUser: (_, { id, input }, ctx) => users.update(ctx, compact(input), { id }),
    deactivateUser: (_, { id }, ctx) => users.deactivate(ctx, undefined, { id }),
    reactivateUser: (_, { id }, ctx) => users.reactivate(ctx, undefined, { id }),
    deleteUser: (_, { id }, ctx) => users.remove(ctx, undefined, { id }),
    changePassword: (_, { id, input }, ctx) => users.changePassword(ctx, compact(input), { id }),
  },
  User: {
    organization: async (user, _, ctx) => (await ctx.loaders.organizationById.load(user.organization))!,
  },
};
