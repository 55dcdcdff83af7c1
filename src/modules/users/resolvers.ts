import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as organizations from '../organizations/service.js';
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
  Organization: {
    // A summary from the loader lacks these; they come from the same operation as `organization`.
    credentials: async (org, _, ctx) => org.credentials ?? (await organizations.current(ctx, undefined, {})).credentials,
    emailFromName: async (org, _, ctx) =>
      org.emailFromName !== undefined ? org.emailFromName : (await organizations.current(ctx, undefined, {})).emailFromName,
    createdAt: async (org, _, ctx) => org.createdAt ?? (await organizations.current(ctx, undefined, {})).createdAt,
    updatedAt: async (org, _, ctx) => org.updatedAt ?? (await organizations.current(ctx, undefined, {})).updatedAt,
  },
};
