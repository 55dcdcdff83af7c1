import { Anchor, Badge, Button, Group, Table, Tabs, Text } from '@mantine/core';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ShownOnce } from './ShownOnce';
import { EndpointStatus, WebhookEndpointDetail } from './WebhookEndpointDetail';
import { WebhookEndpointForm } from './WebhookEndpointForm';
import { WebhookEventDetail } from './WebhookEventDetail';

const PAGE_SIZE = 25;

const WebhookEndpointsList = graphql(`
  query WebhookEndpointsList($first: Int, $after: String) {
    webhookEndpoints(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          ...WebhookEndpointFields
        }
      }
    }
  }
`);

const WebhookEventsList = graphql(`
  query WebhookEventsList($first: Int, $after: String) {
    webhookEvents(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          type
          timestamp
          deliveries {
            endpointId
            status
          }
        }
      }
    }
  }
`);

/**
 * Outbound webhooks: the endpoints (`?endpoint=<id>` opens one, with its attempts) and the events
 * sent to them (`?tab=events`; `?event=<id>` opens one, with its deliveries and re-sends).
 */
export default function WebhooksPage() {
  const [params, setParams] = useSearchParams();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ id: string; url: string; secret: string } | null>(null);
  const endpointId = params.get('endpoint');
  const eventId = params.get('event');
  const tab = params.get('tab') === 'events' ? 'events' : 'endpoints';

  return (
    <>
      <PageHeader title="Webhooks">
        <Button onClick={() => setCreating(true)}>New endpoint</Button>
      </PageHeader>
      {endpointId ? (
        <WebhookEndpointDetail key={endpointId} id={endpointId} />
      ) : eventId ? (
        <WebhookEventDetail key={eventId} id={eventId} />
      ) : (
        <Tabs value={tab} onChange={(value) => setParams(value === 'events' ? { tab: 'events' } : {})} keepMounted={false}>
          <Tabs.List mb="md">
            <Tabs.Tab value="endpoints">Endpoints</Tabs.Tab>
            <Tabs.Tab value="events">Events</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="endpoints">
            <EndpointsList onNew={() => setCreating(true)} />
          </Tabs.Panel>
          <Tabs.Panel value="events">
            <EventsList />
          </Tabs.Panel>
        </Tabs>
      )}
      {creating && (
        <WebhookEndpointForm
          endpoint={null}
          onClose={() => setCreating(false)}
          onCreated={(endpoint) => {
            setCreating(false);
            setCreated(endpoint);
          }}
        />
      )}
      {created && (
        <ShownOnce
          title="Endpoint created"
          label="Signing secret"
          value={created.secret}
          buttonLabel="Copy secret"
          onClose={() => {
            setCreated(null);
            setParams({ endpoint: created.id });
          }}
        >
          Give it to the receiver at {created.url}: it verifies each event’s <code>webhook-signature</code> header with it.
        </ShownOnce>
      )}
    </>
  );
}

function EndpointsList({ onNew }: { onNew: () => void }) {
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: WebhookEndpointsList, variables: { first: PAGE_SIZE, after: pages.after } });
  const endpoints = data?.webhookEndpoints;
  return (
    <>
      <ErrorAlert error={error} />
      {!endpoints && fetching && <PageLoader />}
      {endpoints && endpoints.edges.length === 0 && (
        <EmptyState title="No webhook endpoints yet">
          <Text c="dimmed">Add an endpoint to have Herald post message and campaign events to your systems as they happen.</Text>
          <Button onClick={onNew}>New endpoint</Button>
        </EmptyState>
      )}
      {endpoints && endpoints.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>URL</Table.Th>
                <Table.Th>Event types</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Last success</Table.Th>
                <Table.Th ta="right">Failures in a row</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {endpoints.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td style={{ wordBreak: 'break-all' }}>
                    <Anchor component={Link} to={`?endpoint=${node._id}`}>
                      {node.url}
                    </Anchor>
                    {node.description && <Text size="sm">{node.description}</Text>}
                  </Table.Td>
                  <Table.Td>
                    {node.eventTypes.length ? (
                      <Group gap={4}>
                        {node.eventTypes.map((t) => (
                          <Badge key={t} variant="outline" color="gray" tt="none">
                            {t}
                          </Badge>
                        ))}
                      </Group>
                    ) : (
                      'Every type'
                    )}
                  </Table.Td>
                  <Table.Td>
                    <EndpointStatus endpoint={node} />
                    {node.disabledReason && <Text size="sm">{node.disabledReason}</Text>}
                  </Table.Td>
                  <Table.Td>{node.lastSuccessAt ? formatDateTime(node.lastSuccessAt) : 'Never'}</Table.Td>
                  <Table.Td ta="right">{formatNumber(node.failuresInARow)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={endpoints.pageInfo.hasNextPage}
            totalCount={endpoints.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(endpoints.pageInfo.endCursor)}
          />
        </>
      )}
    </>
  );
}

/** "2 succeeded, 1 pending": an event's deliveries by status. */
function deliverySummary(deliveries: { status: string }[]): string {
  if (!deliveries.length) return 'No endpoint took it';
  const counts = new Map<string, number>();
  for (const d of deliveries) counts.set(d.status, (counts.get(d.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${formatNumber(n)} ${status}`).join(', ');
}

function EventsList() {
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: WebhookEventsList, variables: { first: PAGE_SIZE, after: pages.after } });
  const events = data?.webhookEvents;
  return (
    <>
      <ErrorAlert error={error} />
      {!events && fetching && <PageLoader />}
      {events && events.edges.length === 0 && (
        <EmptyState title="No events yet">
          <Text c="dimmed">Events appear here once Herald posts them to an endpoint. Send a test event from an endpoint’s page to see one.</Text>
        </EmptyState>
      )}
      {events && events.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Event</Table.Th>
                <Table.Th>Happened</Table.Th>
                <Table.Th>Deliveries</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {events.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>
                    <Anchor component={Link} to={`?event=${node._id}`}>
                      {node.type}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{formatDateTime(node.timestamp)}</Table.Td>
                  <Table.Td>{deliverySummary(node.deliveries)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={events.pageInfo.hasNextPage}
            totalCount={events.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(events.pageInfo.endCursor)}
          />
        </>
      )}
    </>
  );
}
