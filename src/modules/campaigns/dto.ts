import type { Channel } from '../../delivery/types.js';
import { describe, occurrences, type Recurrence } from '../../lib/recurrence.js';
import { NOT_SENDING, type Sending } from './sending.js';

export type CampaignStatus = 'draft' | 'scheduled' | 'active' | 'completed' | 'canceled';
/** A run's statuses: a campaign's, less `draft`, plus `failed` (not sent at all: the credits did not cover it). */
export type RunStatus = Exclude<CampaignStatus, 'draft'> | 'failed';

export type TriggerEvent = 'contact.created' | 'contact.added_to_group';

/** A channel's message; `templateId` names the saved template its text was copied from. */
export interface CampaignMessages {
  email?: { subject: string; content: string; templateId?: string };
  sms?: { content: string; templateId?: string };
  whatsapp?: { content: string; templateId?: string };
}

export interface CampaignRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  type: string;
  channels: Channel[];
  status: CampaignStatus;
  recipient_type: 'all' | 'selected' | 'group';
  selected_contacts: string[];
  selected_groups: string[];
  manual_recipients: string[];
  messages: CampaignMessages;
  schedule_date: Date | null;
  /** Its own sending hours (`HH:MM-HH:MM`); null: its organization's. */
  sending_hours: string | null;
  /** Sent to each recipient at this wall-clock time in their zone (`2026-12-05T09:00:00`); null: at once. */
  local_send_at: string | null;
  sent: number;
  delivered: number;
  failed: number;
  /** Addresses left out at launch: a contact with them unsubscribed from the channel. */
  suppressed: number;
  /** Addresses left out at launch: they had reached their channel's frequency cap. */
  capped: number;
  /** Set by an admin: sent whatever the frequency caps, and not counted against them. */
  exempt_from_caps: boolean;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  total_recipients: number;
  created_by: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  /** The campaign a run belongs to; null for a campaign. */
  parent_id: string | null;
  /** A recurring campaign's rule and zone. */
  recurrence: Recurrence | null;
  /** A launched recurring campaign's next run; null once no run is left. */
  next_run_at: Date | null;
  trigger_event: TriggerEvent | null;
  trigger_group_id: string | null;
  /** An automated campaign's delay, an ISO 8601 duration. */
  trigger_delay: string | null;
  /** Why a failed run was not sent. */
  failure_reason: string | null;
  /** A recurring or automated campaign's runs summed, when read with them (`runTotals`). */
  run_totals?: Analytics | null;
  created_at: Date;
  updated_at: Date;
}

export interface Analytics {
  sent: number;
  delivered: number;
  failed: number;
  opened: number;
  clicked: number;
  /** Recipients whose email bounced, each once. */
  bounced: number;
  /** Recipients who reported the email as spam, each once. */
  complained: number;
  /** Addresses left out at launch because a contact with them unsubscribed from the channel. */
  suppressed: number;
  /** Addresses left out at launch because they had reached their channel's frequency cap. */
  capped: number;
}

export interface CampaignDto {
  _id: string;
  name: string;
  description: string | null;
  type: string;
  channels: Channel[];
  status: CampaignStatus;
  recipientType: 'all' | 'selected' | 'group';
  selectedContacts: string[];
  selectedGroup: string | null;
  selectedGroups: string[];
  manualRecipients: string[];
  messages: CampaignMessages;
  scheduleDate: string | null;
  localSendAt: string | null;
  sendingHours: string | null;
  exemptFromCaps: boolean;
  recurrence: RecurrenceDto | null;
  trigger: { event: TriggerEvent; groupId: string | null } | null;
  delay: string | null;
  analytics: Analytics;
  /** How it is being sent (`./sending.ts`): read by `get` only; otherwise `NOT_SENDING`, and GraphQL reads it itself. */
  sending?: Sending;
  organization: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RecurrenceDto extends Recurrence {
  summary: string;
  nextRunAt: string | null;
  upcoming: string[];
}

/** How many upcoming run times a recurring campaign shows. */
const UPCOMING = 5;

/** A recurring campaign's rule as shown: in words, with its next runs (from now before launch, which anchors the rule then). */
function recurrenceOf(row: CampaignRow): RecurrenceDto | null {
  if (!row.recurrence) return null;
  const now = new Date();
  let upcoming: Date[] = [];
  if (row.status === 'draft') {
    const anchor = row.schedule_date && row.schedule_date > now ? row.schedule_date : now;
    upcoming = occurrences(row.recurrence, anchor, new Date(anchor.getTime() - 1), UPCOMING);
  } else if (row.next_run_at && row.status === 'active') {
    upcoming = [row.next_run_at, ...occurrences(row.recurrence, row.schedule_date ?? row.started_at ?? row.next_run_at, row.next_run_at, UPCOMING - 1)];
  }
  return {
    ...row.recurrence,
    summary: describe(row.recurrence),
    nextRunAt: row.status === 'active' && row.next_run_at ? row.next_run_at.toISOString() : null,
    upcoming: upcoming.map((d) => d.toISOString()),
  };
}

export const analyticsOf = (row: Pick<CampaignRow, 'sent' | 'delivered' | 'failed' | 'opened' | 'clicked' | 'bounced' | 'complained' | 'suppressed' | 'capped'>): Analytics => ({
  sent: row.sent,
  delivered: row.delivered,
  failed: row.failed,
  opened: row.opened,
  clicked: row.clicked,
  bounced: row.bounced ?? 0,
  complained: row.complained ?? 0,
  suppressed: row.suppressed,
  capped: row.capped ?? 0,
});

const sumOf = (a: Analytics, b: Analytics): Analytics => ({
  sent: a.sent + b.sent,
  delivered: a.delivered + b.delivered,
  failed: a.failed + b.failed,
  opened: a.opened + b.opened,
  clicked: a.clicked + b.clicked,
  bounced: a.bounced + (b.bounced ?? 0),
  complained: a.complained + (b.complained ?? 0),
  suppressed: a.suppressed + b.suppressed,
  capped: a.capped + (b.capped ?? 0),
});

export const toCampaignDto = (row: CampaignRow): CampaignDto => ({
  _id: row.id,
  name: row.name,
  description: row.description,
  type: row.type,
  channels: row.channels,
  status: row.status,
  recipientType: row.recipient_type,
  selectedContacts: row.selected_contacts,
  selectedGroup: row.recipient_type === 'group' ? (row.selected_groups[0] ?? null) : null,
  selectedGroups: row.selected_groups,
  manualRecipients: row.manual_recipients,
  messages: row.messages,
  scheduleDate: row.schedule_date ? row.schedule_date.toISOString() : null,
  localSendAt: row.local_send_at,
  sendingHours: row.sending_hours,
  exemptFromCaps: row.exempt_from_caps,
  recurrence: recurrenceOf(row),
  trigger: row.trigger_event ? { event: row.trigger_event, groupId: row.trigger_group_id } : null,
  delay: row.trigger_event ? row.trigger_delay : null,
  analytics: row.run_totals ? sumOf(analyticsOf(row), row.run_totals) : analyticsOf(row),
  organization: row.organization_id,
  createdBy: row.created_by,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** The list item the interface describes for `GET /campaigns`. */
export const listedCampaign = (c: CampaignDto) => ({
  _id: c._id,
  name: c.name,
  type: c.type,
  status: c.status,
  channels: c.channels,
  analytics: c.analytics,
  createdAt: c.createdAt,
});

/** The detail the interface describes for `GET /campaigns/:id`, plus the audience it was given. */
export const campaignDetail = (c: CampaignDto) => ({
  _id: c._id,
  name: c.name,
  description: c.description,
  type: c.type,
  channels: c.channels,
  status: c.status,
  recipientType: c.recipientType,
  selectedContacts: c.selectedContacts,
  selectedGroup: c.selectedGroup,
  selectedGroups: c.selectedGroups,
  manualRecipients: c.manualRecipients,
  messages: c.messages,
  scheduleDate: c.scheduleDate,
  localSendAt: c.localSendAt,
  sendingHours: c.sendingHours,
  exemptFromCaps: c.exemptFromCaps,
  ...(c.recurrence ? { recurrence: c.recurrence } : {}),
  ...(c.trigger ? { trigger: c.trigger, delay: c.delay } : {}),
  analytics: c.analytics,
  ...(c.sending ?? NOT_SENDING),
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

/** A run of a recurring or automated campaign, as both doors show it. */
export interface RunDto {
  _id: string;
  scheduledAt: string;
  startedAt: string | null;
  completedAt: string | null;
  status: RunStatus;
  failureReason: string | null;
  recipients: number;
  analytics: Analytics;
  createdAt: string;
}

export const toRunDto = (row: CampaignRow): RunDto => ({
  _id: row.id,
  scheduledAt: (row.schedule_date ?? row.created_at).toISOString(),
  startedAt: row.started_at ? row.started_at.toISOString() : null,
  completedAt: row.completed_at ? row.completed_at.toISOString() : null,
  status: row.status as RunStatus,
  failureReason: row.failure_reason,
  recipients: row.total_recipients,
  analytics: analyticsOf(row),
  createdAt: row.created_at.toISOString(),
});

/** The answer the interface describes for `POST /campaigns/:id/launch`: analytics only once completed. */
export const launchedCampaign = (c: CampaignDto) => ({
  _id: c._id,
  status: c.status,
  ...(c.status === 'completed' ? { analytics: c.analytics } : {}),
  updatedAt: c.updatedAt,
});

/** The answer the interface describes for `POST /campaigns/:id/cancel`. */
export const canceledCampaign = (c: CampaignDto) => ({ _id: c._id, status: c.status, updatedAt: c.updatedAt });
