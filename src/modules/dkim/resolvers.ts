import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import * as dkim from './service.js';

export const resolvers: Resolvers = {
  Query: {
    dkimKeys: (_, __, ctx) => dkim.list(ctx, undefined, {}),
  },
  Mutation: {
    createDkimKey: (_, { domain, selector, algorithm }, ctx) => dkim.create(ctx, { domain, ...(selector ? { selector } : {}), ...(algorithm ? { algorithm } : {}) }, {}),
    deleteDkimKey: (_, { id }, ctx) => dkim.remove(ctx, undefined, { id }),
    checkDkimKey: (_, { id }, ctx) => dkim.check(ctx, undefined, { id }),
  },
};
