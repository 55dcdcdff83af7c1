import { Button, ColorSwatch, Group, Paper, Stack, Table, Text, Title, VisuallyHidden } from '@mantine/core';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import type { ContactFieldsFragment, SubscriptionStatus } from '../../gql/graphql';
import { formatDateTime } from '../../lib/format';
import { CHANNELS } from './fields';
import { UpdateContact } from './documents';

/** How a contact left a channel (`ChannelSubscription.source`), in words. */
const SOURCES: Record<string, string> = {
  link: 'the unsubscribe page',
  'one-click': 'one-click unsubscribe (mail client)',
  reply: 'a STOP reply',
  api: 'an admin (API or console)',
  import: 'an import',
  console: 'the console',
};

/**
 * The contact's consent per channel: whether it receives campaigns there, since when it left and
 * how. Admins change it (the API records their change with source `api`, and keeps the first time
 * and source when a contact leaves again).
 */
export function ContactConsent({ contact, isAdmin }: { contact: ContactFieldsFragment; isAdmin: boolean }) {
  const [state, update] = useMutation(UpdateContact);
  const set = (channel: string, status: SubscriptionStatus) => update({ id: contact._id, input: { subscriptions: { [channel]: status } } });

  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        <Title order={3} size="h4">
          Consent
        </Title>
        <Text size="sm" c="dimmed">
          Campaigns and send-to-all skip a channel the contact left; ad hoc messages sent to the contact's address still go out (they are transactional).
        </Text>
        <ErrorAlert error={state.error} />
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Channel</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Left</Table.Th>
              {isAdmin && (
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              )}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {CHANNELS.map(({ value, label }) => {
              const sub = contact.subscriptions[value];
              const subscribed = sub.status === 'subscribed';
              return (
                <Table.Tr key={value}>
                  <Table.Th scope="row">{label}</Table.Th>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <ColorSwatch color={`var(--mantine-color-${subscribed ? 'green' : 'gray'}-6)`} size={10} aria-hidden />
                      <Text size="sm" fw={500}>
                        {subscribed ? 'Subscribed' : 'Unsubscribed'}
                      </Text>
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    {sub.unsubscribedAt ? (
                      <>
                        <Text size="sm">{formatDateTime(sub.unsubscribedAt)}</Text>
                        <Text size="xs" c="dimmed">
                          {sub.source ? `By ${SOURCES[sub.source] ?? sub.source}` : ''}
                        </Text>
                      </>
                    ) : (
                      '—'
                    )}
                  </Table.Td>
                  {isAdmin && (
                    <Table.Td ta="right">
                      <Button
                        size="xs"
                        variant="default"
                        loading={state.fetching}
                        aria-label={subscribed ? `Unsubscribe from ${label}` : `Resubscribe to ${label}`}
                        onClick={() => void set(value, subscribed ? 'unsubscribed' : 'subscribed')}
                      >
                        {subscribed ? 'Unsubscribe' : 'Resubscribe'}
                      </Button>
                    </Table.Td>
                  )}
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Stack>
    </Paper>
  );
}
