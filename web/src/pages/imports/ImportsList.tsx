import { Anchor, Table, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ImportStatusBadge, importName } from './import-fields';

const PAGE_SIZE = 10;

const ImportPageList = graphql(`
  query ImportPageList($first: Int, $after: String) {
    contactImports(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          status
          fileName
          rowsTotal
          created
          updated
          skipped
          failed
          createdAt
          updatedAt
        }
      }
    }
  }
`);

/** The organization's imports, newest first, each linking to its page. */
export function ImportsList() {
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: ImportPageList, variables: { first: PAGE_SIZE, after: pages.after } });
  const imports = data?.contactImports;
  return (
    <section aria-labelledby="past-imports-title">
      <Title order={3} id="past-imports-title" mb="sm">
        Past imports
      </Title>
      <ErrorAlert error={error} />
      {!imports && fetching && <PageLoader />}
      {imports && imports.edges.length === 0 && <Text c="dimmed">No imports yet: the files you import are listed here.</Text>}
      {imports && imports.edges.length > 0 && (
        <>
          <Table.ScrollContainer minWidth={760}>
            <Table striped highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>File</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th ta="right">Rows</Table.Th>
                  <Table.Th ta="right">Created</Table.Th>
                  <Table.Th ta="right">Updated</Table.Th>
                  <Table.Th ta="right">Skipped</Table.Th>
                  <Table.Th ta="right">Failed</Table.Th>
                  <Table.Th>Uploaded</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {imports.edges.map(({ node }) => (
                  <Table.Tr key={node._id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/imports/${node._id}`}>
                        {importName(node)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>
                      <ImportStatusBadge status={node.status} />
                    </Table.Td>
                    <Table.Td ta="right">{formatNumber(node.rowsTotal)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(node.created)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(node.updated)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(node.skipped)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(node.failed)}</Table.Td>
                    <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <CursorPager
            history={pages.history}
            hasNextPage={imports.pageInfo.hasNextPage}
            totalCount={imports.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(imports.pageInfo.endCursor)}
          />
        </>
      )}
    </section>
  );
}
