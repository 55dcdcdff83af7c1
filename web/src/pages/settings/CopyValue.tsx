import { Button, Code, CopyButton, Group, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';

/**
 * A value to hand to another system (a key, a secret, a callback URL): shown in full, selectable,
 * with a button that copies it through `navigator.clipboard`. `label` names the value and the
 * button ("Copy key"); `children` say what to do with it.
 */
export function CopyValue({ label, value, buttonLabel, children }: { label: string; value: string; buttonLabel: string; children?: ReactNode }) {
  return (
    <Stack gap={4}>
      <Text size="sm" fw={500}>
        {label}
      </Text>
      <Group gap="xs" wrap="nowrap" align="flex-start">
        <Code block style={{ flex: 1, wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
          {value}
        </Code>
        <CopyButton value={value} timeout={2000}>
          {({ copied, copy }) => (
            <Button variant={copied ? 'filled' : 'default'} onClick={copy} style={{ flexShrink: 0 }}>
              {copied ? 'Copied' : buttonLabel}
            </Button>
          )}
        </CopyButton>
      </Group>
      {children && (
        <Text size="sm" c="dimmed">
          {children}
        </Text>
      )}
    </Stack>
  );
}
