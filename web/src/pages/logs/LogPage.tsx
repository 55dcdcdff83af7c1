import { Anchor, Badge, Code, Group, NativeSelect, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { MessageLogQuery } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { textOf } from '../outbox/message-text';
import { CHANNEL_LABELS, StatusBadge } from './log-fields';

const MessageLogQueryDocument = graphql(`
  query MessageLog($id: ID!) {
    messageLog(id: $id) {
      _id
      channel
      senderUserId
      network
      messagePreview
      messageLength
      cost
      campaignId
      test
      createdAt
      updatedAt
      recipients {
        recipient
        status
        error
        providerMessageId
        deliveredAt
        readAt
        openedAt
        clickedAt
        deliveryError
        bouncedAt
        bounceType
        bounceReason
        complainedAt
      }
      events {
        _id
        type
        recipient
        position
        counted
        data
        occurredAt
      }
    }
  }
`);

const LogSender = graphql(`
  query LogSender($id: ID!) {
    user(id: $id) {
      _id
      firstName
      lastName
    }
  }
`);

type Log = MessageLogQuery['messageLog'];

/** One message log: what was sent, and for each recipient its outcome and what happened after. */
export default function LogPage() {
  const { id = '' } = useParams();
  const [{ data, fetching, error }] = useQuery({ query: MessageLogQueryDocument, variables: { id } });
  const log = data?.messageLog;

  return (
    <>
      <PageHeader title={log ? `${CHANNEL_LABELS[log.channel]} log of ${formatDateTime(log.createdAt)}` : 'Message log'}>
        <Anchor component={Link} to="/message-logs">
          All message logs
        </Anchor>
      </PageHeader>
      <ErrorAlert error={error} title="This log could not be shown" />
      {!log && fetching && <PageLoader />}
      {log && (
        <Stack gap="lg">
          <Summary log={log} />
          <Recipients log={log} />
          <Events log={log} />
        </Stack>
      )}
    </>
  );
}

/** A label above its value, for the summary's grid. */
function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="sm" fw={600}>
        {label}
      </Text>
      <Text component="div">{children}</Text>
    </div>
  );
}

/** Who sent a log: "You", or (admins read any user) the user's name; a user-role caller reads only itself. */
function Sender({ id }: { id: string }) {
  const { me, isAdmin } = useMe();
  const self = me?._id === id;
  const [{ data }] = useQuery({ query: LogSender, variables: { id }, pause: self || !isAdmin });
  if (self) return <>You</>;
  if (data) return <>{`${data.user.firstName} ${data.user.lastName}`}</>;
  return <>Another user of the organization</>;
}

function Summary({ log }: { log: Log }) {
  return (
    <Paper withBorder p="md" radius="md">
      <SimpleGrid cols={{ base: 1, sm: 2, md: 4 }}>
        <Field label="Channel">{CHANNEL_LABELS[log.channel]}</Field>
        <Field label="Sent">{formatDateTime(log.createdAt)}</Field>
        <Field label="Last changed">{formatDateTime(log.updatedAt)}</Field>
        <Field label="Carried by">{log.network ?? 'Not settled yet'}</Field>
        <Field label="Sent by">{log.senderUserId ? <Sender id={log.senderUserId} /> : 'An API key'}</Field>
        <Field label="Cost">{formatNumber(log.cost)} credits</Field>
        <Field label="Length">{formatNumber(log.messageLength)} characters</Field>
        <Field label="Campaign">
          {log.campaignId ? (
            <Group gap="xs">
              <Anchor component={Link} to={`/campaigns/${log.campaignId}`}>
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
        </Field>
      </SimpleGrid>
      <Text size="sm" fw={600} mt="md">
        Message (first 100 characters)
      </Text>
      <Text style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>{textOf(log.messagePreview)}</Text>
    </Paper>
  );
}

/** A recipient's bounce: when, which kind (`hard` suppressed the address) and the mail server's reason. */
function Bounce({ recipient: r }: { recipient: Log['recipients'][number] }) {
  if (!r.bouncedAt) return <>—</>;
  return (
    <>
      <Text inherit style={{ whiteSpace: 'nowrap' }}>
        {formatDateTime(r.bouncedAt)}
        {r.bounceType && ` (${r.bounceType})`}
      </Text>
      {r.bounceReason && (
        <Text inherit style={{ overflowWrap: 'anywhere' }}>
          {r.bounceReason}
        </Text>
      )}
    </>
  );
}

/** Every recipient of the log (at most 100: a log is one batch), with its outcome and receipts. */
function Recipients({ log }: { log: Log }) {
  // Only email bounces or draws spam reports: other channels keep their table narrow.
  const email = log.channel === 'email' || log.recipients.some((r) => r.bouncedAt || r.complainedAt);
  return (
    <section aria-labelledby="log-recipients">
      <Title order={3} size="h4" mb="xs" id="log-recipients">
        Recipients ({formatNumber(log.recipients.length)})
      </Title>
      <Table.ScrollContainer minWidth={900}>
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Recipient</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Provider message id</Table.Th>
              <Table.Th>Delivered</Table.Th>
              <Table.Th>Read</Table.Th>
              <Table.Th>Opened</Table.Th>
              <Table.Th>Clicked</Table.Th>
              {email && <Table.Th>Bounced</Table.Th>}
              {email && <Table.Th>Reported as spam</Table.Th>}
              <Table.Th>Error</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {log.recipients.map((r, i) => (
              <Table.Tr key={`${i}-${r.recipient}`}>
                <Table.Td>{r.recipient}</Table.Td>
                <Table.Td>
                  <StatusBadge status={r.status} />
                </Table.Td>
                <Table.Td>{r.providerMessageId ? <Code>{r.providerMessageId}</Code> : '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.deliveredAt)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.readAt)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.openedAt)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.clickedAt)}</Table.Td>
                {email && (
                  <Table.Td miw={200}>
                    <Bounce recipient={r} />
                  </Table.Td>
                )}
                {email && <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.complainedAt)}</Table.Td>}
                <Table.Td>{[r.error, r.deliveryError].filter(Boolean).join('; ') || '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </section>
  );
}

const EVENT_LABELS: Record<string, string> = {
  'message.delivered': 'Delivered',
  'message.opened': 'Opened',
  'message.clicked': 'Clicked',
  'message.failed': 'Failed',
  'message.bounced': 'Bounced',
  'message.complained': 'Reported as spam',
};

/** What implied an event (`data.impliedBy`, a receipt's kind): a read implies delivery, a click an open. */
const IMPLIED_BY: Record<string, string> = { delivered: 'the delivery', read: 'the read', opened: 'the open', clicked: 'the click', failed: 'the failure' };

/** An event's details in words: a click's link, a failure's or bounce's reason, a WhatsApp read, a spam report's kind, what implied it. */
function eventDetails(data: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof data.url === 'string') parts.push(data.url);
  if (typeof data.error === 'string') parts.push(data.error);
  if (typeof data.bounceType === 'string') parts.push(`${data.bounceType} bounce`);
  if (typeof data.reason === 'string') parts.push(data.reason);
  if (typeof data.feedbackType === 'string') parts.push(`feedback type: ${data.feedbackType}`);
  if (data.read === true) parts.push('read on WhatsApp');
  if (typeof data.impliedBy === 'string') parts.push(`implied by ${IMPLIED_BY[data.impliedBy] ?? data.impliedBy}`);
  return parts.join('; ');
}

/** What happened to the recipients after the send, in order, for all of them or the one chosen. */
function Events({ log }: { log: Log }) {
  const [recipient, setRecipient] = useState('');
  const addresses = [...new Set(log.events.map((e) => e.recipient))];
  const events = recipient ? log.events.filter((e) => e.recipient === recipient) : log.events;
  return (
    <section aria-labelledby="log-events">
      <Group justify="space-between" align="flex-end" mb="xs">
        <Title order={3} size="h4" id="log-events">
          Events
        </Title>
        {addresses.length > 1 && (
          <NativeSelect
            label="Events of"
            data={[{ value: '', label: 'Every recipient' }, ...addresses.map((a) => ({ value: a, label: a }))]}
            value={recipient}
            onChange={(e) => setRecipient(e.currentTarget.value)}
          />
        )}
      </Group>
      {events.length === 0 ? (
        <EmptyState title="No events yet">
          <Text c="dimmed">Deliveries, reads, opens, clicks, bounces and spam reports appear here as they are reported (email reports no deliveries).</Text>
        </EmptyState>
      ) : (
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>When</Table.Th>
              <Table.Th>Event</Table.Th>
              <Table.Th>Recipient</Table.Th>
              <Table.Th>Details</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {events.map((e) => (
              <Table.Tr key={e._id}>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(e.occurredAt)}</Table.Td>
                <Table.Td>
                  <Group gap="xs">
                    {EVENT_LABELS[e.type] ?? e.type}
                    {!e.counted && (
                      <Badge variant="outline" color="gray.8" title="A known scanner or prefetcher: recorded, never counted">
                        Not counted
                      </Badge>
                    )}
                  </Group>
                </Table.Td>
                <Table.Td>{e.recipient}</Table.Td>
                <Table.Td style={{ overflowWrap: 'anywhere' }}>{eventDetails(e.data) || '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </section>
  );
}
