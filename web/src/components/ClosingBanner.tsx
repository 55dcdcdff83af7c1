import { Anchor, Group, Paper, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { graphql } from '../gql';
import { formatDateTime } from '../lib/format';

const ClosingQuery = graphql(`
  query OrganizationClosing {
    me {
      _id
      role
      organization {
        _id
        closure {
          _id
          status
          deleteAfter
        }
      }
    }
  }
`);

/**
 * Said on every signed-in page while the organization is closing: on `deleteAfter` everything it
 * holds is deleted, and admins may still cancel from the Privacy page.
 */
export function ClosingBanner() {
  const [{ data }] = useQuery({ query: ClosingQuery });
  const closure = data?.me.organization.closure;
  if (!closure) return null;
  return (
    <Paper bg="red.1" c="dark.9" px="md" py={6} mb="md" radius="sm" role="region" aria-label="Organization closing">
      <Group gap="xs" justify="space-between" wrap="wrap">
        <Text size="sm">
          <Text span fw={700} inherit>
            This organization is closing:
          </Text>{' '}
          {closure.status === 'deleting'
            ? 'its data is being deleted now.'
            : `its members, contacts, campaigns, logs and settings will be deleted on ${formatDateTime(closure.deleteAfter)}.`}
        </Text>
        {data.me.role === 'admin' && closure.status === 'scheduled' && (
          <Anchor component={Link} to="/settings/privacy" size="sm" c="dark.9" underline="always">
            Cancel closing
          </Anchor>
        )}
      </Group>
    </Paper>
  );
}
