import { Badge, Button, Divider, Group, Modal, NativeSelect, PasswordInput, Stack, Table, Text, TextInput, VisuallyHidden } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { Role, TeamUsersQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { useMe } from '../../lib/me';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { PendingInvitations } from './PendingInvitations';
import { InviteMemberForm } from './InviteMemberForm';
import { RequireTwoFactorCard } from './RequireTwoFactorCard';

const PAGE_SIZE = 25;

const TeamUsers = graphql(`
  query TeamUsers($first: Int, $after: String) {
    users(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          firstName
          lastName
          email
          countryCode
          phoneNumber
          role
          isActive
          createdAt
        }
      }
    }
  }
`);

const TeamCreateUser = graphql(`
  mutation TeamCreateUser($input: CreateUserInput!) {
    createUser(input: $input) {
      _id
      firstName
      lastName
      email
      countryCode
      phoneNumber
      role
      isActive
      createdAt
    }
  }
`);

const TeamUpdateUser = graphql(`
  mutation TeamUpdateUser($id: ID!, $input: UpdateUserInput!) {
    updateUser(id: $id, input: $input) {
      _id
      firstName
      lastName
      phoneNumber
      role
    }
  }
`);

const TeamSetPassword = graphql(`
  mutation TeamSetPassword($id: ID!, $input: ChangePasswordInput!) {
    changePassword(id: $id, input: $input) {
      _id
    }
  }
`);

const TeamDeactivateUser = graphql(`
  mutation TeamDeactivateUser($id: ID!) {
    deactivateUser(id: $id) {
      _id
      isActive
    }
  }
`);

const TeamReactivateUser = graphql(`
  mutation TeamReactivateUser($id: ID!) {
    reactivateUser(id: $id) {
      _id
      isActive
    }
  }
`);

const TeamDeleteUser = graphql(`
  mutation TeamDeleteUser($id: ID!) {
    deleteUser(id: $id) {
      message
    }
  }
`);

type UserRow = TeamUsersQuery['users']['edges'][number]['node'];

const ROLES: { value: Role; label: string }[] = [
  { value: 'user', label: 'User: sends messages and reads the organization’s data' },
  { value: 'admin', label: 'Admin: also manages users, keys and settings' },
];

const fullName = (u: Pick<UserRow, 'firstName' | 'lastName'>) => `${u.firstName} ${u.lastName}`;

/**
 * The organization's users: invite one (or add one with a password), change a role, deactivate,
 * reactivate or delete; and the invitations not yet accepted.
 */
export default function TeamPage() {
  const pages = useCursorPages();
  const { me } = useMe();
  const [{ data, fetching, error }] = useQuery({ query: TeamUsers, variables: { first: PAGE_SIZE, after: pages.after } });
  const [editing, setEditing] = useState<UserRow | 'new' | 'invite' | null>(null);
  const [deactivateState, deactivate] = useMutation(TeamDeactivateUser);
  const [reactivateState, reactivate] = useMutation(TeamReactivateUser);
  const [deleteState, deleteUser] = useMutation(TeamDeleteUser);
  const users = data?.users;

  return (
    <>
      <PageHeader title="Team">
        <Button variant="default" onClick={() => setEditing('new')}>
          New user
        </Button>
        <Button onClick={() => setEditing('invite')}>Invite member</Button>
      </PageHeader>
      <ErrorAlert error={error ?? deactivateState.error ?? reactivateState.error ?? deleteState.error} />
      <RequireTwoFactorCard />
      {!users && fetching && <PageLoader />}
      {users && users.edges.length === 0 && (
        <EmptyState title="No users yet">
          <Text c="dimmed">Invite the people who work with you, as users or admins.</Text>
          <Button onClick={() => setEditing('invite')}>Invite member</Button>
        </EmptyState>
      )}
      {users && users.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Email</Table.Th>
                <Table.Th>Phone</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Added</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {users.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>
                    {fullName(node)}
                    {node._id === me?._id && (
                      <Text span size="sm" c="dimmed">
                        {' '}
                        (you)
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{node.email}</Table.Td>
                  <Table.Td>
                    {node.countryCode} {node.phoneNumber}
                  </Table.Td>
                  <Table.Td>{node.role === 'admin' ? 'Admin' : 'User'}</Table.Td>
                  <Table.Td>
                    {node.isActive ? (
                      <Badge color="green" variant="dot" miw="max-content">
                        Active
                      </Badge>
                    ) : (
                      <Badge color="gray" variant="dot" miw="max-content">
                        Deactivated
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" justify="flex-end" wrap="nowrap">
                      <Button size="xs" variant="default" aria-label={`Edit ${fullName(node)}`} onClick={() => setEditing(node)}>
                        Edit
                      </Button>
                      {/* An admin can not deactivate or delete themself (the server refuses it too). */}
                      {node._id !== me?._id && (
                        <>
                          {node.isActive ? (
                            <Button
                              size="xs"
                              variant="default"
                              aria-label={`Deactivate ${fullName(node)}`}
                              onClick={() => {
                                if (confirm(`Deactivate ${fullName(node)}? They can no longer log in, and their sessions end.`)) void deactivate({ id: node._id });
                              }}
                            >
                              Deactivate
                            </Button>
                          ) : (
                            <Button size="xs" variant="default" aria-label={`Reactivate ${fullName(node)}`} onClick={() => void reactivate({ id: node._id })}>
                              Reactivate
                            </Button>
                          )}
                          <Button
                            size="xs"
                            color="red.9"
                            variant="outline"
                            aria-label={`Delete ${fullName(node)}`}
                            onClick={() => {
                              if (confirm(`Delete ${fullName(node)} for good?`)) void deleteUser({ id: node._id });
                            }}
                          >
                            Delete
                          </Button>
                        </>
                      )}
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={users.pageInfo.hasNextPage}
            totalCount={users.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(users.pageInfo.endCursor)}
          />
        </>
      )}
      <PendingInvitations />
      {editing === 'invite' && <InviteMemberForm onClose={() => setEditing(null)} />}
      {editing === 'new' && <NewUserForm onClose={() => setEditing(null)} />}
      {editing && editing !== 'new' && editing !== 'invite' && <EditUserForm user={editing} onClose={() => setEditing(null)} />}
    </>
  );
}

/** Adds a user to the organization, active at once, with the password they will log in with. */
function NewUserForm({ onClose }: { onClose: () => void }) {
  const [form, setForm] = useState({ firstName: '', lastName: '', email: '', password: '', countryCode: '', phoneNumber: '', role: 'user' as Role });
  const [state, create] = useMutation(TeamCreateUser);
  const errors = fieldErrors(state.error);
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await create({ input: form });
    if (!result.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title="New user" size="lg">
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <Group grow align="flex-start">
            <TextInput label="First name" required value={form.firstName} onChange={set('firstName')} error={errors.firstName} data-autofocus />
            <TextInput label="Last name" required value={form.lastName} onChange={set('lastName')} error={errors.lastName} />
          </Group>
          <TextInput label="Email" type="email" required autoComplete="off" value={form.email} onChange={set('email')} error={errors.email} description="They log in with it." />
          <PasswordInput
            label="Password"
            required
            autoComplete="new-password"
            value={form.password}
            onChange={set('password')}
            error={errors.password}
            description="Their first password: tell it to them safely; they can change it on their profile."
          />
          <Group grow align="flex-start">
            <TextInput label="Country code" required placeholder="+254" value={form.countryCode} onChange={set('countryCode')} error={errors.countryCode} />
            <TextInput label="Phone number" required type="tel" value={form.phoneNumber} onChange={set('phoneNumber')} error={errors.phoneNumber} />
          </Group>
          <NativeSelect label="Role" data={ROLES} value={form.role} onChange={(e) => setForm({ ...form, role: e.currentTarget.value as Role })} error={errors.role} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              Create user
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Changes a user's name, phone number or role, and (a second form) sets a new password for them. */
function EditUserForm({ user, onClose }: { user: UserRow; onClose: () => void }) {
  const [form, setForm] = useState({ firstName: user.firstName, lastName: user.lastName, phoneNumber: user.phoneNumber, role: user.role });
  const [password, setPassword] = useState('');
  const [passwordSet, setPasswordSet] = useState(false);
  const [state, update] = useMutation(TeamUpdateUser);
  const [passwordState, setUserPassword] = useMutation(TeamSetPassword);
  const { me } = useMe();
  const isSelf = me?._id === user._id;
  const errors = fieldErrors(state.error);
  const passwordErrors = fieldErrors(passwordState.error);
  const set = (field: 'firstName' | 'lastName' | 'phoneNumber') => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A member who joined by invitation has no phone number yet: an unchanged empty one is not sent.
    const result = await update({ id: user._id, input: { ...form, phoneNumber: form.phoneNumber === user.phoneNumber ? undefined : form.phoneNumber } });
    if (!result.error) onClose();
  };
  const submitPassword = async (e: FormEvent) => {
    e.preventDefault();
    const result = await setUserPassword({ id: user._id, input: { newPassword: password } });
    if (!result.error) {
      setPassword('');
      setPasswordSet(true);
    }
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={`Edit ${fullName(user)}`} size="lg">
      <Stack>
        <form onSubmit={submit}>
          <Stack>
            {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
            <Text size="sm">{user.email}</Text>
            <Group grow align="flex-start">
              <TextInput label="First name" required value={form.firstName} onChange={set('firstName')} error={errors.firstName} data-autofocus />
              <TextInput label="Last name" required value={form.lastName} onChange={set('lastName')} error={errors.lastName} />
            </Group>
            <TextInput
              label="Phone number"
              required={user.phoneNumber !== ''}
              type="tel"
              value={form.phoneNumber}
              onChange={set('phoneNumber')}
              error={errors.phoneNumber}
              description={`Without the country code (${user.countryCode}), which does not change.`}
            />
            <NativeSelect
              label="Role"
              data={ROLES}
              value={form.role}
              onChange={(e) => setForm({ ...form, role: e.currentTarget.value as Role })}
              error={errors.role}
              description="The new role applies at once, to sessions already open too."
            />
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={state.fetching}>
                Save user
              </Button>
            </Group>
          </Stack>
        </form>
        {isSelf && (
          <Text size="sm" c="dimmed">
            Change your own password on your profile.
          </Text>
        )}
        {!isSelf && (
          <>
            <Divider label="Password" labelPosition="left" />
            <form onSubmit={submitPassword}>
              <Stack>
                {!Object.keys(passwordErrors).length && <ErrorAlert error={passwordState.error} />}
                {passwordSet && (
                  <Text size="sm" role="status">
                    Password set. Their earlier sessions have ended.
                  </Text>
                )}
                <PasswordInput
                  label="New password"
                  required
                  autoComplete="new-password"
                  value={password}
                  onChange={(e) => setPassword(e.currentTarget.value)}
                  error={passwordErrors.newPassword}
                  description="For a user who forgot theirs: their open sessions end."
                />
                <Group justify="flex-end">
                  <Button type="submit" variant="default" loading={passwordState.fetching}>
                    Set password
                  </Button>
                </Group>
              </Stack>
            </form>
          </>
        )}
      </Stack>
    </Modal>
  );
}
