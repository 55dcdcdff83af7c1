import { Alert, Button, Group, Modal, Stack } from '@mantine/core';
import type { ReactNode } from 'react';
import { CopyValue } from './CopyValue';

/**
 * A credential Herald returns once and never again (an API key, a webhook signing secret), in a
 * dialog that says so; it closes only through its button or Escape, never by a stray click outside.
 */
export function ShownOnce({
  title,
  label,
  value,
  buttonLabel,
  onClose,
  children,
}: {
  title: string;
  label: string;
  value: string;
  buttonLabel: string;
  onClose: () => void;
  /** What else to know, under the value. */
  children?: ReactNode;
}) {
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={title} size="lg" closeOnClickOutside={false}>
      <Stack>
        <Alert color="indigo" title="Copy it now">
          This is the only time Herald shows it: it will not be shown again. Store it somewhere safe, such as a secrets manager.
        </Alert>
        <CopyValue label={label} value={value} buttonLabel={buttonLabel}>
          {children}
        </CopyValue>
        <Group justify="flex-end">
          <Button onClick={onClose}>I have copied it</Button>
        </Group>
      </Stack>
    </Modal>
  );
}
