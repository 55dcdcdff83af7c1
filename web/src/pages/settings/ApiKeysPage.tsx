import { Badge, Button, Code, Group, Modal, NativeSelect, Stack, Table, Text, TextInput, VisuallyHidden } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { Role } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ShownOnce } from './ShownOnce';

const PAGE_SIZE = 25;

const ApiKeysList = graphql(`
  query ApiKeysList($first: Int, $after: String) {
    apiKeys(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          name
          role
          prefix
          lastUsedAt
          revokedAt
          createdAt
        }
      }
    }
  }
`);

const ApiKeysCreate = graphql(`
  mutation ApiKeysCreate($input: CreateApiKeyInput!) {
    createApiKey(input: $input) {
      key
      apiKey {
        _id
        name
        role
        prefix
        lastUsedAt
        revokedAt
        createdAt
      }
    }
  }
`);

const ApiKeysRevoke = graphql(`
  mutation ApiKeysRevoke($id: ID!) {
    revokeApiKey(id: $id) {
      _id
      revokedAt
    }
  }
`);

const ApiKeysDelete = graphql(`
  mutation ApiKeysDelete($id: ID!) {
    deleteApiKey(id: $id) {
      message
    }
  }
`);

const ROLES: { value: Role; label: string }[] = [
  { value: 'user', label: 'User: reads contacts, campaigns and logs, and sends messages' },
  { value: 'admin', label: 'Admin: also changes contacts, groups, campaigns and webhooks' },
];

/**
 * The organization's API keys for server-to-server calls: a new key is shown once, right after it
 * is created (Herald keeps only its hash); a key is revoked (it stops working, the record stays) or
 * deleted.
 */
export default function ApiKeysPage() {
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: ApiKeysList, variables: { first: PAGE_SIZE, after: pages.after } });
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [revokeState, revoke] = useMutation(ApiKeysRevoke);
  const [deleteState, deleteKey] = useMutation(ApiKeysDelete);
  const keys = data?.apiKeys;

  return (
    <>
      <PageHeader title="API keys">
        <Button onClick={() => setCreating(true)}>New API key</Button>
      </PageHeader>
      <Text mb="md" maw={720}>
        Your systems call Herald’s API with a key, sent as the <Code>UNIFIED-API-Key</Code> header. A key acts with its role on contacts, groups,
        campaigns, sends and message logs, never on users, channel credentials or other keys.
      </Text>
      <ErrorAlert error={error ?? revokeState.error ?? deleteState.error} />
      {!keys && fetching && <PageLoader />}
      {keys && keys.edges.length === 0 && (
        <EmptyState title="No API keys yet">
          <Text c="dimmed">Create a key for each system that calls Herald, so you can revoke one without the others.</Text>
          <Button onClick={() => setCreating(true)}>New API key</Button>
        </EmptyState>
      )}
      {keys && keys.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Key begins</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {keys.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>{node.name}</Table.Td>
                  <Table.Td>
                    <Code>{node.prefix}…</Code>
                  </Table.Td>
                  <Table.Td>{node.role === 'admin' ? 'Admin' : 'User'}</Table.Td>
                  <Table.Td>
                    {node.revokedAt ? (
                      <Badge color="gray" variant="dot" miw="max-content" title={`Revoked ${formatDateTime(node.revokedAt)}`}>
                        Revoked
                      </Badge>
                    ) : (
                      <Badge color="green" variant="dot" miw="max-content">
                        Active
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{node.lastUsedAt ? formatDateTime(node.lastUsedAt) : 'Never'}</Table.Td>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" justify="flex-end" wrap="nowrap">
                      {!node.revokedAt && (
                        <Button
                          size="xs"
                          variant="default"
                          aria-label={`Revoke ${node.name}`}
                          onClick={() => {
                            if (confirm(`Revoke the key "${node.name}"? Requests with it are refused at once.`)) void revoke({ id: node._id });
                          }}
                        >
                          Revoke
                        </Button>
                      )}
                      <Button
                        size="xs"
                        color="red.9"
                        variant="outline"
                        aria-label={`Delete ${node.name}`}
                        onClick={() => {
                          if (confirm(`Delete the key "${node.name}" for good? Requests with it are refused.`)) void deleteKey({ id: node._id });
                        }}
                      >
                        Delete
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={keys.pageInfo.hasNextPage}
            totalCount={keys.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(keys.pageInfo.endCursor)}
          />
        </>
      )}
      {creating && (
        <NewKeyForm
          onClose={() => setCreating(false)}
          onCreated={(name, key) => {
            setCreating(false);
            setCreated({ name, key });
          }}
        />
      )}
      {created && <ShownOnce title={`Your new key “${created.name}”`} label="API key" value={created.key} buttonLabel="Copy key" onClose={() => setCreated(null)} />}
    </>
  );
}

/** Names a new key and picks its role; `onCreated` gets the key's value, which no later query returns. */
function NewKeyForm({ onClose, onCreated }: { onClose: () => void; onCreated: (name: string, key: string) => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('user');
  const [state, create] = useMutation(ApiKeysCreate);
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await create({ input: { name, role } });
    if (result.data) onCreated(result.data.createApiKey.apiKey.name, result.data.createApiKey.key);
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title="New API key">
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} description="The system that will use it, such as “Billing service”." data-autofocus />
          <NativeSelect label="Role" data={ROLES} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)} error={errors.role} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              Create API key
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
