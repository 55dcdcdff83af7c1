import { Anchor, Badge, Button, Group, NativeSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { MessageLogFilter, MessageLogsQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { textOf } from '../outbox/message-text';
import { CHANNEL_LABELS, CHANNEL_OPTIONS, STATUS_LABELS, STATUSES, StatusBadge, asChannel, asStatus } from './log-fields';
import { RecipientFilter } from './RecipientFilter';

const PAGE_SIZE = 25;

const MessageLogsQueryDocument = graphql(`
  query MessageLogs($first: Int, $after: String, $filter: MessageLogFilter) {
    messageLogs(first: $first, after: $after, filter: $filter) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          channel
          messagePreview
          cost
          campaignId
          test
          createdAt
          recipients {
            recipient
            status
          }
        }
      }
    }
  }
`);

const LogsCampaign = graphql(`
  query LogsCampaign($id: ID!) {
    campaign(id: $id) {
      _id
      name
    }
  }
`);

type LogRow = MessageLogsQuery['messageLogs']['edges'][number]['node'];

/**
 * The search parameters the page reads and writes (so a filtered list can be linked to, as the
 * campaign page does with `?campaign=<id>`), and the `messageLogs` filter they make.
 */
const PARAMS = ['channel', 'status', 'from', 'to', 'campaign', 'recipient'] as const;

function filterOf(search: URLSearchParams): MessageLogFilter {
  const filter: MessageLogFilter = {};
  const channel = asChannel(search.get('channel'));
  const status = asStatus(search.get('status'));
  if (channel) filter.channel = channel;
  if (status) filter.status = status;
  if (search.get('from')) filter.dateFrom = search.get('from');
  if (search.get('to')) filter.dateTo = search.get('to');
  if (search.get('campaign')) filter.campaignId = search.get('campaign');
  if (search.get('recipient')) filter.recipient = search.get('recipient');
  return filter;
}

/** The organization's message logs, newest first, narrowed by the filters of the URL. */
export default function LogsPage() {
  const [search, setSearch] = useSearchParams();
  const set = (name: (typeof PARAMS)[number], value: string) => {
    // From the address as it is now, not as this render saw it: two filters changed before the
    // page renders again (a date range typed quickly) both stay.
    const next = new URLSearchParams(window.location.search);
    if (value) next.set(name, value);
    else next.delete(name);
    setSearch(next, { replace: true });
  };
  const clear = () => setSearch(new URLSearchParams(), { replace: true });
  const filtered = PARAMS.some((p) => search.get(p));

  // A new filter starts again at the first page (state adjusted while rendering, as React advises).
  const pages = useCursorPages();
  const filterKey = PARAMS.map((p) => search.get(p) ?? '').join('|');
  const [pagesOf, setPagesOf] = useState(filterKey);
  if (pagesOf !== filterKey) {
    setPagesOf(filterKey);
    pages.reset();
  }

  // urql compares variables by value: a new filter object of the same filters is the same query.
  const [{ data, fetching, error }] = useQuery({ query: MessageLogsQueryDocument, variables: { first: PAGE_SIZE, after: pages.after, filter: filterOf(search) } });
  const logs = data?.messageLogs;
  const errors = fieldErrors(error);

  return (
    <>
      <PageHeader title="Message logs" />
      <Filters search={search} set={set} clear={clear} filtered={filtered} errors={errors} />
      {/* A bad date or address is told on its control; anything else (a bad campaign id in the URL) here. */}
      {!errors.dateFrom && !errors.dateTo && !errors.recipient && <ErrorAlert error={error} />}
      {!logs && fetching && <PageLoader />}
      {logs && logs.edges.length === 0 && (
        <EmptyState title={filtered ? 'No message logs match these filters' : 'No messages sent yet'}>
          {filtered ? (
            <>
              <Text c="dimmed">Widen the dates, or choose another channel, status or recipient.</Text>
              <Button variant="default" onClick={clear}>
                Clear filters
              </Button>
            </>
          ) : (
            <>
              <Text c="dimmed">Every send and campaign is logged here, one log per channel for each batch of up to 100 recipients.</Text>
              <Button component={Link} to="/send">
                Send a message
              </Button>
            </>
          )}
        </EmptyState>
      )}
      {logs && logs.edges.length > 0 && (
        <>
          <LogTable logs={logs.edges.map((e) => e.node)} />
          <CursorPager
            history={pages.history}
            hasNextPage={logs.pageInfo.hasNextPage}
            totalCount={logs.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(logs.pageInfo.endCursor)}
          />
        </>
      )}
    </>
  );
}

interface FiltersProps {
  search: URLSearchParams;
  set: (name: (typeof PARAMS)[number], value: string) => void;
  clear: () => void;
  filtered: boolean;
  /** The server's 400, by field: a bad date lands on its control. */
  errors: Record<string, string>;
}

/** The controls of the filters; the campaign, set by the link that led here, is shown and can be removed. */
function Filters({ search, set, clear, filtered, errors }: FiltersProps) {
  const campaignId = search.get('campaign');
  return (
    <Stack gap="xs" mb="md">
      <Group align="flex-end">
        <NativeSelect label="Channel" data={CHANNEL_OPTIONS} value={asChannel(search.get('channel')) ?? ''} onChange={(e) => set('channel', e.currentTarget.value)} />
        <NativeSelect
          label="Recipient status"
          data={[{ value: '', label: 'Any status' }, ...STATUSES.map((s) => ({ value: s, label: `At least one ${STATUS_LABELS[s].toLowerCase()}` }))]}
          value={asStatus(search.get('status')) ?? ''}
          onChange={(e) => set('status', e.currentTarget.value)}
        />
        <TextInput label="Sent from" type="date" value={search.get('from') ?? ''} onChange={(e) => set('from', e.currentTarget.value)} error={errors.dateFrom} />
        <TextInput label="Sent until" type="date" value={search.get('to') ?? ''} onChange={(e) => set('to', e.currentTarget.value)} error={errors.dateTo} />
        <RecipientFilter key={search.get('recipient') ?? ''} value={search.get('recipient') ?? ''} onSearch={(address) => set('recipient', address)} error={errors.recipient} />
        {filtered && (
          <Button variant="default" onClick={clear}>
            Clear filters
          </Button>
        )}
      </Group>
      {campaignId && <CampaignFilter id={campaignId} onRemove={() => set('campaign', '')} />}
    </Stack>
  );
}

function CampaignFilter({ id, onRemove }: { id: string; onRemove: () => void }) {
  const [{ data }] = useQuery({ query: LogsCampaign, variables: { id } });
  const name = data?.campaign.name ?? 'a campaign';
  return (
    <Group gap="xs">
      <Text size="sm">
        Logs of the campaign{' '}
        <Anchor inherit component={Link} to={`/campaigns/${id}`}>
          {name}
        </Anchor>
      </Text>
      <Button size="xs" variant="default" onClick={onRemove}>
        Show every campaign
      </Button>
    </Group>
  );
}

/** How many of a log's recipients are in each status, as badges ("2 sent", "1 failed"). */
function StatusCounts({ recipients }: { recipients: LogRow['recipients'] }) {
  return (
    <Group gap={4}>
      {STATUSES.map((status) => {
        const n = recipients.filter((r) => r.status === status).length;
        return n ? (
          <Group key={status} gap={4} wrap="nowrap">
            <Text size="sm">{formatNumber(n)}</Text>
            <StatusBadge status={status} />
          </Group>
        ) : null;
      })}
    </Group>
  );
}

/** One page of logs: when, over what, the message, how its recipients stand, and its campaign. */
function LogTable({ logs }: { logs: LogRow[] }) {
  return (
    <Table striped highlightOnHover>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Sent</Table.Th>
          <Table.Th>Channel</Table.Th>
          <Table.Th>Message</Table.Th>
          <Table.Th>Recipients</Table.Th>
          <Table.Th ta="right">Cost</Table.Th>
          <Table.Th>Campaign</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {logs.map((log) => (
          <Table.Tr key={log._id}>
            <Table.Td>
              <Anchor size="sm" component={Link} to={`/message-logs/${log._id}`} aria-label={`${CHANNEL_LABELS[log.channel]} log of ${formatDateTime(log.createdAt)}`}>
                {formatDateTime(log.createdAt)}
              </Anchor>
            </Table.Td>
            <Table.Td>{CHANNEL_LABELS[log.channel]}</Table.Td>
            <Table.Td maw={360}>
              <Text size="sm" truncate="end">
                {textOf(log.messagePreview)}
              </Text>
            </Table.Td>
            <Table.Td>
              <StatusCounts recipients={log.recipients} />
            </Table.Td>
            <Table.Td ta="right">{formatNumber(log.cost)}</Table.Td>
            <Table.Td>
              {log.campaignId ? (
                <Group gap="xs">
                  <Anchor size="sm" component={Link} to={`/campaigns/${log.campaignId}`}>
                    Open campaign
                  </Anchor>
                  {log.test && (
                    <Badge variant="outline" color="gray.8">
                      Test send
                    </Badge>
                  )}
                </Group>
              ) : (
                'Ad hoc send'
              )}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
