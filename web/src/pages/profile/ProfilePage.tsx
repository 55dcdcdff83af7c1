import { Button, Group, Paper, PasswordInput, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { ProfileMeQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { setToken } from '../../lib/session';
import { TwoFactorSection } from './TwoFactorSection';

const ProfileMe = graphql(`
  query ProfileMe {
    me {
      _id
      firstName
      lastName
      email
      countryCode
      phoneNumber
      role
      createdAt
      organization {
        _id
        name
      }
    }
  }
`);

const ProfileUpdate = graphql(`
  mutation ProfileUpdate($id: ID!, $input: UpdateUserInput!) {
    updateUser(id: $id, input: $input) {
      _id
      firstName
      lastName
      phoneNumber
    }
  }
`);

const ProfileChangePassword = graphql(`
  mutation ProfileChangePassword($id: ID!, $input: ChangePasswordInput!) {
    changePassword(id: $id, input: $input) {
      _id
    }
  }
`);

/** Signs in again after a password change, which ends every session opened before it. */
const ProfileLogin = graphql(`
  mutation ProfileLogin($input: LoginInput!) {
    login(input: $input) {
      token
    }
  }
`);

type Me = ProfileMeQuery['me'];

/** The signed-in user's own details, password and two-factor authentication. */
export default function ProfilePage() {
  const [{ data, fetching, error }] = useQuery({ query: ProfileMe });
  const me = data?.me;
  return (
    <>
      <PageHeader title="Profile" />
      <ErrorAlert error={error} />
      {!me && fetching && <PageLoader />}
      {me && (
        <Stack gap="lg" maw={720}>
          <DetailsForm me={me} />
          <PasswordForm me={me} />
          <TwoFactorSection />
        </Stack>
      )}
    </>
  );
}

/**
 * Name and phone number. The server lets only admins change a user's details (`updateUser`), so a
 * user-role member sees them read-only, with whom to ask.
 */
function DetailsForm({ me }: { me: Me }) {
  const isAdmin = me.role === 'admin';
  const [form, setForm] = useState({ firstName: me.firstName, lastName: me.lastName, phoneNumber: me.phoneNumber });
  const [saved, setSaved] = useState(false);
  const [state, update] = useMutation(ProfileUpdate);
  const errors = fieldErrors(state.error);
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const result = await update({ id: me._id, input: form });
    setSaved(!result.error);
  };
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit} aria-label="Your details">
      <Stack>
        <Title order={3}>Your details</Title>
        <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="xs">
          <Text size="sm">
            <Text span fw={500}>
              Email:
            </Text>{' '}
            {me.email}
          </Text>
          <Text size="sm">
            <Text span fw={500}>
              Role:
            </Text>{' '}
            {isAdmin ? 'Admin' : 'User'} of {me.organization.name}
          </Text>
          <Text size="sm">
            <Text span fw={500}>
              Member since:
            </Text>{' '}
            {formatDateTime(me.createdAt)}
          </Text>
        </SimpleGrid>
        {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label="First name" required={isAdmin} readOnly={!isAdmin} value={form.firstName} onChange={set('firstName')} error={errors.firstName} />
          <TextInput label="Last name" required={isAdmin} readOnly={!isAdmin} value={form.lastName} onChange={set('lastName')} error={errors.lastName} />
          <TextInput
            label="Phone number"
            required={isAdmin}
            type="tel"
            readOnly={!isAdmin}
            value={form.phoneNumber}
            onChange={set('phoneNumber')}
            error={errors.phoneNumber}
            description={`Without the country code (${me.countryCode}).`}
          />
        </SimpleGrid>
        {isAdmin ? (
          <Group justify="flex-end">
            {saved && (
              <Text size="sm" role="status">
                Saved.
              </Text>
            )}
            <Button type="submit" loading={state.fetching}>
              Save details
            </Button>
          </Group>
        ) : (
          <Text size="sm" c="dimmed">
            An admin of your organization can change your name and phone number.
          </Text>
        )}
      </Stack>
    </Paper>
  );
}

/**
 * Changes the caller's password (the current one is required). Herald then ends every session
 * opened before the change, this one included, so the page signs in again with the new password.
 */
function PasswordForm({ me }: { me: Me }) {
  const [oldPassword, setOldPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const [changed, setChanged] = useState(false);
  const [state, changePassword] = useMutation(ProfileChangePassword);
  const [loginState, login] = useMutation(ProfileLogin);
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setChanged(false);
    const result = await changePassword({ id: me._id, input: { oldPassword, newPassword } });
    if (result.error) return;
    const session = await login({ input: { email: me.email, password: newPassword } });
    setOldPassword('');
    setNewPassword('');
    setChanged(true);
    // A new token gives the console a new client; failing that (or when two-factor authentication
    // wants a code), the login page asks for the new password.
    setToken(session.data?.login.token ?? null);
  };
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit} aria-label="Change password">
      <Stack>
        <Title order={3}>Password</Title>
        {!Object.keys(errors).length && <ErrorAlert error={state.error ?? loginState.error} />}
        {changed && (
          <Text size="sm" role="status">
            Password changed. Your other sessions have ended: log in there again with the new password.
          </Text>
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <PasswordInput label="Current password" required autoComplete="current-password" value={oldPassword} onChange={(e) => setOldPassword(e.currentTarget.value)} error={errors.oldPassword} />
          <PasswordInput label="New password" required autoComplete="new-password" value={newPassword} onChange={(e) => setNewPassword(e.currentTarget.value)} error={errors.newPassword} />
        </SimpleGrid>
        <Group justify="flex-end">
          <Button type="submit" loading={state.fetching || loginState.fetching}>
            Change password
          </Button>
        </Group>
      </Stack>
    </Paper>
  );
}
