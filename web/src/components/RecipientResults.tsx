/**
 * The outcome of a send per recipient (`RecipientResult`: the send page's and a campaign's test
 * send), each with a link to the message log that recorded it. A send answers no log ids, so the
 * logs are looked up afterwards: the newest log, of the logs `filter` selects since the send
 * started, that lists the recipient.
 */
import { Anchor, Badge, Group, Table, Text } from '@mantine/core';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { graphql } from '../gql';
import type { MessageLogFilter } from '../gql/graphql';
import { formatNumber } from '../lib/format';

const RecipientResultLogs = graphql(`
  query RecipientResultLogs($filter: MessageLogFilter, $first: Int) {
    messageLogs(first: $first, filter: $filter) {
      edges {
        node {
          _id
          campaignId
          test
          createdAt
          recipients {
            recipient
          }
        }
      }
    }
  }
`);

export interface RecipientOutcome {
  recipient: string;
  status: 'success' | 'failed';
  error?: string | null;
}

/** At most this many rows are listed; the summary counts them all. */
const SHOWN = 200;

interface Props {
  results: RecipientOutcome[];
  /** Which logs may hold these results: a channel, a campaign, and a start time (ISO) shortly before the send. */
  filter: MessageLogFilter;
  /** Whether a log is one of this send's kind (an ad hoc send's, a campaign's test send's). */
  accept?: (log: { campaignId?: string | null; test: boolean }) => boolean;
  caption: string;
}

export function RecipientResults({ results, filter, accept = () => true, caption }: Props) {
  const [{ data }] = useQuery({ query: RecipientResultLogs, variables: { filter, first: 100 }, requestPolicy: 'network-only' });
  const logOf = useMemo(() => {
    const map = new Map<string, string>();
    for (const { node } of data?.messageLogs.edges ?? []) {
      if (!accept(node)) continue;
      // Newest first: the first log naming a recipient is the one of this send.
      for (const r of node.recipients) if (!map.has(r.recipient)) map.set(r.recipient, node._id);
    }
    return map;
  }, [data, accept]);
  const sent = results.filter((r) => r.status === 'success').length;
  return (
    <>
      <Group gap="xs" mb="xs" role="status">
        <Text fw={600}>
          {formatNumber(sent)} sent, {formatNumber(results.length - sent)} failed
        </Text>
        {results.length > SHOWN && <Text size="sm">(the first {formatNumber(SHOWN)} are listed; the message logs hold them all)</Text>}
      </Group>
      <Table striped>
        <Table.Caption>{caption}</Table.Caption>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Recipient</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Error</Table.Th>
            <Table.Th>Log</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {results.slice(0, SHOWN).map((r) => {
            const log = logOf.get(r.recipient);
            return (
              <Table.Tr key={r.recipient}>
                <Table.Td>{r.recipient}</Table.Td>
                <Table.Td>
                  <Badge color={r.status === 'success' ? 'teal.9' : 'red.9'} variant="filled">
                    {r.status === 'success' ? 'sent' : 'failed'}
                  </Badge>
                </Table.Td>
                <Table.Td>{r.error}</Table.Td>
                <Table.Td>
                  {log ? (
                    <Anchor component={Link} to={`/message-logs/${log}`} aria-label={`Open log of ${r.recipient}`}>
                      Open log
                    </Anchor>
                  ) : (
                    '—'
                  )}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </>
  );
}
