import { Button, Stack, Table, Text, Title, VisuallyHidden } from '@mantine/core';
import { useId } from 'react';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import { formatDateTime } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';

const PAGE_SIZE = 25;

const TeamInvitations = graphql(`
  query TeamInvitations($first: Int, $after: String) {
    invitations(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          email
          role
          firstName
          lastName
          invitedBy
          createdAt
          expiresAt
        }
      }
    }
  }
`);

const TeamRevokeInvitation = graphql(`
  mutation TeamRevokeInvitation($id: ID!) {
    revokeInvitation(id: $id) {
      message
    }
  }
`);

/** The invitations not yet accepted, each with a button to withdraw it; nothing when there are none. */
export function PendingInvitations() {
  const pages = useCursorPages();
  const headingId = useId();
  const [{ data, error }] = useQuery({ query: TeamInvitations, variables: { first: PAGE_SIZE, after: pages.after } });
  const [revokeState, revoke] = useMutation(TeamRevokeInvitation);
  const invitations = data?.invitations;
  if (!error && (!invitations || (invitations.totalCount === 0 && !pages.after))) return null;

  return (
    <Stack component="section" aria-labelledby={headingId} mt="xl" gap="sm">
      <Title order={3} id={headingId}>
        Pending invitations
      </Title>
      <ErrorAlert error={error ?? revokeState.error} />
      {invitations && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Email</Table.Th>
                <Table.Th>Name</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Invited by</Table.Th>
                <Table.Th>Sent</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {invitations.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>{node.email}</Table.Td>
                  <Table.Td>{[node.firstName, node.lastName].filter(Boolean).join(' ') || <Text span c="dimmed">—</Text>}</Table.Td>
                  <Table.Td>{node.role === 'admin' ? 'Admin' : 'User'}</Table.Td>
                  <Table.Td>{node.invitedBy}</Table.Td>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>{formatDateTime(node.expiresAt)}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      color="red.9"
                      variant="outline"
                      aria-label={`Revoke invitation to ${node.email}`}
                      onClick={() => {
                        if (confirm(`Revoke the invitation to ${node.email}? Its link stops working.`)) void revoke({ id: node._id });
                      }}
                    >
                      Revoke
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {/* Rarely more than a page: no second pager under the team's unless there is one. */}
          {(invitations.pageInfo.hasNextPage || pages.history.length > 0) && (
            <CursorPager
              history={pages.history}
              hasNextPage={invitations.pageInfo.hasNextPage}
              totalCount={invitations.totalCount}
              onPrevious={pages.previous}
              onNext={() => pages.next(invitations.pageInfo.endCursor)}
            />
          )}
        </>
      )}
    </Stack>
  );
}
