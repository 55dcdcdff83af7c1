import { Readable } from 'node:stream';
import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as suppressions from './service.js';

export const resolvers: Resolvers = {
  Query: {
    suppressions: async (_, { search, ...args }, ctx) => connection(await suppressions.list(ctx, compact({ search }), pageArgs(args))),
  },
  Mutation: {
    addSuppression: (_, input, ctx) => suppressions.add(ctx, compact(input), {}),
    removeSuppression: (_, { id }, ctx) => suppressions.remove(ctx, undefined, { id }),
    importSuppressions: (_, { csv }, ctx) => suppressions.importCsv(ctx, {}, { file: { stream: Readable.from([Buffer.from(csv, 'utf8')]) } }),
  },
};
