/**
 * How the message log pages (and the outbox and dashboard, which show the same sends) read a channel
 * and a recipient's status.
 */
import { Badge } from '@mantine/core';
import type { Channel, LogRecipientStatus } from '../../gql/graphql';

export const CHANNELS: Channel[] = ['sms', 'email', 'whatsapp'];

export const CHANNEL_LABELS: Record<Channel, string> = { sms: 'SMS', email: 'Email', whatsapp: 'WhatsApp' };

export const STATUSES: LogRecipientStatus[] = ['success', 'failed', 'pending'];

/** A recipient's status as the console says it: `success` reads "sent". */
export const STATUS_LABELS: Record<LogRecipientStatus, string> = { success: 'Sent', failed: 'Failed', pending: 'Pending' };

/** Darker than Mantine's darkest green and orange: white badge text on them passes AA (4.5:1 and more). */
const STATUS_COLORS: Record<LogRecipientStatus, string> = { success: '#1b6e31', failed: '#b02525', pending: '#8a4b00' };

export function StatusBadge({ status }: { status: LogRecipientStatus }) {
  return (
    <Badge color={STATUS_COLORS[status]} variant="filled" miw="max-content">
      {STATUS_LABELS[status]}
    </Badge>
  );
}

/** The options of a channel `Select`, "All channels" (the empty value) first. */
export const CHANNEL_OPTIONS = [{ value: '', label: 'All channels' }, ...CHANNELS.map((c) => ({ value: c, label: CHANNEL_LABELS[c] }))];

/** Narrows a search parameter to a channel, or null. */
export const asChannel = (value: string | null): Channel | null => (CHANNELS.includes(value as Channel) ? (value as Channel) : null);

/** Narrows a search parameter to a status, or null. */
export const asStatus = (value: string | null): LogRecipientStatus | null => (STATUSES.includes(value as LogRecipientStatus) ? (value as LogRecipientStatus) : null);
