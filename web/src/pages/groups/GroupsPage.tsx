import { Button, ColorSwatch, Group, Modal, Stack, Table, Text, TextInput, Textarea, VisuallyHidden } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { GroupsQuery } from '../../gql/graphql';
import { GROUP_COLORS, swatchOf } from '../../lib/colors';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ColorField } from './ColorField';

const PAGE_SIZE = 25;

const GroupsQueryDocument = graphql(`
  query Groups($first: Int, $after: String) {
    groups(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          name
          description
          color
          contactCount
          createdAt
        }
      }
    }
  }
`);

const CreateGroup = graphql(`
  mutation CreateGroup($input: CreateGroupInput!) {
    createGroup(input: $input) {
      _id
      name
      description
      color
      contactCount
      createdAt
    }
  }
`);

const UpdateGroup = graphql(`
  mutation UpdateGroup($id: ID!, $input: UpdateGroupInput!) {
    updateGroup(id: $id, input: $input) {
      _id
      name
      description
      color
    }
  }
`);

const DeleteGroup = graphql(`
  mutation DeleteGroup($id: ID!) {
    deleteGroup(id: $id) {
      message
    }
  }
`);

type GroupRow = GroupsQuery['groups']['edges'][number]['node'];

export default function GroupsPage() {
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: GroupsQueryDocument, variables: { first: PAGE_SIZE, after: pages.after } });
  const [editing, setEditing] = useState<GroupRow | 'new' | null>(null);
  const [deleteState, deleteGroup] = useMutation(DeleteGroup);
  const groups = data?.groups;

  return (
    <>
      <PageHeader title="Groups">
        <Button onClick={() => setEditing('new')}>New group</Button>
      </PageHeader>
      <ErrorAlert error={error ?? deleteState.error} />
      {!groups && fetching && <PageLoader />}
      {groups && groups.edges.length === 0 && (
        <EmptyState title="No groups yet">
          <Text c="dimmed">Groups gather contacts you message together. Create one, then add contacts to it.</Text>
          <Button onClick={() => setEditing('new')}>New group</Button>
        </EmptyState>
      )}
      {groups && groups.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Description</Table.Th>
                <Table.Th ta="right">Contacts</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {groups.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>
                    <Group gap="xs">
                      <ColorSwatch color={swatchOf(node.color)} size={14} aria-hidden />
                      <Link to={`/contacts?group=${node._id}`}>{node.name}</Link>
                    </Group>
                  </Table.Td>
                  <Table.Td>{node.description}</Table.Td>
                  <Table.Td ta="right">{formatNumber(node.contactCount)}</Table.Td>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" justify="flex-end">
                      <Button size="xs" variant="default" onClick={() => setEditing(node)} aria-label={`Edit ${node.name}`}>
                        Edit
                      </Button>
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        aria-label={`Delete ${node.name}`}
                        onClick={() => {
                          if (confirm(`Delete the group "${node.name}"? Its contacts stay.`)) void deleteGroup({ id: node._id });
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
            hasNextPage={groups.pageInfo.hasNextPage}
            totalCount={groups.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(groups.pageInfo.endCursor)}
          />
        </>
      )}
      {editing && <GroupForm group={editing === 'new' ? null : editing} onClose={() => setEditing(null)} />}
    </>
  );
}

/** Create (no `group`) or edit a group, in a dialog; the server's field errors land on their fields. */
function GroupForm({ group, onClose }: { group: GroupRow | null; onClose: () => void }) {
  const [name, setName] = useState(group?.name ?? '');
  const [description, setDescription] = useState(group?.description ?? '');
  const [color, setColor] = useState(group?.color ?? GROUP_COLORS[5]!);
  const [createState, create] = useMutation(CreateGroup);
  const [updateState, update] = useMutation(UpdateGroup);
  const state = group ? updateState : createState;
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const input = { name, description: description || null, color };
    const result = group ? await update({ id: group._id, input }) : await create({ input });
    if (!result.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} title={group ? `Edit ${group.name}` : 'New group'}>
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} data-autofocus />
          <Textarea label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} error={errors.description} />
          <ColorField value={color} onChange={setColor} error={errors.color} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              {group ? 'Save group' : 'Create group'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
