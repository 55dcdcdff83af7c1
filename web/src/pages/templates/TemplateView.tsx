import { Code, Modal, Stack, Text } from '@mantine/core';
import { CHANNEL_LABELS, type TemplateRow } from './TemplateForm';

/** A template, read only: what a user-role caller sees of it. */
export function TemplateView({ template, onClose }: { template: TemplateRow; onClose: () => void }) {
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close dialog' }} title={template.name} size="xl">
      <Stack gap="xs">
        <Text size="sm">
          <Text span fw={600}>
            Channel:
          </Text>{' '}
          {CHANNEL_LABELS[template.channel]}
        </Text>
        {template.subject && (
          <Text size="sm">
            <Text span fw={600}>
              Subject:
            </Text>{' '}
            {template.subject}
          </Text>
        )}
        <Code block>{template.content}</Code>
      </Stack>
    </Modal>
  );
}
