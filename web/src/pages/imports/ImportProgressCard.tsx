import { Card, Group, Paper, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { ContactImportFieldsFragment } from '../../gql/graphql';
import { formatNumber, formatPercent } from '../../lib/format';

type Counts = Pick<ContactImportFieldsFragment, 'status' | 'rowsTotal' | 'rowsRead' | 'created' | 'updated' | 'skipped' | 'failed'>;

function Count({ label, value, hint }: { label: string; value: number; hint: string }) {
  return (
    <Paper withBorder p="sm" role="group" aria-label={label}>
      <Text size="sm">{label}</Text>
      <Text fz="xl" fw={700}>
        {formatNumber(value)}
      </Text>
      <Text size="xs" c="dimmed">
        {hint}
      </Text>
    </Paper>
  );
}

/** A bar that moves without a known end: a progressbar without a value, as ARIA has it. */
function Unknown({ text }: { text: string }) {
  return (
    <Stack gap={4}>
      <Progress.Root role="progressbar" aria-label="Import progress" aria-valuetext={text}>
        <Progress.Section value={100} withAria={false} striped animated color="indigo.3" />
      </Progress.Root>
      <Text size="sm">{text}</Text>
    </Stack>
  );
}

/**
 * How far the import got: while the file is read, the rows read (their number is known only at its
 * end); then the rows merged or reported of all of them; and the counts as they move.
 */
export function ImportProgressCard({ counts: c, live }: { counts: Counts; live: boolean }) {
  const done = c.created + c.updated + c.skipped + c.failed;
  let bar;
  if (c.status === 'queued') bar = <Unknown text="Waiting for a worker to start it" />;
  else if (c.rowsTotal == null) bar = <Unknown text={`Reading the file: ${formatNumber(c.rowsRead)} rows read`} />;
  else {
    const share = c.rowsTotal ? Math.min(1, done / c.rowsTotal) : 1;
    bar = (
      <Stack gap={4}>
        <Progress value={share * 100} aria-label="Import progress" striped={live} animated={live} />
        <Text size="sm">
          {formatNumber(Math.min(done, c.rowsTotal))} of {formatNumber(c.rowsTotal)} rows done ({formatPercent(Math.min(done, c.rowsTotal), c.rowsTotal || 1)})
        </Text>
      </Stack>
    );
  }
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={3}>Progress</Title>
          {live && <Text size="sm">Updating live</Text>}
        </Group>
        {bar}
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <Count label="Created" value={c.created} hint="new contacts" />
          <Count label="Updated" value={c.updated} hint="existing contacts" />
          <Count label="Skipped" value={c.skipped} hint="existing left alone, or repeated rows" />
          <Count label="Failed" value={c.failed} hint="rows not imported" />
        </SimpleGrid>
      </Stack>
    </Card>
  );
}
