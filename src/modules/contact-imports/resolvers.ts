import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import type { ContactImportDto } from './dto.js';
import * as progress from './progress.js';
import * as imports from './service.js';

export const resolvers: Resolvers = {
  Query: {
    contactImports: async (_, args, ctx) => connection(await imports.list(ctx, undefined, pageArgs(args))),
    contactImport: (_, { id }, ctx) => imports.get(ctx, undefined, { id }),
  },
  Mutation: {
    startContactImport: (_, { input }, ctx) => {
      const { csv, fileName, ...options } = compact(input);
      return imports.start(ctx, options, { file: imports.textFile(csv ?? '', fileName ?? null) });
    },
    cancelContactImport: (_, { id }, ctx) => imports.cancel(ctx, undefined, { id }),
  },
  Subscription: {
    contactImportProgress: {
      subscribe: (_, { id }, ctx) => progress.watch(ctx, undefined, { id }),
      resolve: (contactImport: ContactImportDto) => contactImport,
    },
  },
};
