import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as groups from './service.js';

export const resolvers: Resolvers = {
  Query: {
    groups: async (_, args, ctx) => connection(await groups.list(ctx, undefined, pageArgs(args))),
    group: (_, { id }, ctx) => groups.get(ctx, undefined, { id }),
  },
  Mutation: {
    createGroup: (_, { input }, ctx) => groups.create(ctx, compact(input), {}),
    updateGroup: (_, { id, input }, ctx) => groups.update(ctx, compact(input), { id }),
    deleteGroup: (_, { id }, ctx) => groups.remove(ctx, undefined, { id }),
  },
  Group: {
    // The parent group was already read through an operation that checked the caller.
    contacts: async (group, args, ctx) => {
      const page = await ctx.loaders.contactsOfGroup.load({ orgId: group.organization, id: group._id, page: pageArgs(args) });
      return connection({ ...page, totalCount: group.contactCount });
    },
  },
};
