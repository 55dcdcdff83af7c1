import { NativeSelect, SimpleGrid, Stack, TextInput } from '@mantine/core';
import { TARGET_CHOICES, keyOf, type ColumnChoice, type TargetChoice } from './column-targets';

interface Props {
  choices: ColumnChoice[];
  /** The preview's rows, for a sample of each column's values. */
  rows: string[][];
  onChange: (choices: ColumnChoice[]) => void;
}

/** A few values of column `index`, to tell the user what the column holds. */
function sampleOf(rows: string[][], index: number): string {
  const values = rows.map((r) => r[index]?.trim() ?? '').filter(Boolean);
  if (!values.length) return 'Empty in the first rows';
  const shown = [...new Set(values)].slice(0, 3).map((v) => (v.length > 30 ? `${v.slice(0, 29)}…` : v));
  return `For example: ${shown.join(', ')}`;
}

/** Where each column of the file goes: a field, an attribute (with its key), or nowhere. */
export function ColumnMapping({ choices, rows, onChange }: Props) {
  const change = (index: number, next: Partial<ColumnChoice>) => onChange(choices.map((c, i) => (i === index ? { ...c, ...next } : c)));
  return (
    <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
      {choices.map((choice, index) => {
        const name = choice.header || `${index + 1} (no name)`;
        return (
          <Stack key={index} gap={4}>
            <NativeSelect
              label={`Column ${name}`}
              description={sampleOf(rows, index)}
              data={TARGET_CHOICES.map((t) => ({ value: t.value, label: t.label }))}
              value={choice.target}
              onChange={(e) => {
                const target = e.currentTarget.value as TargetChoice;
                change(index, { target, key: target === 'attribute' && !choice.key ? keyOf(choice.header) : choice.key });
              }}
            />
            {choice.target === 'attribute' && (
              <TextInput
                label={`Attribute key for ${name}`}
                description="Letters, digits and underscores"
                required
                value={choice.key}
                onChange={(e) => change(index, { key: e.currentTarget.value })}
              />
            )}
          </Stack>
        );
      })}
    </SimpleGrid>
  );
}
