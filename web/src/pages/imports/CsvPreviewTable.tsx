import { Table, Text } from '@mantine/core';
import type { CsvPreview } from '../../lib/csv-preview';

/** The file's header and first rows, as the import will split them. */
export function CsvPreviewTable({ preview, fileName }: { preview: CsvPreview; fileName: string }) {
  // A row longer than the header (the import reports it) still shows whole, under a column of its own.
  const width = Math.max(preview.headers.length, ...preview.rows.map((r) => r.length));
  const headers = Array.from({ length: width }, (_, i) => preview.headers[i]);
  return (
    <Table.ScrollContainer minWidth={Math.min(1200, width * 140)}>
      <Table striped withTableBorder withColumnBorders>
        <Table.Caption>
          {preview.rows.length ? `The first ${preview.rows.length === 1 ? 'row' : `${preview.rows.length} rows`} of ${fileName}` : `${fileName} has a header and no rows`}
        </Table.Caption>
        <Table.Thead>
          <Table.Tr>
            {headers.map((h, i) => (
              <Table.Th key={i} scope="col">
                {h || (
                  <Text span c="dimmed" size="sm">
                    {h === undefined ? '(not in the header)' : '(no name)'}
                  </Text>
                )}
              </Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {preview.rows.map((row, r) => (
            <Table.Tr key={r}>
              {Array.from({ length: width }, (_, i) => (
                <Table.Td key={i} style={{ overflowWrap: 'anywhere' }}>
                  {row[i] ?? ''}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
