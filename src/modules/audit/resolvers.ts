import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as audit from './service.js';

export const resolvers: Resolvers = {
  Query: {
    // An entry's time is its `at`: the connection's cursors are built from it, as the REST door's are.
    auditLog: async (_, args, ctx) => {
      const page = await audit.list(ctx, compact(args.filter), pageArgs(args));
      return connection({ ...page, items: page.items.map((entry) => ({ ...entry, createdAt: entry.at })) });
    },
  },
};
