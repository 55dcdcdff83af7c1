import { Anchor, Button, Container, Group, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, Navigate, useParams } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { InvitationPreviewQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { setToken } from '../../lib/session';

const InvitationPreview = graphql(`
  query InvitationPreview($token: String!) {
    invitation(token: $token) {
      organization {
        _id
        name
      }
      email
      role
      firstName
      lastName
      expiresAt
    }
  }
`);

const AcceptInvitation = graphql(`
  mutation AcceptInvitation($token: String!, $input: AcceptInvitationInput!) {
    acceptInvitation(token: $token, input: $input) {
      token
    }
  }
`);

type Invitation = InvitationPreviewQuery['invitation'];

/**
 * The page of an invitation's link (`/invite/:token`), for someone not yet on Herald: it names the
 * organization and the address, asks for a password (and names), and signs the new member in. A
 * link that was used, expired or revoked says so, with the way to log in.
 */
export default function AcceptInvitationPage() {
  const { token = '' } = useParams();
  const [joined, setJoined] = useState(false);
  // Once accepted, the link is used: asking again would only say so.
  const [{ data, error, fetching }] = useQuery({ query: InvitationPreview, variables: { token }, pause: joined });
  if (joined) return <Navigate to="/" replace />;
  const invitation = data?.invitation;

  return (
    <Container component="main" size={520} py="xl">
      <Title order={1} ta="center" mb="md">
        {invitation ? `Join ${invitation.organization.name} on Herald` : 'Your invitation to Herald'}
      </Title>
      {!invitation && fetching && <PageLoader />}
      {!invitation && error && (
        <Paper withBorder p="lg" radius="md">
          <Stack>
            <ErrorAlert error={error} title="This invitation can not be used" />
            <Text size="sm" ta="center">
              Already a member?{' '}
              <Anchor component={Link} to="/login">
                Log in
              </Anchor>
            </Text>
          </Stack>
        </Paper>
      )}
      {invitation && (
        <AcceptForm
          token={token}
          invitation={invitation}
          onJoined={(session) => {
            setJoined(true);
            setToken(session);
          }}
        />
      )}
    </Container>
  );
}

function AcceptForm({ token, invitation, onJoined }: { token: string; invitation: Invitation; onJoined: (session: string) => void }) {
  const [form, setForm] = useState({ firstName: invitation.firstName ?? '', lastName: invitation.lastName ?? '', password: '' });
  const [{ fetching, error }, accept] = useMutation(AcceptInvitation);
  const errors = fieldErrors(error);
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await accept({ token, input: form });
    const session = result.data?.acceptInvitation.token;
    if (session) onJoined(session);
  };
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit} aria-label="Accept the invitation">
      <Stack>
        <Text>
          You are invited to join <strong>{invitation.organization.name}</strong> as {invitation.role === 'admin' ? 'an admin' : 'a user'}. Choose a password to
          finish; the invitation works until {formatDateTime(invitation.expiresAt)}.
        </Text>
        {!Object.keys(errors).length && <ErrorAlert error={error} title="Could not accept the invitation" />}
        <TextInput label="Email" value={invitation.email} readOnly variant="filled" autoComplete="username" description="You log in with it; the invitation is for this address." />
        <Group grow align="flex-start">
          <TextInput label="First name" required autoComplete="given-name" value={form.firstName} onChange={set('firstName')} error={errors.firstName} />
          <TextInput label="Last name" required autoComplete="family-name" value={form.lastName} onChange={set('lastName')} error={errors.lastName} />
        </Group>
        <PasswordInput
          label="Password"
          description="At least 8 characters"
          autoComplete="new-password"
          required
          value={form.password}
          onChange={set('password')}
          error={errors.password}
        />
        <Button type="submit" loading={fetching}>
          Accept invitation
        </Button>
      </Stack>
    </Paper>
  );
}
