import type { Resolvers } from '../../graphql/generated/resolvers-types.js';
import { compact } from '../../graphql/glue.js';
import * as closure from '../closure/service.js';
import * as organizations from './service.js';

export const resolvers: Resolvers = {
  Query: {
    organization: (_, __, ctx) => organizations.current(ctx, undefined, {}),
  },
  Mutation: {
    updateCredentials: (_, { input }, ctx) => organizations.updateCredentials(ctx, compact(input, ['sms_rate', 'email_rate', 'whatsapp_rate']), {}),
    updateOrganization: (_, { input }, ctx) => organizations.updateOrganization(ctx, compact(input, ['sendingHours']), {}),
  },
  Organization: {
    // The platform's mode, known without reading the organization.
    deliveryMode: (org, _, ctx) => org.deliveryMode ?? organizations.deliveryModeOf(ctx),
    // A summary from the loader lacks these; they come from the same operation as `organization`.
    credentials: async (org, _, ctx) => org.credentials ?? (await organizations.current(ctx, undefined, {})).credentials,
    emailFromName: async (org, _, ctx) =>
      org.emailFromName !== undefined ? org.emailFromName : (await organizations.current(ctx, undefined, {})).emailFromName,
    tracking: async (org, _, ctx) => org.tracking ?? (await organizations.current(ctx, undefined, {})).tracking,
    requireTwoFactor: async (org, _, ctx) => org.requireTwoFactor ?? (await organizations.current(ctx, undefined, {})).requireTwoFactor,
    // Read alone: the console's banner asks on every page, and needs nothing else of the organization.
    closure: (org, _, ctx) => (org.closure !== undefined ? org.closure : closure.current(ctx, undefined, {})),
    timezone: async (org, _, ctx) => org.timezone ?? (await organizations.current(ctx, undefined, {})).timezone,
    frequencyCaps: async (org, _, ctx) => org.frequencyCaps ?? (await organizations.current(ctx, undefined, {})).frequencyCaps,
    sendingHours: async (org, _, ctx) => (org.sendingHours !== undefined ? org.sendingHours : (await organizations.current(ctx, undefined, {})).sendingHours),
    retentionDays: async (org, _, ctx) => org.retentionDays ?? (await organizations.current(ctx, undefined, {})).retentionDays,
    createdAt: async (org, _, ctx) => org.createdAt ?? (await organizations.current(ctx, undefined, {})).createdAt,
    updatedAt: async (org, _, ctx) => org.updatedAt ?? (await organizations.current(ctx, undefined, {})).updatedAt,
  },
};
