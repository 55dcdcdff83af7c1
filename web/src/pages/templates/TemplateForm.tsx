import { Button, Code, Group, Modal, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import { useRef, useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { Channel, TemplateFieldsFragment } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';

export const TemplateFields = graphql(`
  fragment TemplateFields on Template {
    _id
    name
    channel
    subject
    content
    createdAt
    updatedAt
  }
`);

const CreateTemplate = graphql(`
  mutation CreateTemplate($input: CreateTemplateInput!) {
    createTemplate(input: $input) {
      ...TemplateFields
    }
  }
`);

const UpdateTemplate = graphql(`
  mutation UpdateTemplate($id: ID!, $input: UpdateTemplateInput!) {
    updateTemplate(id: $id, input: $input) {
      ...TemplateFields
    }
  }
`);

export type TemplateRow = TemplateFieldsFragment;

export const CHANNEL_LABELS: Record<Channel, string> = { email: 'Email', sms: 'SMS', whatsapp: 'WhatsApp' };
const CHANNEL_OPTIONS = (Object.keys(CHANNEL_LABELS) as Channel[]).map((value) => ({ value, label: CHANNEL_LABELS[value] }));
const FIELDS = ['name', 'channel', 'subject', 'content'];

interface Position {
  line: number;
  column: number;
}

/** The line and column a Liquid syntax error names (`... line 3, column 7: ...`), if it does. */
function positionOf(message: string | undefined): Position | null {
  const m = message && /line (\d+), column (\d+)/.exec(message);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}

/**
 * Create (no `template`) or edit a template, in a dialog. The server parses the subject and the
 * message as Liquid: a syntax error comes back on its field with its line and column.
 */
export function TemplateForm({ template, onClose }: { template: TemplateRow | null; onClose: () => void }) {
  const [name, setName] = useState(template?.name ?? '');
  const [channel, setChannel] = useState<Channel>(template?.channel ?? 'email');
  const [subject, setSubject] = useState(template?.subject ?? '');
  const [content, setContent] = useState(template?.content ?? '');
  const [createState, create] = useMutation(CreateTemplate);
  const [updateState, update] = useMutation(UpdateTemplate);
  const state = template ? updateState : createState;
  const errors = fieldErrors(state.error);
  const isEmail = channel === 'email';
  const contentRef = useRef<HTMLTextAreaElement>(null);
  const position = positionOf(errors.content);

  /** Puts the caret where the server found the content's Liquid error. */
  const goTo = ({ line, column }: Position) => {
    const area = contentRef.current;
    if (!area) return;
    const lines = area.value.split('\n');
    const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column - 1;
    area.focus();
    area.setSelectionRange(offset, offset);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = template
      ? // A template moving off email drops its subject (`null`), as the API asks.
        await update({ id: template._id, input: { name, channel, subject: isEmail ? subject : null, content } })
      : await create({ input: { name, channel, subject: isEmail ? subject : undefined, content } });
    if (!result.error) onClose();
  };

  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close dialog' }} title={template ? `Edit ${template.name}` : 'New template'} size="xl">
      <form onSubmit={submit}>
        <Stack>
          {(!Object.keys(errors).length || Object.keys(errors).some((f) => !FIELDS.includes(f))) && <ErrorAlert error={state.error} />}
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} data-autofocus />
          <Select
            label="Channel"
            required
            data={CHANNEL_OPTIONS}
            value={channel}
            allowDeselect={false}
            onChange={(v) => v && setChannel(v as Channel)}
            error={errors.channel}
          />
          {isEmail && <TextInput label="Subject" required value={subject} onChange={(e) => setSubject(e.currentTarget.value)} error={errors.subject} />}
          <Textarea
            label="Content"
            required
            description={
              <>
                Liquid placeholders: <Code>{'{{ contact.name }}'}</Code>, <Code>{'{{ contact.attributes.plan }}'}</Code>,{' '}
                <Code>{'{{ organization.name }}'}</Code>
                {isEmail ? ' (HTML allowed)' : ''}.
              </>
            }
            value={content}
            onChange={(e) => setContent(e.currentTarget.value)}
            error={errors.content}
            ref={contentRef}
            autosize
            minRows={8}
            maxRows={20}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          />
          {position ? (
            <Group>
              <Button size="xs" variant="default" onClick={() => goTo(position)}>
                {`Go to line ${position.line}, column ${position.column}`}
              </Button>
            </Group>
          ) : (
            <Text size="xs" c="dimmed">
              Herald checks the Liquid when you save; a mistake is shown under its field with its line and column.
            </Text>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              {template ? 'Save template' : 'Create template'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
