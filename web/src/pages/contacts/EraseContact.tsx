import { Alert, Button, Group, List, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';

const EraseContactDocument = graphql(`
  mutation EraseContact($id: ID!) {
    eraseContact(id: $id) {
      _id
      status
    }
  }
`);

/**
 * Erasing a contact (admins): a dialog that says what erasure does and cannot undo, and asks for
 * the contact's name typed again before it erases. The contacts list then says the erasure is under
 * way.
 */
export function EraseContact({ contactId, name }: { contactId: string; name: string }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState('');
  const [state, erase] = useMutation(EraseContactDocument);
  const navigate = useNavigate();
  const confirmed = typed.trim() === name.trim();
  const submit = async () => {
    const result = await erase({ id: contactId });
    if (!result.error) navigate('/contacts', { replace: true, state: { notice: `${name} is being erased: their addresses are replaced in every log, and their email address stays suppressed.` } });
  };
  return (
    <>
      <Button color="red.9" variant="outline" onClick={() => setOpen(true)}>
        Erase person
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} closeButtonProps={{ 'aria-label': 'Close' }} title={`Erase ${name}?`} size="lg">
        <Stack>
          <Text size="sm">Erasure is for a person who asked to be forgotten. It cannot be undone:</Text>
          <List size="sm" spacing={4}>
            <List.Item>the contact is deleted, with its groups, attributes and consent;</List.Item>
            <List.Item>
              its email address and phone number are replaced by a token in every message log, receipt, event, webhook payload, import and audit entry, so your
              figures still add up;
            </List.Item>
            <List.Item>its email address stays on the suppression list (as the token): campaigns never write to it again.</List.Item>
          </List>
          <Alert color="indigo" variant="light" title="Download first if they asked for their data">
            Once erased, the person's data can no longer be gathered: use Download data before erasing.
          </Alert>
          <TextInput label={`Type ${name} to confirm`} value={typed} onChange={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
          <ErrorAlert error={state.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color="red.9" disabled={!confirmed} loading={state.fetching} onClick={() => void submit()}>
              Erase
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
