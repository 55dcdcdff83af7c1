import { Anchor, Group, Loader, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { ContactFieldsFragment, ContactMessagesQuery } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { CHANNEL_LABELS, StatusBadge } from '../logs/log-fields';

/** The newest logs shown per address; the message logs page, filtered by the address, has them all. */
const SHOWN = 10;

const ContactMessagesDocument = graphql(`
  query ContactMessages($recipient: String!, $first: Int) {
    messageLogs(first: $first, filter: { recipient: $recipient }) {
      totalCount
      edges {
        node {
          _id
          channel
          createdAt
          recipients {
            recipient
            status
            deliveredAt
            readAt
            openedAt
            clickedAt
            bouncedAt
            bounceType
          }
        }
      }
    }
  }
`);

type LogNode = ContactMessagesQuery['messageLogs']['edges'][number]['node'];

interface Sent {
  log: LogNode;
  /** The contact's own line of the log (a log holds a batch of up to 100 recipients). */
  recipient: LogNode['recipients'][number];
}

/** The logs of one address, and the contact's line in each: as a send stores it (an email in lower case, a phone in E.164). */
function useMessagesTo(address: string | null | undefined) {
  const [{ data, fetching, error }] = useQuery({ query: ContactMessagesDocument, variables: { recipient: address ?? '', first: SHOWN }, pause: !address });
  const logs = data?.messageLogs;
  const stored = address?.toLowerCase();
  const sent: Sent[] = [];
  for (const { node } of logs?.edges ?? []) {
    const recipient = node.recipients.find((r) => r.recipient.toLowerCase() === stored);
    if (recipient) sent.push({ log: node, recipient });
  }
  return { sent, total: logs?.totalCount ?? 0, loaded: !!logs, fetching, error };
}

/**
 * What was sent to a contact, newest first: each message log that has one of its addresses, with
 * the contact's status and receipts in it, linking to the log. A WhatsApp read counts as opened.
 */
export function ContactMessages({ contact }: { contact: ContactFieldsFragment }) {
  const byEmail = useMessagesTo(contact.email);
  const byPhone = useMessagesTo(contact.phone);
  const both = !!contact.email && !!contact.phone;
  const sent = [...byEmail.sent, ...byPhone.sent].sort((a, b) => b.log.createdAt.localeCompare(a.log.createdAt));
  const loading = (contact.email && !byEmail.loaded) || (contact.phone && !byPhone.loaded);
  const addresses = [
    { address: contact.email, total: byEmail.total },
    { address: contact.phone, total: byPhone.total },
  ].filter((a): a is { address: string; total: number } => !!a.address);

  return (
    <Paper withBorder p="md" radius="md" mt="md" component="section" aria-labelledby="contact-messages">
      <Stack gap="sm">
        <Title order={3} size="h4" id="contact-messages">
          Messages
        </Title>
        <ErrorAlert error={byEmail.error ?? byPhone.error} title="The messages could not be shown" />
        {loading && (byEmail.fetching || byPhone.fetching) && <Loader size="sm" role="status" aria-label="Loading messages" />}
        {!loading && sent.length === 0 && <Text c="dimmed">Nothing has been sent to {addresses.map((a) => a.address).join(' or ')} yet.</Text>}
        {sent.length > 0 && (
          <Table.ScrollContainer minWidth={760}>
            <Table striped>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Sent</Table.Th>
                  <Table.Th>Channel</Table.Th>
                  {both && <Table.Th>Address</Table.Th>}
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Delivered</Table.Th>
                  <Table.Th>Opened</Table.Th>
                  <Table.Th>Clicked</Table.Th>
                  <Table.Th>Bounced</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {sent.map(({ log, recipient: r }) => (
                  <Table.Tr key={log._id}>
                    <Table.Td style={{ whiteSpace: 'nowrap' }}>
                      <Anchor size="sm" component={Link} to={`/message-logs/${log._id}`} aria-label={`${CHANNEL_LABELS[log.channel]} log of ${formatDateTime(log.createdAt)}`}>
                        {formatDateTime(log.createdAt)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{CHANNEL_LABELS[log.channel]}</Table.Td>
                    {both && <Table.Td>{r.recipient}</Table.Td>}
                    <Table.Td>
                      <StatusBadge status={r.status} />
                    </Table.Td>
                    <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.deliveredAt)}</Table.Td>
                    <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.openedAt ?? r.readAt)}</Table.Td>
                    <Table.Td style={{ whiteSpace: 'nowrap' }}>{formatDateTime(r.clickedAt)}</Table.Td>
                    <Table.Td style={{ whiteSpace: 'nowrap' }}>
                      {formatDateTime(r.bouncedAt)}
                      {r.bounceType && ` (${r.bounceType})`}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {addresses.some((a) => a.total > 0) && (
          <Group gap="md">
            {addresses
              .filter((a) => a.total > 0)
              .map((a) => (
                <Anchor key={a.address} size="sm" component={Link} to={`/message-logs?recipient=${encodeURIComponent(a.address)}`}>
                  {a.total > SHOWN ? `All ${formatNumber(a.total)} logs of ${a.address}` : `Logs of ${a.address}`}
                </Anchor>
              ))}
          </Group>
        )}
      </Stack>
    </Paper>
  );
}
