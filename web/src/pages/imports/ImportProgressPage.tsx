import { Alert, Anchor, Button, Card, Grid, Group, Modal, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { FieldTable, type Field } from '../../components/FieldTable';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { ContactImportFieldsFragment } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { ImportErrorsTable } from './ImportErrorsTable';
import { ImportProgressCard } from './ImportProgressCard';
import { DELIMITER_LABELS, ImportGroupOptions, ImportStatusBadge, formatBytes, importName, isUnderWay } from './import-fields';

const ImportPageDetail = graphql(`
  query ImportPageDetail($id: ID!) {
    contactImport(id: $id) {
      ...ContactImportFields
    }
  }
`);

/** The import as it changes, pushed by the server (graphql-ws); the last event carries its end. */
const ImportPageProgress = graphql(`
  subscription ImportPageProgress($id: ID!) {
    contactImportProgress(id: $id) {
      ...ContactImportFields
    }
  }
`);

const ImportPageCancel = graphql(`
  mutation ImportPageCancel($id: ID!) {
    cancelContactImport(id: $id) {
      ...ContactImportFields
    }
  }
`);

/**
 * One import: its status and counts, live while it is queued or running (the `contactImportProgress`
 * subscription, no polling), a way to cancel it meanwhile, and once it ends the rows it did not
 * take (line, column, why) or why it failed as a whole.
 */
export default function ImportProgressPage() {
  const { id = '' } = useParams();
  const [{ data, fetching, error }] = useQuery({ query: ImportPageDetail, variables: { id } });
  const stored = data?.contactImport;
  const [{ data: liveData }] = useSubscription({ query: ImportPageProgress, variables: { id }, pause: !stored || !isUnderWay(stored.status) });
  const event = liveData?.contactImportProgress;
  const current = event && stored && event._id === stored._id && event.updatedAt >= stored.updatedAt ? event : stored;
  const [canceling, setCanceling] = useState(false);

  if (error && !current) return <ErrorAlert error={error} />;
  if (!current) return fetching ? <PageLoader /> : null;
  const underWay = isUnderWay(current.status);

  return (
    <>
      <PageHeader title={`Import of ${importName(current)}`}>
        <Button variant="default" component={Link} to="/imports">
          New import
        </Button>
        {underWay && (
          <Button color="red" variant="outline" onClick={() => setCanceling(true)}>
            Cancel import
          </Button>
        )}
      </PageHeader>
      <Group gap="xs" mb="md" role="status" aria-label="Import status">
        <Text>Status:</Text>
        <ImportStatusBadge status={current.status} />
        {current.finishedAt && <Text>ended on {formatDateTime(current.finishedAt)}</Text>}
      </Group>
      {current.status === 'failed' && (
        <Alert color="red" title="The import failed" mb="md">
          {current.failure ?? 'The file could not be imported.'} Nothing of it was imported.
        </Alert>
      )}
      {current.status === 'canceled' && (
        <Alert color="indigo" title="The import was canceled" mb="md">
          The contacts merged before the cancel stay; the rest of the file was not imported.
        </Alert>
      )}
      <Grid>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <Stack>
            <ImportProgressCard counts={current} live={underWay} />
            {current.errors.length > 0 && <ImportErrorsTable errors={current.errors} failed={current.failed} />}
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }}>
          <Settings contactImport={current} />
        </Grid.Col>
      </Grid>
      {canceling && <CancelDialog id={current._id} onClose={() => setCanceling(false)} />}
    </>
  );
}

/** Cancel, asked first: batches merged stay. */
function CancelDialog({ id, onClose }: { id: string; onClose: () => void }) {
  const [state, cancel] = useMutation(ImportPageCancel);
  const confirm = async () => {
    const result = await cancel({ id });
    if (!result.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} title="Cancel this import?">
      <Stack>
        <ErrorAlert error={state.error} />
        <Text>The contacts merged so far stay; the rest of the file is not imported.</Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Keep importing
          </Button>
          <Button color="red" onClick={confirm} loading={state.fetching}>
            Cancel import
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** What the import was told: the file, where each column went, the match key, groups and tags. */
function Settings({ contactImport: i }: { contactImport: ContactImportFieldsFragment }) {
  const [{ data }] = useQuery({ query: ImportGroupOptions });
  const groupNames = new Map((data?.groups.edges ?? []).map((e) => [e.node._id, e.node.name]));
  const rows: Field[] = [
    ['File', `${importName(i)}, ${formatBytes(i.fileBytes)}`],
    ['Separator', DELIMITER_LABELS[i.delimiter] ?? i.delimiter],
    ['Found by', i.matchBy === 'email' ? 'Email' : 'Phone'],
    ['Existing contacts', i.existing === 'update' ? 'Updated' : 'Left as they are'],
    [
      'Groups added',
      i.groups.length
        ? i.groups.map((g, n) => (
            <span key={g}>
              {n > 0 && ', '}
              <Anchor component={Link} to={`/contacts?group=${g}`}>
                {groupNames.get(g) ?? g}
              </Anchor>
            </span>
          ))
        : 'None',
    ],
    ['Tags added', i.tags.length ? i.tags.join(', ') : 'None'],
    ['Uploaded', formatDateTime(i.createdAt)],
    ['Started', formatDateTime(i.startedAt)],
    ['Rows in the file', formatNumber(i.rowsTotal)],
  ];
  return (
    <Card withBorder>
      <Title order={3} mb="sm">
        Settings
      </Title>
      <FieldTable fields={rows} labelWidth={150} />
      <Title order={4} mt="md" mb="xs">
        Columns
      </Title>
      <Table>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Column</Table.Th>
            <Table.Th>Goes to</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {i.columns.map((c, n) => (
            <Table.Tr key={n}>
              <Table.Td>{c.column}</Table.Td>
              <Table.Td>{c.field ?? <Text span c="dimmed" size="sm">Ignored</Text>}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Card>
  );
}
