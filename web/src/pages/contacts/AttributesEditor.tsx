import { Button, CloseButton, Fieldset, Group, NumberInput, Select, Stack, Text, TextInput } from '@mantine/core';
import { useId } from 'react';
import { newRow, type AttributeRow, type AttributeType } from './attributes';

const TYPES: { value: AttributeType; label: string }[] = [
  { value: 'text', label: 'Text' },
  { value: 'number', label: 'Number' },
  { value: 'boolean', label: 'True or false' },
];

interface Props {
  rows: AttributeRow[];
  onChange: (rows: AttributeRow[]) => void;
  /** Whether the contact exists: then removing a key is explained as the API does it. */
  existing: boolean;
  /** The server's message for `attributes`, if it refused them. */
  error?: string;
}

/**
 * Key/value editing of a contact's attributes (a flat JSON object). The server judges keys, values
 * and limits; this only keeps each value's type, so a number is sent as a number.
 */
export function AttributesEditor({ rows, onChange, existing, error }: Props) {
  const helpId = useId();
  const set = (id: number, patch: Partial<AttributeRow>) => onChange(rows.map((r) => (r.id === id ? { ...r, ...patch } : r)));
  const retype = (row: AttributeRow, type: AttributeType) =>
    set(row.id, { type, value: type === 'boolean' ? true : type === 'number' ? (Number.isFinite(Number(row.value)) && row.value !== '' ? Number(row.value) : '') : String(row.value) });

  return (
    <Fieldset legend="Attributes" aria-describedby={helpId}>
      <Stack gap="xs">
        <Text size="sm" id={helpId}>
          Free-form data for personalised messages, such as plan or seats.{' '}
          {existing
            ? 'Saving changes only the keys you touch: a key you remove here is deleted from the contact (the API is sent null for it); the others are kept.'
            : 'Keys are letters, digits or underscores.'}
        </Text>
        {rows.map((row, i) => (
          <Group key={row.id} align="flex-end" gap="xs" wrap="nowrap">
            <TextInput label="Key" value={row.key} onChange={(e) => set(row.id, { key: e.currentTarget.value })} style={{ flex: 2 }} />
            <Select
              label="Type"
              data={TYPES}
              value={row.type}
              allowDeselect={false}
              onChange={(v) => v && retype(row, v as AttributeType)}
              style={{ flex: 1.4 }}
            />
            {row.type === 'number' && (
              <NumberInput label="Value" required value={typeof row.value === 'number' ? row.value : String(row.value)} onChange={(v) => set(row.id, { value: v })} style={{ flex: 2 }} />
            )}
            {row.type === 'boolean' && (
              <Select
                label="Value"
                data={['true', 'false']}
                value={String(row.value)}
                allowDeselect={false}
                onChange={(v) => v && set(row.id, { value: v === 'true' })}
                style={{ flex: 2 }}
              />
            )}
            {row.type === 'text' && <TextInput label="Value" value={String(row.value)} onChange={(e) => set(row.id, { value: e.currentTarget.value })} style={{ flex: 2 }} />}
            <CloseButton
              mb={4}
              aria-label={row.key ? `Remove attribute ${row.key}` : `Remove attribute row ${i + 1}`}
              onClick={() => onChange(rows.filter((r) => r.id !== row.id))}
            />
          </Group>
        ))}
        {error && (
          <Text size="sm" c="var(--mantine-color-error)" role="alert">
            {error}
          </Text>
        )}
        <Group>
          <Button variant="default" size="xs" onClick={() => onChange([...rows, newRow()])}>
            Add attribute
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}
