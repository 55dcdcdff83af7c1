import { Button, Group, Text } from '@mantine/core';
import { formatNumber } from '../lib/format';

interface Props {
  /** The cursors of the pages before this one; empty on the first page. */
  history: (string | null)[];
  hasNextPage: boolean;
  totalCount?: number | null;
  onPrevious: () => void;
  onNext: () => void;
}

/** Previous and next over a cursor-paginated list (`first`/`after`). */
export function CursorPager({ history, hasNextPage, totalCount, onPrevious, onNext }: Props) {
  return (
    <Group justify="space-between" mt="md">
      <Text size="sm" c="dimmed">
        {totalCount != null ? `${formatNumber(totalCount)} in all` : ''}
      </Text>
      <Group>
        <Button variant="default" onClick={onPrevious} disabled={history.length === 0}>
          Previous page
        </Button>
        <Button variant="default" onClick={onNext} disabled={!hasNextPage}>
          Next page
        </Button>
      </Group>
    </Group>
  );
}
