import { Badge, Button, Group, Table, Text, VisuallyHidden } from '@mantine/core';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { formatDateTime } from '../../lib/format';
import { useMe } from '../../lib/me';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { CHANNEL_LABELS, TemplateForm, type TemplateRow } from './TemplateForm';
import { TemplateView } from './TemplateView';

const PAGE_SIZE = 25;

const TemplatesQueryDocument = graphql(`
  query Templates($first: Int, $after: String) {
    templates(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          ...TemplateFields
        }
      }
    }
  }
`);

const DeleteTemplate = graphql(`
  mutation DeleteTemplate($id: ID!) {
    deleteTemplate(id: $id) {
      message
    }
  }
`);

/** Saved messages (Liquid) to send or start a campaign from: everyone reads them, admins write them. */
export default function TemplatesPage() {
  const { isAdmin } = useMe();
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: TemplatesQueryDocument, variables: { first: PAGE_SIZE, after: pages.after } });
  const [deleteState, deleteTemplate] = useMutation(DeleteTemplate);
  const [editing, setEditing] = useState<TemplateRow | 'new' | null>(null);
  const [viewing, setViewing] = useState<TemplateRow | null>(null);
  const templates = data?.templates;

  return (
    <>
      <PageHeader title="Templates">{isAdmin && <Button onClick={() => setEditing('new')}>New template</Button>}</PageHeader>
      <ErrorAlert error={error ?? deleteState.error} />
      {!templates && fetching && <PageLoader />}
      {templates && templates.edges.length === 0 && (
        <EmptyState title="No templates yet">
          {isAdmin ? (
            <>
              <Text c="dimmed">Save a message you send often, with Liquid placeholders such as {'{{ contact.name }}'}, then pick it when you send.</Text>
              <Button onClick={() => setEditing('new')}>New template</Button>
            </>
          ) : (
            <Text c="dimmed">Templates are saved messages to send. Ask an admin of your organization to create some.</Text>
          )}
        </EmptyState>
      )}
      {templates && templates.edges.length > 0 && (
        <>
          <Table.ScrollContainer minWidth={800}>
            <Table striped highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Channel</Table.Th>
                  <Table.Th>Subject</Table.Th>
                  <Table.Th>Content</Table.Th>
                  <Table.Th>Last changed</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {templates.edges.map(({ node }) => (
                  <Table.Tr key={node._id}>
                    <Table.Td fw={500} miw={140}>{node.name}</Table.Td>
                    <Table.Td>
                      <Badge variant="default" tt="none">
                        {CHANNEL_LABELS[node.channel]}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{node.subject ?? '—'}</Table.Td>
                    <Table.Td maw={360}>
                      <Text size="sm" lineClamp={2} ff="monospace">
                        {node.content}
                      </Text>
                    </Table.Td>
                    <Table.Td>{formatDateTime(node.updatedAt)}</Table.Td>
                    <Table.Td>
                      <Group gap="xs" justify="flex-end" wrap="nowrap">
                        {isAdmin ? (
                          <>
                            <Button size="xs" variant="default" onClick={() => setEditing(node)} aria-label={`Edit ${node.name}`}>
                              Edit
                            </Button>
                            <Button
                              size="xs"
                              color="red.9"
                              variant="outline"
                              aria-label={`Delete ${node.name}`}
                              onClick={() => {
                                if (confirm(`Delete the template "${node.name}" for good?`)) void deleteTemplate({ id: node._id });
                              }}
                            >
                              Delete
                            </Button>
                          </>
                        ) : (
                          <Button size="xs" variant="default" onClick={() => setViewing(node)} aria-label={`View ${node.name}`}>
                            View
                          </Button>
                        )}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <CursorPager
            history={pages.history}
            hasNextPage={templates.pageInfo.hasNextPage}
            totalCount={templates.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(templates.pageInfo.endCursor)}
          />
        </>
      )}
      {editing && <TemplateForm template={editing === 'new' ? null : editing} onClose={() => setEditing(null)} />}
      {viewing && <TemplateView template={viewing} onClose={() => setViewing(null)} />}
    </>
  );
}
