/**
 * What the campaign pages share: the fields of a campaign they read (one fragment, so a mutation's
 * answer updates the cached campaign every page shows), and how a status, a type and a channel read.
 */
import { Badge } from '@mantine/core';
import { graphql } from '../../gql';
import type { CampaignRunStatus, CampaignStatus, CampaignTriggerEvent, CampaignType, Channel } from '../../gql/graphql';
import { formatNumber } from '../../lib/format';

export const CampaignFields = graphql(`
  fragment CampaignFields on Campaign {
    _id
    name
    description
    type
    channels
    status
    recipientType
    selectedContacts
    selectedGroups
    manualRecipients
    scheduleDate
    localSendAt
    sendingHours
    exemptFromCaps
    recurrence {
      rule
      timezone
      summary
      nextRunAt
      upcoming
    }
    trigger {
      event
      groupId
    }
    delay
    createdAt
    updatedAt
    messages {
      email {
        subject
        content
        templateId
      }
      sms {
        content
        templateId
      }
      whatsapp {
        content
        templateId
      }
    }
    analytics {
      sent
      delivered
      failed
      opened
      clicked
      bounced
      complained
      suppressed
      capped
    }
    progress {
      total
      sent
      failed
      pending
      waiting
      nextOpeningAt
      canceled
    }
    throttled
    sendRate
    estimatedCompletionAt
  }
`);

export const CHANNELS: Channel[] = ['sms', 'email', 'whatsapp'];

export const CHANNEL_LABELS: Record<Channel, string> = { sms: 'SMS', email: 'Email', whatsapp: 'WhatsApp' };

export const TYPE_LABELS: Record<CampaignType, string> = {
  broadcast: 'Broadcast',
  targeted: 'Targeted',
  automated: 'Automated',
  recurring: 'Recurring',
};

const STATUS_COLORS: Record<CampaignStatus, string> = {
  draft: 'gray.9',
  scheduled: 'blue.9',
  active: 'cyan.9',
  completed: 'teal.9',
  canceled: 'red.9',
};

/** A campaign's status as a badge (filled with shade 9: white on it passes WCAG AA contrast). */
export function StatusBadge({ status }: { status: CampaignStatus }) {
  return (
    <Badge color={STATUS_COLORS[status]} variant="filled">
      {status}
    </Badge>
  );
}

const RUN_STATUS_COLORS: Record<CampaignRunStatus, string> = { ...STATUS_COLORS, failed: 'red.9', canceled: 'gray.9' };

/** A run's status as a badge (the campaign's colours; a failed run red, a canceled one gray). */
export function RunStatusBadge({ status }: { status: CampaignRunStatus }) {
  return (
    <Badge color={RUN_STATUS_COLORS[status]} variant="filled">
      {status}
    </Badge>
  );
}

export const TRIGGER_LABELS: Record<CampaignTriggerEvent, string> = {
  CONTACT_CREATED: 'Contact created',
  CONTACT_ADDED_TO_GROUP: 'Contact added to a group',
};

/**
 * The input's event for a campaign's `trigger.event`, which reads as the event's name
 * (`contact.added_to_group` is `CONTACT_ADDED_TO_GROUP`); null for one the console does not know.
 */
export function triggerEventOf(event: string | null | undefined): CampaignTriggerEvent | null {
  const name = event?.toUpperCase().replace(/\./g, '_');
  return name && name in TRIGGER_LABELS ? (name as CampaignTriggerEvent) : null;
}

/** A yellow alert's title in the text colour: Mantine's yellow on its light background fails WCAG AA contrast. */
export const WARNING_TITLE = { title: { color: 'var(--mantine-color-text)' } };

/** A count and its noun: `1 credit`, `2 credits`. */
export const plural = (n: number, one: string, many: string) => `${formatNumber(n)} ${n === 1 ? one : many}`;

/** The channels, as people write them: `SMS, Email`. */
export const channelList = (channels: readonly Channel[]) => channels.map((c) => CHANNEL_LABELS[c]).join(', ');

/**
 * The value of a `datetime-local` input for an ISO date-time, in the browser's time zone, and back
 * (an ISO date-time with its offset, as the API takes it).
 */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

/** The browser's time zone, to say in which one a schedule is read. */
export const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
