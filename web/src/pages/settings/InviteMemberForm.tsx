import { Alert, Button, Group, Modal, NativeSelect, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { InviteMemberMutation, Role } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { CopyValue } from './CopyValue';

const InviteMember = graphql(`
  mutation InviteMember($input: InviteMemberInput!) {
    inviteMember(input: $input) {
      invitation {
        _id
        email
        role
        invitedBy
        createdAt
        expiresAt
      }
      link
      emailed
      emailError
      sandbox
    }
  }
`);

const ROLES: { value: Role; label: string }[] = [
  { value: 'user', label: 'User: sends messages and reads the organization’s data' },
  { value: 'admin', label: 'Admin: also manages users, keys and settings' },
];

type Invited = InviteMemberMutation['inviteMember'];

/**
 * Invites a person by email with a role; they choose their own password on the link's page. The
 * link is then shown with a copy button, and whether Herald emailed it (and why not).
 */
export function InviteMemberForm({ onClose }: { onClose: () => void }) {
  const [form, setForm] = useState({ email: '', role: 'user' as Role, firstName: '', lastName: '' });
  const [invited, setInvited] = useState<Invited | null>(null);
  const [state, invite] = useMutation(InviteMember);
  const errors = fieldErrors(state.error);
  const set = (field: 'email' | 'firstName' | 'lastName') => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const input = { email: form.email, role: form.role, firstName: form.firstName.trim() || undefined, lastName: form.lastName.trim() || undefined };
    const result = await invite({ input });
    if (result.data) setInvited(result.data.inviteMember);
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={invited ? 'Invitation ready' : 'Invite member'} size="lg" closeOnClickOutside={!invited}>
      {invited ? (
        <InvitationLink invited={invited} onClose={onClose} />
      ) : (
        <form onSubmit={submit}>
          <Stack>
            {!Object.keys(errors).length && <ErrorAlert error={state.error} title="Could not invite" />}
            <TextInput
              label="Email"
              type="email"
              required
              autoComplete="off"
              value={form.email}
              onChange={set('email')}
              error={errors.email}
              description="They log in with it, and choose their own password."
              data-autofocus
            />
            <NativeSelect label="Role" data={ROLES} value={form.role} onChange={(e) => setForm({ ...form, role: e.currentTarget.value as Role })} error={errors.role} />
            <Group grow align="flex-start">
              <TextInput label="First name (optional)" value={form.firstName} onChange={set('firstName')} error={errors.firstName} />
              <TextInput label="Last name (optional)" value={form.lastName} onChange={set('lastName')} error={errors.lastName} />
            </Group>
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" loading={state.fetching}>
                Send invitation
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

/** The link to hand over, and what happened to the email. */
function InvitationLink({ invited, onClose }: { invited: Invited; onClose: () => void }) {
  const { invitation } = invited;
  return (
    <Stack>
      {invited.emailed && invited.sandbox && (
        <Alert color="indigo" title="Sandbox mode: not delivered">
          The invitation email to {invitation.email} is in the sandbox outbox, not in their inbox. Copy the link and send it to them yourself.
        </Alert>
      )}
      {invited.emailed && !invited.sandbox && (
        <Alert color="green" title="Invitation emailed">
          Herald emailed the link to {invitation.email}. You can also copy it below.
        </Alert>
      )}
      {!invited.emailed && (
        <Alert color="yellow" title="Not emailed">
          {invited.emailError ?? 'The email could not be sent.'} Copy the link and send it to {invitation.email} yourself.
        </Alert>
      )}
      <CopyValue label="Invitation link" value={invited.link} buttonLabel="Copy link">
        It works once, until {formatDateTime(invitation.expiresAt)}. Whoever opens it can join as {invitation.role === 'admin' ? 'an admin' : 'a user'}: share it only with{' '}
        {invitation.email}.
      </CopyValue>
      <Group justify="flex-end">
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
}
