import { Button, Fieldset, Group, Loader, Paper, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import { lazy, Suspense } from 'react';
import { useInsertAtCursor } from '../../components/editor/insert-at-cursor';
import { VariableMenu } from '../../components/editor/VariableMenu';
import type { Channel } from '../../gql/graphql';
import { CHANNEL_LABELS } from './campaign-fields';

/** The rich-text editor is fetched only when an email is written: the rest of the console never loads it. */
const EmailEditor = lazy(() => import('../../components/editor/EmailEditor'));

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

interface Props {
  channel: Channel;
  value: MessageDraft;
  onChange: (value: MessageDraft) => void;
  templates: TemplateOption[];
  /** The server's messages by field (`messages.sms.content`, ...), from `fieldErrors`. */
  errors: Record<string, string>;
}

/**
 * A channel's message in the campaign form: a saved template of the channel (sent as it is, or
 * copied here to be changed), or a subject (email) and text written here, with the variables the
 * organization's contacts have one click away. The server says what is missing or does not parse,
 * next to its field.
 */
export function MessageFields({ channel, value, onChange, templates, errors }: Props) {
  const prefix = `messages.${channel}`;
  const label = CHANNEL_LABELS[channel];
  const ofChannel = templates.filter((t) => t.channel === channel);
  const template = ofChannel.find((t) => t._id === value.templateId);
  const contentError = errors[`${prefix}.content`] ?? errors[prefix];
  return (
    <Fieldset legend={`${label} message`}>
      <Stack>
        <Select
          label={`${label} template`}
          description="Send a saved template as it is (its text is copied again at launch), or copy it here to change it."
          placeholder={ofChannel.length ? 'None: write the message below' : 'No saved templates for this channel'}
          data={ofChannel.map((t) => ({ value: t._id, label: t.name }))}
          value={value.templateId}
          onChange={(templateId) => onChange({ ...value, templateId })}
          clearable
          error={errors[`${prefix}.templateId`]}
        />
        {template ? (
          <>
            <Paper withBorder p="sm">
              {template.subject && (
                <Text size="sm" fw={600}>
                  {template.subject}
                </Text>
              )}
              <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
                {template.content}
              </Text>
            </Paper>
            <Group>
              <Button variant="default" size="xs" onClick={() => onChange({ subject: template.subject ?? '', content: template.content, templateId: null })}>
                Edit a copy of {template.name}
              </Button>
            </Group>
          </>
        ) : (
          <>
            {channel === 'email' && (
              <SubjectField value={value.subject} onChange={(subject) => onChange({ ...value, subject })} error={errors[`${prefix}.subject`]} />
            )}
            {channel === 'email' ? (
              <Suspense fallback={<Loader size="sm" role="status" aria-label="Loading the editor" />}>
                <EmailEditor label="Email text" value={value.content} onChange={(content) => onChange({ ...value, content })} error={contentError} />
              </Suspense>
            ) : (
              <TextField label={`${label} text`} value={value.content} onChange={(content) => onChange({ ...value, content })} error={contentError} />
            )}
          </>
        )}
      </Stack>
    </Fieldset>
  );
}

function SubjectField({ value, onChange, error }: { value: string; onChange: (v: string) => void; error?: string }) {
  const { ref, insert } = useInsertAtCursor<HTMLInputElement>(value, onChange);
  return (
    <Group align="flex-end" gap="xs" wrap="nowrap">
      <TextInput ref={ref} label="Subject" style={{ flex: 1 }} value={value} onChange={(e) => onChange(e.currentTarget.value)} error={error} />
      <VariableMenu target="Subject" onInsert={insert} />
    </Group>
  );
}

/** An SMS or WhatsApp text: plain text with Liquid. */
function TextField({ label, value, onChange, error }: { label: string; value: string; onChange: (v: string) => void; error?: string }) {
  const { ref, insert } = useInsertAtCursor<HTMLTextAreaElement>(value, onChange);
  return (
    <Stack gap="xs">
      <Textarea
        ref={ref}
        label={label}
        description={'Liquid works here: variables, filters such as {{ contact.firstName | default: "there" }}, and {% if %} tags.'}
        autosize
        minRows={3}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        error={error}
      />
      <Group>
        <VariableMenu target={label} onInsert={insert} />
      </Group>
    </Stack>
  );
}

/** The form's message as the API takes it: the template, or the written text (and subject). */
export function messageInput(channel: Channel, m: MessageDraft) {
  if (m.templateId) return { templateId: m.templateId };
  return channel === 'email' ? { subject: m.subject, content: m.content } : { content: m.content };
}
