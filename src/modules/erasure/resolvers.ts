import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { connection, pageArgs } from '../../graphql/glue.js';
import * as erasure from './service.js';

export const resolvers: Resolvers = {
  Query: {
    erasures: async (_, args, ctx) => connection(await erasure.list(ctx, undefined, pageArgs(args))),
    erasure: (_, { id }, ctx) => erasure.get(ctx, undefined, { id }),
  },
  Mutation: {
    eraseContact: (_, { id }, ctx) => erasure.eraseContact(ctx, undefined, { id }),
    eraseAddress: (_, { address }, ctx) => erasure.eraseAddress(ctx, { address }, {}),
  },
};
