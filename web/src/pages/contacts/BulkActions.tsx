import { Alert, Button, Checkbox, Group, Menu, Modal, Radio, Select, Stack, Text, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { Channel, ContactBulkAction, ContactBulkInput, ContactFilter } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatNumber } from '../../lib/format';
import { GroupOptions } from './documents';
import { CHANNELS } from './fields';

const BulkContactsDocument = graphql(`
  mutation BulkContacts($input: ContactBulkInput!) {
    bulkContacts(input: $input) {
      action
      count
    }
  }
`);

/** The actions in the menu's order, each with what its dialog asks for. */
const ACTIONS: { value: ContactBulkAction; label: string; needs?: 'group' | 'tag' | 'channels' }[] = [
  { value: 'addToGroup', label: 'Add to group', needs: 'group' },
  { value: 'removeFromGroup', label: 'Remove from group', needs: 'group' },
  { value: 'addTag', label: 'Add tag', needs: 'tag' },
  { value: 'removeTag', label: 'Remove tag', needs: 'tag' },
  { value: 'unsubscribe', label: 'Unsubscribe', needs: 'channels' },
  { value: 'resubscribe', label: 'Resubscribe', needs: 'channels' },
  { value: 'delete', label: 'Delete' },
];

export const contactsCount = (n: number) => `${formatNumber(n)} contact${n === 1 ? '' : 's'}`;

/** What an action is about to do, or did: `done` words it in the past, with the count the API answered. */
function sentence(action: ContactBulkAction, n: number, detail: string, done: boolean): string {
  const who = contactsCount(n);
  switch (action) {
    case 'addToGroup':
      return done ? `${who} added to ${detail}` : `Add ${who} to ${detail}`;
    case 'removeFromGroup':
      return done ? `${who} removed from ${detail}` : `Remove ${who} from ${detail}`;
    case 'addTag':
      return done ? `${who} tagged ${detail}` : `Tag ${who} ${detail}`;
    case 'removeTag':
      return done ? `Tag ${detail} removed from ${who}` : `Remove tag ${detail} from ${who}`;
    case 'unsubscribe':
      return done ? `${who} unsubscribed from ${detail}` : `Unsubscribe ${who} from ${detail}`;
    case 'resubscribe':
      return done ? `${who} resubscribed to ${detail}` : `Resubscribe ${who} to ${detail}`;
    case 'delete':
      return done ? `${who} deleted` : `Delete ${who}`;
  }
}

interface Props {
  /** The contacts chosen in the list, by id. */
  selected: readonly string[];
  /** The list's filter, and how many contacts it matches (the other scope an action can take). */
  filter: ContactFilter;
  matching: number;
  /** Called with what was done, once the API answered. */
  onDone: (summary: string) => void;
}

/** The "Bulk actions" menu and the dialog that confirms one, naming the action and how many contacts it applies to. */
export function BulkActions({ selected, filter, matching, onDone }: Props) {
  const [action, setAction] = useState<ContactBulkAction | null>(null);
  return (
    <>
      <Menu position="bottom-end">
        <Menu.Target>
          <Button variant="default">Bulk actions</Button>
        </Menu.Target>
        <Menu.Dropdown>
          <Menu.Label>{selected.length ? `${contactsCount(selected.length)} selected` : 'All contacts matching the filters'}</Menu.Label>
          {ACTIONS.map((a) => (
            <Menu.Item key={a.value} color={a.value === 'delete' ? 'red.9' : undefined} onClick={() => setAction(a.value)}>
              {a.label}…
            </Menu.Item>
          ))}
        </Menu.Dropdown>
      </Menu>
      {action && (
        <BulkDialog
          action={action}
          selected={selected}
          filter={filter}
          matching={matching}
          onClose={() => setAction(null)}
          onDone={(summary) => {
            setAction(null);
            onDone(summary);
          }}
        />
      )}
    </>
  );
}

interface DialogProps extends Omit<Props, 'onDone'> {
  action: ContactBulkAction;
  onClose: () => void;
  onDone: (summary: string) => void;
}

function BulkDialog({ action, selected, filter, matching, onClose, onDone }: DialogProps) {
  const spec = ACTIONS.find((a) => a.value === action)!;
  const [scope, setScope] = useState<'selected' | 'matching'>(selected.length ? 'selected' : 'matching');
  const [group, setGroup] = useState<string | null>(null);
  const [tag, setTag] = useState('');
  const [channels, setChannels] = useState<Channel[]>(CHANNELS.map((c) => c.value));
  const [{ data: groupData }] = useQuery({ query: GroupOptions, pause: spec.needs !== 'group' });
  const [state, run] = useMutation(BulkContactsDocument);
  const errors = fieldErrors(state.error);

  const groupOptions = (groupData?.groups.edges ?? []).map(({ node }) => ({ value: node._id, label: node.name }));
  const count = scope === 'selected' ? selected.length : matching;
  const detail =
    spec.needs === 'group'
      ? (groupOptions.find((g) => g.value === group)?.label ?? 'the group')
      : spec.needs === 'tag'
        ? tag.trim() || 'the tag'
        : spec.needs === 'channels'
          ? CHANNELS.filter((c) => channels.includes(c.value)).map((c) => c.label).join(', ') || 'no channel'
          : '';
  const ready = count > 0 && (spec.needs !== 'group' || group) && (spec.needs !== 'tag' || tag.trim()) && (spec.needs !== 'channels' || channels.length > 0);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!ready) return;
    const input: ContactBulkInput = {
      action,
      ...(scope === 'selected' ? { ids: [...selected] } : { filter }),
      ...(spec.needs === 'group' && { group }),
      ...(spec.needs === 'tag' && { tag: tag.trim() }),
      ...(spec.needs === 'channels' && { channels }),
    };
    const result = await run({ input });
    if (result.data) onDone(`${sentence(action, result.data.bulkContacts.count, detail, true)}.`);
  }

  return (
    <Modal opened onClose={onClose} title={spec.label} size="lg">
      <form onSubmit={(e) => void submit(e)}>
        <Stack>
          <Radio.Group label="Contacts" value={scope} onChange={(v) => setScope(v as typeof scope)}>
            <Stack gap="xs" mt="xs">
              <Radio value="selected" label={`The ${contactsCount(selected.length)} selected`} disabled={!selected.length} />
              <Radio value="matching" label={`All ${contactsCount(matching)} matching the filters`} />
            </Stack>
          </Radio.Group>
          {spec.needs === 'group' && (
            <Select label="Group" data={groupOptions} value={group} onChange={setGroup} searchable required error={errors.group} />
          )}
          {spec.needs === 'tag' && <TextInput label="Tag" value={tag} onChange={(e) => setTag(e.currentTarget.value)} required maxLength={50} error={errors.tag} />}
          {spec.needs === 'channels' && (
            <Checkbox.Group label="Channels" value={channels} onChange={(v) => setChannels(v as Channel[])} error={errors.channels}>
              <Group mt="xs">
                {CHANNELS.map((c) => (
                  <Checkbox key={c.value} value={c.value} label={c.label} />
                ))}
              </Group>
            </Checkbox.Group>
          )}
          {action === 'delete' && (
            <Alert color="red" title="This can not be undone">
              The contacts are deleted for good, with their group memberships.
            </Alert>
          )}
          <Text>{`${sentence(action, count, detail, false)}?`}</Text>
          <ErrorAlert error={state.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" color={action === 'delete' ? 'red.9' : undefined} disabled={!ready} loading={state.fetching}>
              {sentence(action, count, detail, false)}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
