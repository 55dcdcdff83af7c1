import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as personData from './service.js';

export const resolvers: Resolvers = {
  Query: {
    personData: (_, args, ctx) => personData.whole(ctx, compact(args), {}),
  },
};
