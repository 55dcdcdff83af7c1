import { Badge, Button, CloseButton, ColorSwatch, Group, Paper, Select, Stack, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import type { ContactFieldsFragment } from '../../gql/graphql';
import { swatchOf } from '../../lib/colors';
import { fieldErrors } from '../../lib/errors';
import { GroupOptions, UpdateContact } from './documents';

/**
 * The groups a contact belongs to, each a link to the list of its members; admins add the contact
 * to another group or take it out of one (the API replaces the contact's `groups` with the new list).
 */
export function ContactGroups({ contact, isAdmin }: { contact: ContactFieldsFragment; isAdmin: boolean }) {
  const [{ data }] = useQuery({ query: GroupOptions, pause: !isAdmin });
  const [state, update] = useMutation(UpdateContact);
  const [adding, setAdding] = useState<string | null>(null);
  const errors = fieldErrors(state.error);
  const options = (data?.groups.edges ?? []).filter(({ node }) => !contact.groupIds.includes(node._id)).map(({ node }) => ({ value: node._id, label: node.name }));

  const setGroups = (groups: string[]) => update({ id: contact._id, input: { groups } });
  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (!adding) return;
    const result = await setGroups([...contact.groupIds, adding]);
    if (!result.error) setAdding(null);
  };

  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        <Title order={3} size="h4">
          Groups
        </Title>
        {!errors.groups && <ErrorAlert error={state.error} />}
        {contact.groups.length === 0 ? (
          <Text c="dimmed">{isAdmin ? 'In no group yet. Add the contact to one below.' : 'In no group.'}</Text>
        ) : (
          <Group gap="xs">
            {contact.groups.map((g) => (
              <Badge
                key={g._id}
                variant="default"
                tt="none"
                size="lg"
                leftSection={<ColorSwatch color={swatchOf(g.color)} size={10} aria-hidden />}
                rightSection={
                  isAdmin && (
                    <CloseButton
                      size="xs"
                      aria-label={`Remove from ${g.name}`}
                      onClick={() => void setGroups(contact.groupIds.filter((id) => id !== g._id))}
                    />
                  )
                }
              >
                <Link to={`/contacts?group=${g._id}`}>{g.name}</Link>
              </Badge>
            ))}
          </Group>
        )}
        {isAdmin && (
          <form onSubmit={add}>
            <Group align="flex-end">
              <Select
                label="Group to add"
                data={options}
                value={adding}
                onChange={setAdding}
                searchable
                nothingFoundMessage="No other group"
                placeholder={options.length ? 'Pick a group' : 'In every group already'}
                error={errors.groups}
              />
              <Button type="submit" variant="default" loading={state.fetching} disabled={!adding}>
                Add to group
              </Button>
            </Group>
          </form>
        )}
      </Stack>
    </Paper>
  );
}
