import { Alert, Button, Group, Modal, Stack, TextInput, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';
import type { ProviderRow } from './ProviderForm';

const ProviderSendTest = graphql(`
  mutation ProviderSendTest($id: ID!, $to: String!, $message: String, $subject: String) {
    testProvider(id: $id, to: $to, message: $message, subject: $subject) {
      ok
      error
      providerMessageId
      network
    }
  }
`);

/**
 * A test message through one provider alone (no failover, not charged, not logged), to a phone
 * number or an email address of the admin's choice; says what the provider answered.
 */
export function ProviderTestForm({ provider, onClose }: { provider: ProviderRow; onClose: () => void }) {
  const email = provider.channel === 'email';
  const [to, setTo] = useState('');
  const [message, setMessage] = useState('');
  const [subject, setSubject] = useState('');
  const [state, send] = useMutation(ProviderSendTest);
  const errors = fieldErrors(state.error);
  const result = state.data?.testProvider;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await send({ id: provider._id, to: to.trim(), message: message.trim() || null, subject: email ? subject.trim() || null : null });
  };

  return (
    <Modal opened onClose={onClose} title={`Send a test through ${provider.name}`} size="lg">
      <form onSubmit={submit} noValidate>
        <Stack>
          <ErrorAlert error={state.error} title="Not sent" />
          {result && !state.fetching && !state.error && (
            <Alert color={result.ok ? 'teal' : 'red'} role={result.ok ? 'status' : 'alert'}>
              {result.ok ? `Sent: ${result.providerMessageId ?? 'the provider gave no message id'}` : `Not sent: ${result.error ?? 'the provider gave no reason'}`}
            </Alert>
          )}
          <TextInput
            label={email ? 'Email address' : 'Phone number'}
            description={email ? 'Where the test email goes.' : 'In international format, such as +254712345678.'}
            type={email ? 'email' : 'tel'}
            autoComplete="off"
            value={to}
            onChange={(e) => setTo(e.currentTarget.value)}
            error={errors.to}
            withAsterisk
            aria-required
            data-autofocus
          />
          {email && <TextInput label="Subject (optional)" value={subject} onChange={(e) => setSubject(e.currentTarget.value)} error={errors.subject} />}
          <Textarea
            label="Message (optional)"
            description={`Empty: “A test message from Herald through ${provider.name}.”`}
            autosize
            minRows={2}
            maxRows={6}
            value={message}
            onChange={(e) => setMessage(e.currentTarget.value)}
            error={errors.message}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
            <Button type="submit" loading={state.fetching} disabled={!to.trim()}>
              Send test message
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
