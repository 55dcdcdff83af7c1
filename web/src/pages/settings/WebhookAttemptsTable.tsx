import { Anchor, Badge, Code, Spoiler, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import { EmptyState } from '../../components/EmptyState';
import { graphql } from '../../gql';
import type { WebhookAttemptFieldsFragment } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';

export const WEBHOOK_ATTEMPT_FIELDS = graphql(`
  fragment WebhookAttemptFields on WebhookAttempt {
    _id
    endpointId
    eventId
    eventType
    attempt
    status
    responseStatus
    durationMs
    response
    error
    attemptedAt
  }
`);

/** How often the attempts shown are fetched again: deliveries happen in the background. */
export const ATTEMPTS_POLL_MS = 3000;

export function DeliveryStatus({ status }: { status: string }) {
  const color = status === 'succeeded' ? 'green' : status === 'failed' ? 'red' : 'gray';
  return (
    <Badge color={color} variant="dot" miw="max-content">
      {status}
    </Badge>
  );
}

/**
 * Delivery attempts, newest first: when, the event (or the endpoint, from an event's page), the
 * outcome, the answer's status, how long it took and the first 1 KiB of what it said.
 */
export function WebhookAttemptsTable({
  attempts,
  show,
  endpointUrl,
}: {
  attempts: WebhookAttemptFieldsFragment[];
  /** The column that tells attempts apart: their event (an endpoint's page) or their endpoint (an event's page). */
  show: 'event' | 'endpoint';
  endpointUrl?: (id: string) => string | undefined;
}) {
  if (!attempts.length) {
    return (
      <EmptyState title="No attempts yet">
        <Text c="dimmed">{show === 'event' ? 'Send a test event: its attempt shows here within seconds.' : 'This event has not been delivered yet.'}</Text>
      </EmptyState>
    );
  }
  return (
    <Table striped>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Attempted</Table.Th>
          <Table.Th>{show === 'event' ? 'Event' : 'Endpoint'}</Table.Th>
          <Table.Th ta="right">Attempt</Table.Th>
          <Table.Th>Status</Table.Th>
          <Table.Th ta="right">HTTP status</Table.Th>
          <Table.Th ta="right">Duration</Table.Th>
          <Table.Th>Answer</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {attempts.map((a) => (
          <Table.Tr key={a._id}>
            <Table.Td>{formatDateTime(a.attemptedAt)}</Table.Td>
            <Table.Td>
              {show === 'event' ? (
                <Anchor component={Link} to={`?event=${a.eventId}`}>
                  {a.eventType}
                </Anchor>
              ) : (
                <Anchor component={Link} to={`?endpoint=${a.endpointId}`} style={{ wordBreak: 'break-all' }}>
                  {endpointUrl?.(a.endpointId) ?? a.endpointId}
                </Anchor>
              )}
            </Table.Td>
            <Table.Td ta="right">{formatNumber(a.attempt)}</Table.Td>
            <Table.Td>
              <DeliveryStatus status={a.status} />
            </Table.Td>
            <Table.Td ta="right">{a.responseStatus ?? '—'}</Table.Td>
            <Table.Td ta="right">{formatNumber(a.durationMs)} ms</Table.Td>
            <Table.Td maw={360}>
              {a.error && <Text size="sm">{a.error}</Text>}
              {a.response ? (
                <Spoiler maxHeight={44} showLabel="Show the whole answer" hideLabel="Show less">
                  <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
                    {a.response}
                  </Code>
                </Spoiler>
              ) : (
                !a.error && <Text size="sm">(empty)</Text>
              )}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
