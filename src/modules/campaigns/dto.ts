import type { Channel } from '../../delivery/types.js';

export type CampaignStatus = 'draft' | 'scheduled' | 'active' | 'completed' | 'canceled';

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
  sent: number;
  delivered: number;
  failed: number;
  /** Addresses left out at launch: a contact with them unsubscribed from the channel. */
  suppressed: number;
  opened: number;
  clicked: number;
  total_recipients: number;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Analytics {
  sent: number;
  delivered: number;
  failed: number;
  opened: number;
  clicked: number;
  /** Addresses left out at launch because a contact with them unsubscribed from the channel. */
  suppressed: number;
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
  analytics: Analytics;
  organization: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export const analyticsOf = (row: Pick<CampaignRow, 'sent' | 'delivered' | 'failed' | 'opened' | 'clicked' | 'suppressed'>): Analytics => ({
  sent: row.sent,
  delivered: row.delivered,
  failed: row.failed,
  opened: row.opened,
  clicked: row.clicked,
  suppressed: row.suppressed,
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
  analytics: analyticsOf(row),
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
  analytics: c.analytics,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
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
