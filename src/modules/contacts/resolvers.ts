import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import type { GroupDto } from '../groups/dto.js';
import { attributeKeys } from './attribute-keys.js';
import { bulk } from './bulk.js';
import { exportLink } from './export.js';
import * as contacts from './service.js';

/**
 * The input with its nulls read as "not given", those of `subscriptions` too (a channel left out is
 * kept), but `timezone`'s: null there gives the contact's own zone up.
 */
const contactInput = <T extends { subscriptions?: object | null; timezone?: string | null }>(input: T) => {
  const fields = compact(input, ['timezone']);
  return fields.subscriptions ? { ...fields, subscriptions: compact(fields.subscriptions) } : fields;
};

export const resolvers: Resolvers = {
  Query: {
    contacts: async (_, args, ctx) => connection(await contacts.list(ctx, compact(args.filter), pageArgs(args))),
    contact: (_, { id }, ctx) => contacts.get(ctx, undefined, { id }),
    contactExport: (_, args, ctx) => exportLink(ctx, compact(args.filter), {}),
    contactAttributeKeys: (_, _args, ctx) => attributeKeys(ctx, undefined, {}),
  },
  Mutation: {
    createContact: (_, { input }, ctx) => contacts.create(ctx, contactInput(input), {}),
    updateContact: (_, { id, input }, ctx) => contacts.update(ctx, contactInput(input), { id }),
    deleteContact: (_, { id }, ctx) => contacts.remove(ctx, undefined, { id }),
    bulkContacts: (_, { input }, ctx) => bulk(ctx, { ...compact(input), ...(input.filter && { filter: compact(input.filter) }) }, {}),
  },
  Contact: {
    groupIds: (contact) => contact.groups,
    groups: async (contact, _, ctx) => {
      const groups = await ctx.loaders.groupById.loadMany(contact.groups.map((id) => ({ orgId: contact.ServiceOrganization, id })));
      return groups.filter((g): g is GroupDto => g !== null && !(g instanceof Error));
    },
  },
};
