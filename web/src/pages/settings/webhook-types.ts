import type { WebhookEventType } from '../../gql/graphql';

/**
 * The outbound webhooks' event types: the GraphQL enum value an input takes, and the wire name
 * (`message.sent`) the API returns in `eventTypes` and on events.
 */
export const EVENT_TYPES: { value: WebhookEventType; wire: string; description: string }[] = [
  { value: 'MESSAGE_SENT', wire: 'message.sent', description: 'A message’s recipients were sent' },
  { value: 'MESSAGE_DELIVERED', wire: 'message.delivered', description: 'A recipient’s delivery receipt' },
  { value: 'MESSAGE_FAILED', wire: 'message.failed', description: 'Recipients failed at the send or on delivery' },
  { value: 'MESSAGE_OPENED', wire: 'message.opened', description: 'A recipient opened an email or read a WhatsApp message' },
  { value: 'MESSAGE_CLICKED', wire: 'message.clicked', description: 'A recipient clicked a tracked link' },
  { value: 'MESSAGE_BOUNCED', wire: 'message.bounced', description: 'A recipient’s email bounced, hard or soft' },
  { value: 'MESSAGE_COMPLAINED', wire: 'message.complained', description: 'A recipient reported an email as spam' },
  { value: 'CAMPAIGN_COMPLETED', wire: 'campaign.completed', description: 'Every recipient of a campaign was settled' },
  { value: 'CAMPAIGN_FAILED', wire: 'campaign.failed', description: 'A campaign could not run' },
  { value: 'CONTACT_UNSUBSCRIBED', wire: 'contact.unsubscribed', description: 'A contact left a channel' },
];

/** The enum value of a wire name (`message.sent` → `MESSAGE_SENT`). */
export function eventTypeOf(wire: string): WebhookEventType {
  return wire.toUpperCase().replace('.', '_') as WebhookEventType;
}
