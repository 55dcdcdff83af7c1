import { Table } from '@mantine/core';
import type { ReactNode } from 'react';

/** One labelled value of a `FieldTable`. */
export type Field = [label: string, value: ReactNode];

/** Labelled values, a row each, the label as the row's header (a campaign's overview, an import's settings). */
export function FieldTable({ fields, labelWidth }: { fields: Field[]; labelWidth: number }) {
  return (
    <Table>
      <Table.Tbody>
        {fields.map(([label, value]) => (
          <Table.Tr key={label}>
            <Table.Th scope="row" w={labelWidth}>
              {label}
            </Table.Th>
            <Table.Td>{value}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
