import { Anchor, Group, Paper, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { graphql } from '../gql';

const DeliveryModeQuery = graphql(`
  query DeliveryMode {
    me {
      _id
      organization {
        _id
        deliveryMode
      }
    }
  }
`);

/**
 * Said on every signed-in page while the platform delivers in sandbox mode: a send that reports
 * success there reached no one, which a marketer would otherwise learn only from the outbox.
 */
export function SandboxBanner() {
  const [{ data }] = useQuery({ query: DeliveryModeQuery });
  if (data?.me.organization.deliveryMode !== 'sandbox') return null;
  return (
    <Paper bg="yellow.1" c="dark.9" px="md" py={6} mb="md" radius="sm" role="region" aria-label="Sandbox mode">
      <Group gap="xs" justify="space-between" wrap="wrap">
        <Text size="sm">
          <Text span fw={700} inherit>
            Sandbox mode:
          </Text>{' '}
          messages are recorded in the Sandbox outbox, not sent.
        </Text>
        <Anchor component={Link} to="/outbox" size="sm" c="dark.9" underline="always">
          Open the outbox
        </Anchor>
      </Group>
    </Paper>
  );
}
