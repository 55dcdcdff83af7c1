import type { Resolvers, WebhookEventType } from '../../graphql/generated/resolvers-types.js';
import { compact, connection, pageArgs } from '../../graphql/glue.js';
import * as webhooks from './service.js';

/** A GraphQL event type (`MESSAGE_SENT`) as the wire and REST write it (`message.sent`). */
const wire = (type: WebhookEventType) => type.toLowerCase().replace('_', '.');

export const resolvers: Resolvers = {
  Query: {
    webhookEndpoints: async (_, args, ctx) => connection(await webhooks.list(ctx, undefined, pageArgs(args))),
    webhookEndpoint: (_, { id }, ctx) => webhooks.get(ctx, undefined, { id }),
    webhookAttempts: async (_, { endpointId, ...args }, ctx) => connection(await webhooks.endpointAttempts(ctx, undefined, { id: endpointId, ...pageArgs(args) })),
    webhookEvents: async (_, args, ctx) => connection(await webhooks.events(ctx, undefined, pageArgs(args))),
    webhookEvent: (_, { id }, ctx) => webhooks.event(ctx, undefined, { id }),
    webhookEventAttempts: async (_, { eventId, ...args }, ctx) => connection(await webhooks.eventAttempts(ctx, undefined, { id: eventId, ...pageArgs(args) })),
  },
  Mutation: {
    createWebhookEndpoint: async (_, { input }, ctx) => {
      const { secret, ...endpoint } = await webhooks.create(ctx, { ...compact(input), ...(input.eventTypes && { eventTypes: input.eventTypes.map(wire) }) }, {});
      return { endpoint, secret };
    },
    // An explicit `description: null` removes it; left out, it is kept.
    updateWebhookEndpoint: (_, { id, input }, ctx) =>
      webhooks.update(ctx, { ...compact(input, ['description']), ...(input.eventTypes && { eventTypes: input.eventTypes.map(wire) }) }, { id }),
    deleteWebhookEndpoint: (_, { id }, ctx) => webhooks.remove(ctx, undefined, { id }),
    rotateWebhookSecret: (_, { id }, ctx) => webhooks.rotateSecret(ctx, undefined, { id }),
    sendTestWebhook: (_, { id, eventType }, ctx) => webhooks.sendTest(ctx, eventType ? { eventType: wire(eventType) } : {}, { id }),
    resendWebhookEvent: (_, { id, endpointId }, ctx) => webhooks.resend(ctx, { endpointId }, { id }),
  },
};
