import { Badge, Button, Code, Group, Modal, NativeSelect, ScrollArea, SegmentedControl, Stack, Table, Text, TextInput, VisuallyHidden } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { Channel, SandboxOutboxQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { CHANNEL_LABELS, CHANNEL_OPTIONS, StatusBadge, asChannel } from '../logs/log-fields';
import { htmlToText, looksLikeHtml, textOf } from './message-text';

const PAGE_SIZE = 25;

const SandboxOutboxQueryDocument = graphql(`
  query SandboxOutbox($first: Int, $after: String, $channel: Channel, $recipient: String) {
    sandboxOutbox(first: $first, after: $after, channel: $channel, recipient: $recipient) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          channel
          recipient
          subject
          body
          attachments {
            filename
            contentType
            size
          }
          headers
          status
          error
          createdAt
        }
      }
    }
  }
`);

type OutboxRow = SandboxOutboxQuery['sandboxOutbox']['edges'][number]['node'];

/** The first line of a message's text, for the list. */
const previewOf = (m: OutboxRow) => textOf(m.body).split('\n').find((l) => l.trim()) ?? '';

/**
 * What sandbox delivery recorded instead of sending (DELIVERY_MODE=sandbox), newest first: each
 * message as it would have gone out, opened in a dialog as text (an email's HTML is never rendered).
 */
export default function OutboxPage() {
  const pages = useCursorPages();
  const [channel, setChannel] = useState<Channel | null>(null);
  const [recipientInput, setRecipientInput] = useState('');
  const [recipient, setRecipient] = useState<string | null>(null);
  const [open, setOpen] = useState<OutboxRow | null>(null);
  const [{ data, fetching, error }] = useQuery({
    query: SandboxOutboxQueryDocument,
    variables: { first: PAGE_SIZE, after: pages.after, channel, recipient },
  });
  const outbox = data?.sandboxOutbox;
  const errors = fieldErrors(error);
  const filtered = channel !== null || recipient !== null;

  const filterRecipient = (e: FormEvent) => {
    e.preventDefault();
    pages.reset();
    setRecipient(recipientInput.trim() || null);
  };
  const clear = () => {
    pages.reset();
    setChannel(null);
    setRecipient(null);
    setRecipientInput('');
  };

  return (
    <>
      <PageHeader title="Sandbox outbox" />
      <form onSubmit={filterRecipient}>
        <Group align="flex-end" mb="md">
          <NativeSelect
            label="Channel"
            data={CHANNEL_OPTIONS}
            value={channel ?? ''}
            onChange={(e) => {
              pages.reset();
              setChannel(asChannel(e.currentTarget.value));
            }}
          />
          <TextInput
            label="Recipient"
            description="An exact phone number or email"
            value={recipientInput}
            onChange={(e) => setRecipientInput(e.currentTarget.value)}
            error={errors.recipient}
          />
          <Button type="submit" variant="default">
            Filter by recipient
          </Button>
          {filtered && (
            <Button variant="default" onClick={clear}>
              Clear filters
            </Button>
          )}
        </Group>
      </form>
      {!errors.recipient && <ErrorAlert error={error} />}
      {!outbox && fetching && <PageLoader />}
      {outbox && outbox.edges.length === 0 && (
        <EmptyState title={filtered ? 'No captured messages match these filters' : 'The outbox is empty'}>
          {filtered ? (
            <Button variant="default" onClick={clear}>
              Clear filters
            </Button>
          ) : (
            <>
              <Text c="dimmed" ta="center">
                When Herald runs in sandbox delivery mode, the messages it would have sent are kept here instead. Send one to see it.
              </Text>
              <Button component={Link} to="/send">
                Send a message
              </Button>
            </>
          )}
        </EmptyState>
      )}
      {outbox && outbox.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Recorded</Table.Th>
                <Table.Th>Channel</Table.Th>
                <Table.Th>Recipient</Table.Th>
                <Table.Th>Message</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {outbox.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>{CHANNEL_LABELS[node.channel]}</Table.Td>
                  <Table.Td>{node.recipient}</Table.Td>
                  <Table.Td maw={380}>
                    {node.subject && (
                      <Text size="sm" fw={600} truncate="end">
                        {node.subject}
                      </Text>
                    )}
                    <Text size="sm" truncate="end">
                      {previewOf(node)}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={node.status} />
                  </Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="default" onClick={() => setOpen(node)} aria-label={`View message to ${node.recipient}`}>
                      View
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={outbox.pageInfo.hasNextPage}
            totalCount={outbox.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(outbox.pageInfo.endCursor)}
          />
        </>
      )}
      {open && <MessageDialog message={open} onClose={() => setOpen(null)} />}
    </>
  );
}

/** One captured message in full: its text (or an email's HTML source, as text), headers and attachments. */
function MessageDialog({ message, onClose }: { message: OutboxRow; onClose: () => void }) {
  const html = looksLikeHtml(message.body);
  const [view, setView] = useState<'text' | 'source'>('text');
  const headers = Object.entries(message.headers);
  return (
    <Modal opened onClose={onClose} size="lg" title={`${CHANNEL_LABELS[message.channel]} to ${message.recipient}`} closeButtonProps={{ 'aria-label': 'Close the message' }}>
      <Stack>
        <Group gap="xs">
          <StatusBadge status={message.status} />
          <Text size="sm">{formatDateTime(message.createdAt)}</Text>
        </Group>
        {message.error && (
          <Text size="sm" c="red.9">
            {message.error}
          </Text>
        )}
        {message.subject && (
          <div>
            <Text size="sm" fw={600}>
              Subject
            </Text>
            <Text>{message.subject}</Text>
          </div>
        )}
        <div>
          <Group justify="space-between" mb={4}>
            <Text size="sm" fw={600} id="outbox-body-label">
              Message
            </Text>
            {html && (
              <SegmentedControl
                size="xs"
                aria-label="Show the message as"
                value={view}
                onChange={(v) => setView(v as 'text' | 'source')}
                data={[
                  { value: 'text', label: 'Text' },
                  { value: 'source', label: 'HTML source' },
                ]}
              />
            )}
          </Group>
          <ScrollArea.Autosize mah={360} type="auto">
            <Code block aria-labelledby="outbox-body-label" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
              {html && view === 'text' ? htmlToText(message.body) : message.body}
            </Code>
          </ScrollArea.Autosize>
        </div>
        {headers.length > 0 && (
          <div>
            <Text size="sm" fw={600}>
              Headers Herald added
            </Text>
            {headers.map(([name, value]) => (
              <Text key={name} size="sm" style={{ overflowWrap: 'anywhere' }}>
                <strong>{name}:</strong> {String(value)}
              </Text>
            ))}
          </div>
        )}
        {message.attachments.length > 0 && (
          <div>
            <Text size="sm" fw={600}>
              Attachments (their content is not kept)
            </Text>
            {message.attachments.map((a, i) => (
              <Group key={`${i}-${a.filename}`} gap="xs">
                <Text size="sm">{a.filename}</Text>
                <Badge variant="outline" color="gray.8">
                  {a.contentType}
                </Badge>
                <Text size="sm">{formatNumber(a.size)} bytes</Text>
              </Group>
            ))}
          </div>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Close
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
