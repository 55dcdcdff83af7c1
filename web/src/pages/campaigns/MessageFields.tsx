import { Code, Fieldset, Paper, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import type { Channel } from '../../gql/graphql';
import { CHANNEL_LABELS } from './campaign-fields';

/** One channel's message as the form holds it: written here, or a saved template's. */
export interface MessageDraft {
  subject: string;
  content: string;
  templateId: string | null;
}

export const emptyMessage = (): MessageDraft => ({ subject: '', content: '', templateId: null });

/** A saved template, as the message fields offer it. */
export interface TemplateOption {
  _id: string;
  name: string;
  channel: Channel;
  subject?: string | null;
  content: string;
}

/** The Liquid variables a campaign message can use (platform.md, "Personalised messages"). */
export function LiquidHelp({ campaign = true }: { campaign?: boolean }) {
  const vars = [
    'contact.name',
    'contact.firstName',
    'contact.email',
    'contact.phone',
    'contact.organization',
    'contact.attributes.<key>',
    'organization.name',
    ...(campaign ? ['campaign.name', 'unsubscribe_url'] : []),
  ];
  return (
    <>
      Personalise with Liquid:{' '}
      {vars.map((v, i) => (
        <span key={v}>
          {i > 0 && ' '}
          <Code style={{ whiteSpace: 'nowrap' }}>{`{{ ${v} }}`}</Code>
        </span>
      ))}
    </>
  );
}

interface Props {
  channel: Channel;
  value: MessageDraft;
  onChange: (value: MessageDraft) => void;
  templates: TemplateOption[];
  /** The server's messages by field (`messages.sms.content`, ...), from `fieldErrors`. */
  errors: Record<string, string>;
}

/**
 * A channel's message in the campaign form: a saved template of the channel, or a subject (email)
 * and text written here. The server says what is missing or does not parse, next to its field.
 */
export function MessageFields({ channel, value, onChange, templates, errors }: Props) {
  const prefix = `messages.${channel}`;
  const label = CHANNEL_LABELS[channel];
  const ofChannel = templates.filter((t) => t.channel === channel);
  const template = ofChannel.find((t) => t._id === value.templateId);
  return (
    <Fieldset legend={`${label} message`}>
      <Stack>
        <Select
          label={`${label} template`}
          description="Send a saved template instead of writing the message here; its text is copied again at launch."
          placeholder={ofChannel.length ? 'None: write the message below' : 'No saved templates for this channel'}
          data={ofChannel.map((t) => ({ value: t._id, label: t.name }))}
          value={value.templateId}
          onChange={(templateId) => onChange({ ...value, templateId })}
          clearable
          error={errors[`${prefix}.templateId`]}
        />
        {template ? (
          <Paper withBorder p="sm">
            {template.subject && (
              <Text size="sm" fw={600}>
                {template.subject}
              </Text>
            )}
            <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
              {template.content}
            </Text>
          </Paper>
        ) : (
          <>
            {channel === 'email' && (
              <TextInput
                label="Subject"
                value={value.subject}
                onChange={(e) => onChange({ ...value, subject: e.currentTarget.value })}
                error={errors[`${prefix}.subject`]}
              />
            )}
            <Textarea
              label={`${label} text`}
              description={<LiquidHelp />}
              autosize
              minRows={channel === 'email' ? 6 : 3}
              value={value.content}
              onChange={(e) => onChange({ ...value, content: e.currentTarget.value })}
              error={errors[`${prefix}.content`] ?? errors[prefix]}
            />
          </>
        )}
      </Stack>
    </Fieldset>
  );
}

/** The form's message as the API takes it: the template, or the written text (and subject). */
export function messageInput(channel: Channel, m: MessageDraft) {
  if (m.templateId) return { templateId: m.templateId };
  return channel === 'email' ? { subject: m.subject, content: m.content } : { content: m.content };
}
