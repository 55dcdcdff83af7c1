import { Card, ScrollArea, Table, Text, Title } from '@mantine/core';
import type { ContactImportFieldsFragment } from '../../gql/graphql';
import { formatNumber } from '../../lib/format';

/** The rows the import did not take, by their line in the file (the header is line 1). */
export function ImportErrorsTable({ errors, failed }: { errors: ContactImportFieldsFragment['errors']; failed: number }) {
  return (
    <Card withBorder>
      <Title order={3} mb="xs" id="row-errors-title">
        Rows not imported
      </Title>
      {failed > errors.length && (
        <Text size="sm" mb="xs">
          The first {formatNumber(errors.length)} of {formatNumber(failed)} are listed.
        </Text>
      )}
      <ScrollArea.Autosize mah={480} type="auto" viewportProps={{ tabIndex: 0 }}>
        <Table striped aria-labelledby="row-errors-title">
          <Table.Thead>
            <Table.Tr>
              <Table.Th ta="right">Line</Table.Th>
              <Table.Th>Column</Table.Th>
              <Table.Th>Problem</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {errors.map((e, n) => (
              <Table.Tr key={n}>
                <Table.Td ta="right">{e.line}</Table.Td>
                <Table.Td>{e.column ?? '—'}</Table.Td>
                <Table.Td>{e.message}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollArea.Autosize>
    </Card>
  );
}
