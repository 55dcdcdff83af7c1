import { Button, Group, Modal, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import type { ContactFieldsFragment } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { AttributesEditor } from './AttributesEditor';
import { changeOf, rowsOf, shownValue, typeOf, type AttributeRow } from './attributes';
import { UpdateContact } from './documents';
import { errorFor } from './fields';

const TYPE_LABELS = { text: 'Text', number: 'Number', boolean: 'True or false' } as const;

/** The contact's attributes as a table; admins edit them in a dialog. */
export function ContactAttributes({ contact, isAdmin }: { contact: ContactFieldsFragment; isAdmin: boolean }) {
  const [editing, setEditing] = useState(false);
  const entries = Object.entries(contact.attributes);
  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        <Group justify="space-between">
          <Title order={3} size="h4">
            Attributes
          </Title>
          {isAdmin && (
            <Button size="xs" variant="default" onClick={() => setEditing(true)}>
              Edit attributes
            </Button>
          )}
        </Group>
        {entries.length === 0 ? (
          <Text c="dimmed">
            No attributes. {isAdmin ? 'Add some (such as plan or seats) to personalise messages with {{ contact.attributes.plan }}.' : ''}
          </Text>
        ) : (
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Key</Table.Th>
                <Table.Th>Value</Table.Th>
                <Table.Th>Type</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {entries.map(([key, value]) => (
                <Table.Tr key={key}>
                  <Table.Td ff="monospace">{key}</Table.Td>
                  <Table.Td>{shownValue(value)}</Table.Td>
                  <Table.Td>{TYPE_LABELS[typeOf(value)]}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
      {editing && <AttributesForm contact={contact} onClose={() => setEditing(false)} />}
    </Paper>
  );
}

/** Sends the rows as the merge the API makes: changed keys set, removed keys as null. */
function AttributesForm({ contact, onClose }: { contact: ContactFieldsFragment; onClose: () => void }) {
  const [rows, setRows] = useState<AttributeRow[]>(() => rowsOf(contact.attributes));
  const [state, update] = useMutation(UpdateContact);
  const errors = fieldErrors(state.error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const attributes = changeOf(contact.attributes, rows);
    if (!attributes) return onClose();
    const result = await update({ id: contact._id, input: { attributes } });
    if (!result.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close dialog' }} title={`Attributes of ${contact.name}`} size="xl">
      <form onSubmit={submit}>
        <Stack>
          {!errorFor(errors, 'attributes') && <ErrorAlert error={state.error} />}
          <AttributesEditor rows={rows} onChange={setRows} existing error={errorFor(errors, 'attributes')} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              Save attributes
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
