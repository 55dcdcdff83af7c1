import { Group, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** A page's title (its one `h2`) and the page's main actions beside it. */
export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Group justify="space-between" mb="md">
      <Title order={2}>{title}</Title>
      {children && <Group>{children}</Group>}
    </Group>
  );
}
