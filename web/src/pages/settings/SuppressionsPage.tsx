import { Alert, Badge, Button, FileButton, Group, List, Modal, Stack, Table, Text, TextInput, VisuallyHidden } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { SuppressionImportResultFragment, SuppressionsListQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { useCursorPages } from '../../lib/use-cursor-pages';

const PAGE_SIZE = 25;
/** The largest CSV the server imports. */
const MAX_IMPORT_BYTES = 1024 * 1024;

const SuppressionsList = graphql(`
  query SuppressionsList($first: Int, $after: String, $search: String) {
    suppressions(first: $first, after: $after, search: $search) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          address
          reason
          bounceType
          detail
          createdAt
        }
      }
    }
  }
`);

const AddSuppression = graphql(`
  mutation AddSuppression($address: String!, $detail: String) {
    addSuppression(address: $address, detail: $detail) {
      _id
      address
    }
  }
`);

const RemoveSuppression = graphql(`
  mutation RemoveSuppression($id: ID!) {
    removeSuppression(id: $id) {
      message
    }
  }
`);

graphql(`
  fragment SuppressionImportResult on SuppressionImport {
    added
    alreadySuppressed
    invalidCount
    invalid {
      line
      value
    }
  }
`);

const ImportSuppressions = graphql(`
  mutation ImportSuppressions($csv: String!) {
    importSuppressions(csv: $csv) {
      ...SuppressionImportResult
    }
  }
`);

type Row = SuppressionsListQuery['suppressions']['edges'][number]['node'];

/** The words and colour of why an address is suppressed: what delivery added stands out (the message logs' failed and pending colours). */
function reasonBadge(row: Pick<Row, 'reason' | 'bounceType'>): { label: string; color: string; variant: 'filled' | 'light' } {
  if (row.reason === 'bounce') return { label: row.bounceType ? `Bounced (${row.bounceType})` : 'Bounced', color: '#b02525', variant: 'filled' };
  if (row.reason === 'complaint') return { label: 'Complaint', color: '#8a4b00', variant: 'filled' };
  if (row.reason === 'import') return { label: 'Imported', color: 'blue', variant: 'light' };
  return { label: 'Added by hand', color: 'gray', variant: 'light' };
}

/**
 * The organization's email suppression list: the addresses Herald does not send email to (bounces,
 * complaints, and those an admin added by hand or imported). Removing one allows sending again.
 */
export default function SuppressionsPage() {
  const { isAdmin } = useMe();
  const pages = useCursorPages();
  const [search, setSearch] = useState('');
  const [settled] = useDebouncedValue(search.trim(), 300);
  const { reset } = pages;
  // eslint-disable-next-line react-hooks/exhaustive-deps -- back to the first page when the settled search changes
  useEffect(() => reset(), [settled]);
  const [{ data, fetching, error }] = useQuery({ query: SuppressionsList, variables: { first: PAGE_SIZE, after: pages.after, search: settled || null } });
  const [removeState, remove] = useMutation(RemoveSuppression);
  const [adding, setAdding] = useState(false);
  const [importState, importCsv] = useMutation(ImportSuppressions);
  const [imported, setImported] = useState<SuppressionImportResultFragment | null>(null);
  const [tooLarge, setTooLarge] = useState(false);
  const resetFile = useRef<() => void>(null);
  const list = data?.suppressions;

  // The file is read here and sent as text: the server checks every line.
  const importFile = async (file: File | null) => {
    setImported(null);
    setTooLarge(false);
    if (!file) return;
    // The same file can be chosen again (after fixing it).
    resetFile.current?.();
    if (file.size > MAX_IMPORT_BYTES) return setTooLarge(true);
    const result = await importCsv({ csv: await file.text() });
    if (result.data) setImported(result.data.importSuppressions);
  };

  return (
    <>
      <PageHeader title="Suppressions">
        {isAdmin && (
          <>
            <FileButton resetRef={resetFile} accept=".csv,text/csv" onChange={(file) => void importFile(file)}>
              {(props) => (
                <Button variant="default" loading={importState.fetching} {...props}>
                  Import CSV
                </Button>
              )}
            </FileButton>
            <Button onClick={() => setAdding(true)}>Add address</Button>
          </>
        )}
      </PageHeader>
      <Text mb="md" maw={720}>
        Campaigns and sends to every contact leave these addresses out: they bounced, their owner complained, or an admin added them. A send to
        an address that bounced for good fails at once. Remove one to allow sending to it again.
      </Text>
      {imported && <ImportSummary result={imported} onClose={() => setImported(null)} />}
      {tooLarge && (
        <Alert color="red" role="alert" title="Not imported" mb="md">
          The file is larger than 1 MiB: split it and import each part.
        </Alert>
      )}
      <ErrorAlert error={error ?? removeState.error ?? importState.error} />
      <form role="search" aria-label="Search suppressions" onSubmit={(e) => e.preventDefault()}>
        <TextInput label="Search" description="Part of an address" type="search" value={search} onChange={(e) => setSearch(e.currentTarget.value)} maw={360} mb="md" />
      </form>
      {!list && fetching && <PageLoader />}
      {list && list.edges.length === 0 && (
        <EmptyState title={settled ? 'No matching addresses' : 'No suppressed addresses'}>
          <Text c="dimmed">{settled ? 'No suppressed address contains that text.' : 'Addresses that bounce or complain are added here, as are those an admin adds or imports.'}</Text>
        </EmptyState>
      )}
      {list && list.edges.length > 0 && (
        <>
          <Table.ScrollContainer minWidth={700}>
            <Table striped highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Address</Table.Th>
                  <Table.Th>Reason</Table.Th>
                  <Table.Th>Detail</Table.Th>
                  <Table.Th>Since</Table.Th>
                  {isAdmin && (
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.edges.map(({ node }) => {
                  const badge = reasonBadge(node);
                  return (
                    <Table.Tr key={node._id}>
                      <Table.Td fw={500}>{node.address}</Table.Td>
                      <Table.Td>
                        <Badge color={badge.color} variant={badge.variant} tt="none" miw="max-content">
                          {badge.label}
                        </Badge>
                      </Table.Td>
                      <Table.Td maw={320}>
                        <Text size="sm" lineClamp={2}>
                          {node.detail ?? '—'}
                        </Text>
                      </Table.Td>
                      <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                      {isAdmin && (
                        <Table.Td>
                          <Group justify="flex-end" wrap="nowrap">
                            <Button
                              size="xs"
                              color="red.9"
                              variant="outline"
                              aria-label={`Remove ${node.address}`}
                              onClick={() => {
                                if (confirm(`Remove ${node.address} from the suppression list? Herald will send email to it again.`)) void remove({ id: node._id });
                              }}
                            >
                              Remove
                            </Button>
                          </Group>
                        </Table.Td>
                      )}
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <CursorPager history={pages.history} hasNextPage={list.pageInfo.hasNextPage} totalCount={list.totalCount} onPrevious={pages.previous} onNext={() => pages.next(list.pageInfo.endCursor)} />
        </>
      )}
      {adding && <AddForm onClose={() => setAdding(false)} />}
    </>
  );
}

/** What an import did: counts, and the lines whose address was not one. */
function ImportSummary({ result, onClose }: { result: SuppressionImportResultFragment; onClose: () => void }) {
  return (
    <Alert role="status" color="indigo" title="Import finished" withCloseButton closeButtonLabel="Dismiss" onClose={onClose} mb="md">
      <Text size="sm">
        {formatNumber(result.added)} added, {formatNumber(result.alreadySuppressed)} already suppressed, {formatNumber(result.invalidCount)} invalid.
      </Text>
      {result.invalid.length > 0 && (
        <List size="sm" mt="xs">
          {result.invalid.map((p) => (
            <List.Item key={p.line}>
              Line {p.line}: {p.value ? `“${p.value}”` : 'no address'}
            </List.Item>
          ))}
        </List>
      )}
    </Alert>
  );
}

/** Adds one address by hand, with an optional note. */
function AddForm({ onClose }: { onClose: () => void }) {
  const [address, setAddress] = useState('');
  const [detail, setDetail] = useState('');
  const [state, add] = useMutation(AddSuppression);
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await add({ address, detail: detail.trim() || null });
    if (result.data) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title="Add address">
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <TextInput label="Email address" required type="email" value={address} onChange={(e) => setAddress(e.currentTarget.value)} error={errors.address} data-autofocus />
          <TextInput label="Note" description="Why, for whoever reads the list later." value={detail} onChange={(e) => setDetail(e.currentTarget.value)} error={errors.detail} maxLength={500} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              Add to the list
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
