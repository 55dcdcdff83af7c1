import { Anchor, Button, Code, Group, NativeSelect, Paper, SimpleGrid, Spoiler, Stack, Table, Text, Title, VisuallyHidden } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ATTEMPTS_POLL_MS, DeliveryStatus, WebhookAttemptsTable } from './WebhookAttemptsTable';

const PAGE_SIZE = 25;

const WebhookEventDetailQuery = graphql(`
  query WebhookEventDetail($id: ID!, $first: Int, $after: String) {
    webhookEvent(id: $id) {
      _id
      type
      timestamp
      data
      createdAt
      deliveries {
        endpointId
        status
        attempts
        nextAttemptAt
        lastResponseStatus
      }
    }
    webhookEventAttempts(eventId: $id, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          ...WebhookAttemptFields
        }
      }
    }
    webhookEndpoints(first: 100) {
      edges {
        node {
          _id
          url
        }
      }
    }
  }
`);

const WebhookResendEvent = graphql(`
  mutation WebhookResendEvent($id: ID!, $endpointId: ID!) {
    resendWebhookEvent(id: $id, endpointId: $endpointId) {
      eventId
    }
  }
`);

/**
 * One event: its data, its delivery to each endpoint with a re-send (from a first attempt, same
 * `webhook-id`), a re-send to any endpoint, and its attempts, fetched again every few seconds.
 */
export function WebhookEventDetail({ id }: { id: string }) {
  const pages = useCursorPages();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: WebhookEventDetailQuery, variables: { id, first: PAGE_SIZE, after: pages.after } });
  const [resendState, resend] = useMutation(WebhookResendEvent);
  const [target, setTarget] = useState('');
  const [resent, setResent] = useState<string | null>(null);

  useEffect(() => {
    const timer = setInterval(() => reexecute({ requestPolicy: 'network-only' }), ATTEMPTS_POLL_MS);
    return () => clearInterval(timer);
  }, [reexecute]);

  const event = data?.webhookEvent;
  const attempts = data?.webhookEventAttempts;
  const endpoints = data?.webhookEndpoints.edges.map((e) => e.node) ?? [];
  const urlOf = (endpointId: string) => endpoints.find((e) => e._id === endpointId)?.url;

  const resendTo = async (endpointId: string) => {
    setResent(null);
    const result = await resend({ id, endpointId });
    if (!result.error) setResent(urlOf(endpointId) ?? endpointId);
  };
  const submitResend = async (e: FormEvent) => {
    e.preventDefault();
    if (target) await resendTo(target);
  };

  return (
    <Stack>
      <Anchor component={Link} to="/settings/webhooks?tab=events">
        ← All webhook events
      </Anchor>
      <ErrorAlert error={error ?? resendState.error} />
      {!event && fetching && <PageLoader />}
      {event && (
        <Paper withBorder p="lg" radius="md">
          <Stack>
            <Title order={3}>Event {event.type}</Title>
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Text size="sm">
                <Text span fw={500}>
                  Happened:
                </Text>{' '}
                {formatDateTime(event.timestamp)}
              </Text>
              <Text size="sm">
                <Text span fw={500}>
                  Event id (webhook-id):
                </Text>{' '}
                <Code>{event._id}</Code>
              </Text>
            </SimpleGrid>
            <div>
              <Text size="sm" fw={500}>
                Data
              </Text>
              <Spoiler maxHeight={120} showLabel="Show all the data" hideLabel="Show less">
                <Code block>{JSON.stringify(event.data, null, 2)}</Code>
              </Spoiler>
            </div>
          </Stack>
        </Paper>
      )}
      {event && (
        <section aria-labelledby="event-deliveries">
          <Title order={3} id="event-deliveries" mb="xs">
            Deliveries
          </Title>
          {resent && (
            <Text size="sm" role="status" mb="xs">
              Queued again for {resent}.
            </Text>
          )}
          {event.deliveries.length > 0 && (
            <Table striped mb="md">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Endpoint</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th ta="right">Attempts</Table.Th>
                  <Table.Th ta="right">Last HTTP status</Table.Th>
                  <Table.Th>Next attempt</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {event.deliveries.map((d) => {
                  const url = urlOf(d.endpointId);
                  return (
                    <Table.Tr key={d.endpointId}>
                      <Table.Td style={{ wordBreak: 'break-all' }}>
                        {url ? (
                          <Anchor component={Link} to={`?endpoint=${d.endpointId}`}>
                            {url}
                          </Anchor>
                        ) : (
                          `${d.endpointId} (deleted)`
                        )}
                      </Table.Td>
                      <Table.Td>
                        <DeliveryStatus status={d.status} />
                      </Table.Td>
                      <Table.Td ta="right">{formatNumber(d.attempts)}</Table.Td>
                      <Table.Td ta="right">{d.lastResponseStatus ?? '—'}</Table.Td>
                      <Table.Td>{d.nextAttemptAt ? formatDateTime(d.nextAttemptAt) : '—'}</Table.Td>
                      <Table.Td>
                        {url && (
                          <Button size="xs" variant="default" aria-label={`Re-send to ${url}`} loading={resendState.fetching} onClick={() => void resendTo(d.endpointId)}>
                            Re-send
                          </Button>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          )}
          {endpoints.length > 0 && (
            <form onSubmit={submitResend} aria-label="Re-send to an endpoint">
              <Group align="flex-end">
                <NativeSelect
                  label="Re-send to endpoint"
                  required
                  data={[{ value: '', label: 'Choose an endpoint', disabled: true }, ...endpoints.map((e) => ({ value: e._id, label: e.url }))]}
                  value={target}
                  onChange={(e) => setTarget(e.currentTarget.value)}
                />
                <Button type="submit" variant="default" loading={resendState.fetching}>
                  Re-send event
                </Button>
              </Group>
            </form>
          )}
        </section>
      )}
      {attempts && (
        <section aria-labelledby="event-attempts">
          <Group justify="space-between" mb="xs">
            <Title order={3} id="event-attempts">
              Attempts
            </Title>
            <Button variant="default" size="xs" onClick={() => reexecute({ requestPolicy: 'network-only' })}>
              Refresh attempts
            </Button>
          </Group>
          <WebhookAttemptsTable attempts={attempts.edges.map((e) => e.node)} show="endpoint" endpointUrl={urlOf} />
          {attempts.edges.length > 0 && (
            <CursorPager
              history={pages.history}
              hasNextPage={attempts.pageInfo.hasNextPage}
              totalCount={attempts.totalCount}
              onPrevious={pages.previous}
              onNext={() => pages.next(attempts.pageInfo.endCursor)}
            />
          )}
        </section>
      )}
    </Stack>
  );
}
