import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as templates from './service.js';

export const resolvers: Resolvers = {
  Query: {
    templates: async (_, args, ctx) => connection(await templates.list(ctx, undefined, pageArgs(args))),
    template: (_, { id }, ctx) => templates.get(ctx, undefined, { id }),
  },
  Mutation: {
    createTemplate: (_, { input }, ctx) => templates.create(ctx, compact(input), {}),
    // An explicit `subject: null` takes the subject away (a template moving off email); left out, it is kept.
    updateTemplate: (_, { id, input }, ctx) => templates.update(ctx, compact(input, ['subject']), { id }),
    deleteTemplate: (_, { id }, ctx) => templates.remove(ctx, undefined, { id }),
  },
};
