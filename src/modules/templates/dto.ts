import type { Channel } from '../../delivery/types.js';

export interface TemplateRow {
  id: string;
  organization_id: string;
  name: string;
  channel: Channel;
  subject: string | null;
  content: string;
  created_at: Date;
  updated_at: Date;
}

export interface TemplateDto {
  _id: string;
  name: string;
  channel: Channel;
  subject: string | null;
  content: string;
  organization: string;
  createdAt: string;
  updatedAt: string;
}

export const toTemplateDto = (row: TemplateRow): TemplateDto => ({
  _id: row.id,
  name: row.name,
  channel: row.channel,
  subject: row.subject,
  content: row.content,
  organization: row.organization_id,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export const templateColumns = [
  'message_templates.id',
  'message_templates.organization_id',
  'message_templates.name',
  'message_templates.channel',
  'message_templates.subject',
  'message_templates.content',
  'message_templates.created_at',
  'message_templates.updated_at',
];
