import { Paper, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';

/** What a list says when it has nothing yet: what it will hold and what to do (`children`). */
export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Paper withBorder p="xl" radius="md">
      <Stack align="center" gap="xs">
        <Text fw={600}>{title}</Text>
        {children}
      </Stack>
    </Paper>
  );
}
