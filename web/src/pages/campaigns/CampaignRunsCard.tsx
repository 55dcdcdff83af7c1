import { Anchor, Card, Group, Loader, ScrollArea, Table, Text, Title } from '@mantine/core';
import { useEffect } from 'react';
import { Link } from 'react-router';
import { useQuery, type UseQueryExecute } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { CampaignType } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { RunStatusBadge } from './campaign-fields';
import { formatInZone } from './schedule-words';

const PAGE_SIZE = 20;
/** How often an active campaign's runs are read again (runs start by themselves, on the server's clock). */
const REFRESH_MS = 4000;

/** The runs, with the campaign's own fields: a run changes its next run time and its analytics too. */
const CampaignRunsDocument = graphql(`
  query CampaignPageRuns($id: ID!, $first: Int, $after: String) {
    campaign(id: $id) {
      ...CampaignFields
      runs(first: $first, after: $after) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          node {
            _id
            scheduledAt
            startedAt
            completedAt
            status
            failureReason
            recipients
            analytics {
              sent
              failed
            }
          }
        }
      }
    }
  }
`);

const CampaignPendingSendsDocument = graphql(`
  query CampaignPagePendingSends($id: ID!, $first: Int, $after: String) {
    campaign(id: $id) {
      _id
      pendingSends(first: $first, after: $after) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          node {
            contactId
            name
            triggeredAt
            dueAt
          }
        }
      }
    }
  }
`);

/**
 * Reads a query again from the server every few seconds while `live`, and at once whenever `stamp`
 * changes (a `campaignProgress` event: the campaign's status or counters moved).
 */
function useRefresh(reexecute: UseQueryExecute, live: boolean, stamp: string | undefined) {
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => reexecute({ requestPolicy: 'network-only' }), REFRESH_MS);
    return () => clearInterval(timer);
  }, [live, reexecute]);
  useEffect(() => {
    if (stamp) reexecute({ requestPolicy: 'network-only' });
  }, [stamp, reexecute]);
}

interface Props {
  campaignId: string;
  type: CampaignType;
  /** Whether runs can still start (the campaign is active or scheduled). */
  live: boolean;
  /** Changes with each progress event of the campaign. */
  stamp?: string;
}

/** A recurring or automated campaign's runs, newest first: when, how it went, and why a failed one was not sent. */
export function CampaignRunsCard({ campaignId, type, live, stamp }: Props) {
  const pages = useCursorPages();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: CampaignRunsDocument, variables: { id: campaignId, first: PAGE_SIZE, after: pages.after } });
  useRefresh(reexecute, live, stamp);
  const runs = data?.campaign.runs;
  const recurrence = data?.campaign.recurrence;
  return (
    <Card withBorder>
      <Group justify="space-between" mb="xs">
        <Title order={3} id="campaign-runs-title">
          Runs
        </Title>
        {live && <Text size="sm">Updating live</Text>}
      </Group>
      <ErrorAlert error={error} title="The runs could not be read" />
      {!runs && fetching && <Loader size="sm" role="status" aria-label="Loading runs" />}
      {runs && runs.edges.length === 0 && (
        <Text size="sm">
          {type === 'automated'
            ? 'No run yet: contacts that meet the trigger are sent together in a run once their delay has passed.'
            : recurrence?.nextRunAt
              ? `No run yet: the first is on ${formatInZone(recurrence.nextRunAt, recurrence.timezone)}.`
              : 'No run yet: the first starts at the rule’s next time once the campaign has started.'}
        </Text>
      )}
      {runs && runs.edges.length > 0 && (
        <>
          <ScrollArea type="auto">
            <Table striped aria-labelledby="campaign-runs-title">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Scheduled at</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th ta="right">Recipients</Table.Th>
                  <Table.Th ta="right">Sent</Table.Th>
                  <Table.Th ta="right">Failed</Table.Th>
                  <Table.Th>Failure reason</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {runs.edges.map(({ node: run }) => (
                  <Table.Tr key={run._id}>
                    <Table.Td>{formatDateTime(run.scheduledAt)}</Table.Td>
                    <Table.Td>
                      <RunStatusBadge status={run.status} />
                    </Table.Td>
                    <Table.Td ta="right">{formatNumber(run.recipients)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(run.analytics.sent)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(run.analytics.failed)}</Table.Td>
                    <Table.Td>{run.failureReason ?? '—'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollArea>
          {(pages.history.length > 0 || runs.pageInfo.hasNextPage) && (
            <CursorPager
              history={pages.history}
              hasNextPage={runs.pageInfo.hasNextPage}
              totalCount={runs.totalCount}
              onPrevious={pages.previous}
              onNext={() => pages.next(runs.pageInfo.endCursor)}
            />
          )}
        </>
      )}
    </Card>
  );
}

/** The contacts an automated campaign will send to once their delay has passed, soonest first. */
export function PendingSendsCard({ campaignId, live, stamp }: Omit<Props, 'type'>) {
  const pages = useCursorPages();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: CampaignPendingSendsDocument, variables: { id: campaignId, first: PAGE_SIZE, after: pages.after } });
  useRefresh(reexecute, live, stamp);
  const pending = data?.campaign.pendingSends;
  return (
    <Card withBorder>
      <Title order={3} mb="xs" id="campaign-pending-title">
        Pending sends
      </Title>
      <ErrorAlert error={error} title="The pending sends could not be read" />
      {!pending && fetching && <Loader size="sm" role="status" aria-label="Loading pending sends" />}
      {pending && pending.edges.length === 0 && <Text size="sm">No contact is waiting for its delay to pass.</Text>}
      {pending && pending.edges.length > 0 && (
        <>
          <ScrollArea type="auto">
            <Table striped aria-labelledby="campaign-pending-title">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Contact</Table.Th>
                  <Table.Th>Triggered at</Table.Th>
                  <Table.Th>Due at</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {pending.edges.map(({ node: p }) => (
                  <Table.Tr key={`${p.contactId}-${p.triggeredAt}`}>
                    <Table.Td>
                      {p.name != null ? (
                        <Anchor component={Link} to={`/contacts/${p.contactId}`} size="sm">
                          {p.name || 'Unnamed contact'}
                        </Anchor>
                      ) : (
                        'Deleted contact (not sent)'
                      )}
                    </Table.Td>
                    <Table.Td>{formatDateTime(p.triggeredAt)}</Table.Td>
                    <Table.Td>{formatDateTime(p.dueAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollArea>
          {(pages.history.length > 0 || pending.pageInfo.hasNextPage) && (
            <CursorPager
              history={pages.history}
              hasNextPage={pending.pageInfo.hasNextPage}
              totalCount={pending.totalCount}
              onPrevious={pages.previous}
              onNext={() => pages.next(pending.pageInfo.endCursor)}
            />
          )}
        </>
      )}
    </Card>
  );
}
