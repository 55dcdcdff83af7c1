import { Anchor, Badge, Button, Group, NativeSelect, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { WebhookEndpointFieldsFragment, WebhookEventType } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ShownOnce } from './ShownOnce';
import { ATTEMPTS_POLL_MS, WebhookAttemptsTable } from './WebhookAttemptsTable';
import { WebhookEndpointForm } from './WebhookEndpointForm';
import { EVENT_TYPES } from './webhook-types';

const PAGE_SIZE = 25;

const WebhookEndpointDetailQuery = graphql(`
  query WebhookEndpointDetail($id: ID!, $first: Int, $after: String) {
    webhookEndpoint(id: $id) {
      ...WebhookEndpointFields
    }
    webhookAttempts(endpointId: $id, first: $first, after: $after) {
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
  }
`);

const WebhookSetEnabled = graphql(`
  mutation WebhookSetEnabled($id: ID!, $enabled: Boolean!) {
    updateWebhookEndpoint(id: $id, input: { enabled: $enabled }) {
      ...WebhookEndpointFields
    }
  }
`);

const WebhookSendTest = graphql(`
  mutation WebhookSendTest($id: ID!, $eventType: WebhookEventType) {
    sendTestWebhook(id: $id, eventType: $eventType) {
      eventId
    }
  }
`);

const WebhookRotateSecret = graphql(`
  mutation WebhookRotateSecret($id: ID!) {
    rotateWebhookSecret(id: $id) {
      secret
      previousSecretExpiresAt
    }
  }
`);

const WebhookDeleteEndpoint = graphql(`
  mutation WebhookDeleteEndpoint($id: ID!) {
    deleteWebhookEndpoint(id: $id) {
      message
    }
  }
`);

/** Enabled or disabled, as a badge; the reason Herald disabled it, if it did, is beside it. */
export function EndpointStatus({ endpoint }: { endpoint: Pick<WebhookEndpointFieldsFragment, 'enabled' | 'failuresInARow'> }) {
  if (!endpoint.enabled)
    return (
      <Badge color="gray" variant="dot" miw="max-content">
        Disabled
      </Badge>
    );
  return endpoint.failuresInARow > 0 ? (
    <Badge color="orange" variant="dot" miw="max-content">
      Failing
    </Badge>
  ) : (
    <Badge color="green" variant="dot" miw="max-content">
      Enabled
    </Badge>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="sm" fw={500}>
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </div>
  );
}

/**
 * One endpoint: its summary and actions (edit, enable or disable, rotate the secret, delete), a test
 * event, and its delivery attempts, fetched again every few seconds while shown.
 */
export function WebhookEndpointDetail({ id }: { id: string }) {
  const pages = useCursorPages();
  const navigate = useNavigate();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: WebhookEndpointDetailQuery, variables: { id, first: PAGE_SIZE, after: pages.after } });
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<{ value: string; previousExpires: string } | null>(null);
  const [testType, setTestType] = useState('');
  const [queuedEvent, setQueuedEvent] = useState<string | null>(null);
  const [enableState, setEnabled] = useMutation(WebhookSetEnabled);
  const [testState, sendTest] = useMutation(WebhookSendTest);
  const [rotateState, rotate] = useMutation(WebhookRotateSecret);
  const [deleteState, deleteEndpoint] = useMutation(WebhookDeleteEndpoint);

  useEffect(() => {
    const timer = setInterval(() => reexecute({ requestPolicy: 'network-only' }), ATTEMPTS_POLL_MS);
    return () => clearInterval(timer);
  }, [reexecute]);

  const endpoint = data?.webhookEndpoint;
  const attempts = data?.webhookAttempts;
  const mutationError = enableState.error ?? testState.error ?? rotateState.error ?? deleteState.error;

  const submitTest = async (e: FormEvent) => {
    e.preventDefault();
    setQueuedEvent(null);
    const result = await sendTest({ id, eventType: (testType || null) as WebhookEventType | null });
    if (result.data) setQueuedEvent(result.data.sendTestWebhook.eventId);
  };
  const rotateSecret = async () => {
    if (!confirm('Rotate the signing secret? The current one keeps signing beside the new one for 24 hours.')) return;
    const result = await rotate({ id });
    const rotated = result.data?.rotateWebhookSecret;
    if (rotated) setSecret({ value: rotated.secret, previousExpires: rotated.previousSecretExpiresAt });
  };
  const remove = async () => {
    if (!endpoint || !confirm(`Delete the endpoint ${endpoint.url}? Its pending deliveries are dropped.`)) return;
    const result = await deleteEndpoint({ id });
    if (!result.error) navigate('/settings/webhooks', { replace: true });
  };

  return (
    <Stack>
      <Anchor component={Link} to="/settings/webhooks">
        ← All webhook endpoints
      </Anchor>
      <ErrorAlert error={error ?? mutationError} />
      {!endpoint && fetching && <PageLoader />}
      {endpoint && (
        <Paper withBorder p="lg" radius="md">
          <Stack>
            <Group justify="space-between" align="flex-start">
              <div>
                <Title order={3} style={{ wordBreak: 'break-all' }}>
                  {endpoint.url}
                </Title>
                {endpoint.description && <Text>{endpoint.description}</Text>}
              </div>
              <Group gap="xs">
                <Button variant="default" onClick={() => setEditing(true)}>
                  Edit endpoint
                </Button>
                <Button variant="default" loading={enableState.fetching} onClick={() => void setEnabled({ id, enabled: !endpoint.enabled })}>
                  {endpoint.enabled ? 'Disable endpoint' : 'Enable endpoint'}
                </Button>
                <Button variant="default" loading={rotateState.fetching} onClick={() => void rotateSecret()}>
                  Rotate secret
                </Button>
                <Button color="red.9" variant="outline" loading={deleteState.fetching} onClick={() => void remove()}>
                  Delete endpoint
                </Button>
              </Group>
            </Group>
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              <Fact label="Status">
                <Group gap="xs">
                  <EndpointStatus endpoint={endpoint} />
                  {endpoint.disabledReason && <Text size="sm">{endpoint.disabledReason}</Text>}
                </Group>
              </Fact>
              <Fact label="Event types">{endpoint.eventTypes.length ? endpoint.eventTypes.join(', ') : 'Every type'}</Fact>
              <Fact label="Last success">{endpoint.lastSuccessAt ? formatDateTime(endpoint.lastSuccessAt) : 'Never'}</Fact>
              <Fact label="Failures in a row">{formatNumber(endpoint.failuresInARow)}</Fact>
              <Fact label="Last failure">{endpoint.lastFailureAt ? formatDateTime(endpoint.lastFailureAt) : 'Never'}</Fact>
              <Fact label="Failing since">{endpoint.failingSince ? formatDateTime(endpoint.failingSince) : '—'}</Fact>
              <Fact label="Created">{formatDateTime(endpoint.createdAt)}</Fact>
            </SimpleGrid>
          </Stack>
        </Paper>
      )}
      {endpoint && (
        <Paper withBorder p="lg" radius="md" component="form" onSubmit={submitTest} aria-label="Test event">
          <Stack>
            <Title order={3}>Test event</Title>
            <Text size="sm">Posts an example event, its data marked as a test, to this endpoint alone.</Text>
            <Group align="flex-end">
              <NativeSelect
                label="Test event type"
                data={[{ value: '', label: 'The endpoint’s first type' }, ...EVENT_TYPES.map((t) => ({ value: t.value, label: t.wire }))]}
                value={testType}
                onChange={(e) => setTestType(e.currentTarget.value)}
              />
              <Button type="submit" loading={testState.fetching}>
                Send test event
              </Button>
            </Group>
            {queuedEvent && (
              <Text size="sm" role="status">
                Test event queued; its attempt shows below within seconds.
              </Text>
            )}
          </Stack>
        </Paper>
      )}
      {attempts && (
        <section aria-labelledby="endpoint-attempts">
          <Group justify="space-between" mb="xs">
            <Title order={3} id="endpoint-attempts">
              Attempts
            </Title>
            <Button variant="default" size="xs" onClick={() => reexecute({ requestPolicy: 'network-only' })}>
              Refresh attempts
            </Button>
          </Group>
          <WebhookAttemptsTable attempts={attempts.edges.map((e) => e.node)} show="event" />
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
      {editing && endpoint && <WebhookEndpointForm endpoint={endpoint} onClose={() => setEditing(false)} />}
      {secret && (
        <ShownOnce title="New signing secret" label="Signing secret" value={secret.value} buttonLabel="Copy secret" onClose={() => setSecret(null)}>
          The previous secret keeps signing beside it until {formatDateTime(secret.previousExpires)}: switch your receiver to the new one before then.
        </ShownOnce>
      )}
    </Stack>
  );
}
