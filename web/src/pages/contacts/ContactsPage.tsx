import { Alert, Badge, Button, Checkbox, ColorSwatch, Group, Table, Text, VisuallyHidden } from '@mantine/core';
import { lazy, Suspense, useState } from 'react';
import { Link, useLocation } from 'react-router';
import { useMutation, useQuery, type CombinedError } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { ContactFieldsFragment } from '../../gql/graphql';
import { swatchOf } from '../../lib/colors';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { useMe } from '../../lib/me';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { useSelection } from '../../lib/use-selection';
import { BulkActions, contactsCount } from './BulkActions';
import { ContactExport } from './ContactExport';
import { CHANNELS } from './fields';
import { ContactFilters, useContactFilters } from './ContactFilters';
import { DeleteContact } from './documents';
import { isFiltered } from './filters';

/** The form's code (and its inputs') comes when the dialog is first opened, not with the list. */
const ContactForm = lazy(() => import('./ContactForm').then((m) => ({ default: m.ContactForm })));

const PAGE_SIZE = 25;

const ContactsQueryDocument = graphql(`
  query Contacts($first: Int, $after: String, $filter: ContactFilter) {
    contacts(first: $first, after: $after, filter: $filter) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          ...ContactFields
        }
      }
    }
  }
`);

export default function ContactsPage() {
  const { isAdmin } = useMe();
  const filters = useContactFilters();
  const { filter } = filters;
  const filterKey = JSON.stringify(filter);
  const pages = useCursorPages();
  const selection = useSelection();
  // A new filter starts again at its first page (adjusted while rendering, so no query runs with the
  // old cursor), with nothing selected: a bulk action applies to what the list shows.
  const [pagedFilter, setPagedFilter] = useState(filterKey);
  if (pagedFilter !== filterKey) {
    setPagedFilter(filterKey);
    pages.reset();
    selection.clear();
  }
  const after = pagedFilter === filterKey ? pages.after : null;
  const [{ data, fetching, error }] = useQuery({ query: ContactsQueryDocument, variables: { first: PAGE_SIZE, after, filter } });
  const [deleteState, deleteContact] = useMutation(DeleteContact);
  const [editing, setEditing] = useState<ContactFieldsFragment | 'new' | null>(null);
  const [exportError, setExportError] = useState<CombinedError | undefined>();
  const [bulkDone, setBulkDone] = useState<string | null>(null);
  // Said once by the page that sent the user here (an erasure under way).
  const location = useLocation();
  const [notice, setNotice] = useState<string | null>((location.state as { notice?: string } | null)?.notice ?? null);

  // A 400 about the filter names its field (`filter.attributes`): shown on that filter's control.
  const filterErrors = Object.fromEntries(Object.entries(fieldErrors(error)).map(([k, v]) => [k.replace(/^filter\./, ''), v]));
  const contacts = data?.contacts;
  const filtered = isFiltered(filter);
  const onPage = contacts?.edges.map(({ node }) => node._id) ?? [];
  const pageSelected = onPage.filter((id) => selection.selected.has(id)).length;

  return (
    <>
      <PageHeader title="Contacts">
        <ContactExport filter={filter} onError={setExportError} />
        {isAdmin && <Button onClick={() => setEditing('new')}>New contact</Button>}
      </PageHeader>
      <ContactFilters filters={filters} errors={filterErrors} />
      {!Object.keys(filterErrors).length && <ErrorAlert error={error} />}
      <ErrorAlert error={deleteState.error} />
      <ErrorAlert error={exportError} title="The export could not start" />
      {notice && (
        <Alert color="indigo" role="status" title="Erasure under way" withCloseButton closeButtonLabel="Dismiss" onClose={() => setNotice(null)} mb="md">
          {notice}
        </Alert>
      )}
      {bulkDone && (
        <Alert color="indigo" role="status" title="Bulk action done" withCloseButton closeButtonLabel="Dismiss" onClose={() => setBulkDone(null)} mb="md">
          {bulkDone}
        </Alert>
      )}
      {!contacts && fetching && <PageLoader />}
      {contacts && contacts.edges.length === 0 && !filtered && (
        <EmptyState title="No contacts yet">
          {isAdmin ? (
            <>
              <Text c="dimmed">Contacts are the people you message. Create one with an email, a phone or both.</Text>
              <Button onClick={() => setEditing('new')}>New contact</Button>
            </>
          ) : (
            <Text c="dimmed">Contacts are the people you message. Ask an admin of your organization to add them.</Text>
          )}
        </EmptyState>
      )}
      {contacts && contacts.edges.length === 0 && filtered && (
        <EmptyState title="No contacts match these filters">
          <Text c="dimmed">Change or clear the filters to see more contacts.</Text>
          <Button variant="default" onClick={filters.clear}>
            Clear filters
          </Button>
        </EmptyState>
      )}
      {contacts && contacts.edges.length > 0 && (
        <>
          {isAdmin && (
            <Group justify="space-between" mb="xs">
              <Text size="sm" c="dimmed" aria-live="polite">
                {selection.selected.size ? `${contactsCount(selection.selected.size)} selected` : 'Select contacts, or act on all that match the filters'}
              </Text>
              <BulkActions
                selected={[...selection.selected]}
                filter={filter}
                matching={contacts.totalCount}
                onDone={(summary) => {
                  selection.clear();
                  setBulkDone(summary);
                }}
              />
            </Group>
          )}
          <Table.ScrollContainer minWidth={900}>
            <Table striped highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  {isAdmin && (
                    <Table.Th w={40}>
                      <Checkbox
                        aria-label="Select all contacts on this page"
                        checked={pageSelected === onPage.length}
                        indeterminate={pageSelected > 0 && pageSelected < onPage.length}
                        onChange={(e) => selection.toggleAll(onPage, e.currentTarget.checked)}
                      />
                    </Table.Th>
                  )}
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Email</Table.Th>
                  <Table.Th>Phone</Table.Th>
                  <Table.Th>Groups</Table.Th>
                  <Table.Th>Tags</Table.Th>
                  <Table.Th>Unsubscribed from</Table.Th>
                  <Table.Th>Created</Table.Th>
                  {isAdmin && (
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {contacts.edges.map(({ node }) => (
                  <ContactRow
                    key={node._id}
                    contact={node}
                    isAdmin={isAdmin}
                    selected={selection.selected.has(node._id)}
                    onSelect={(on) => selection.toggle(node._id, on)}
                    onEdit={() => setEditing(node)}
                    onDelete={() => {
                      if (confirm(`Delete the contact "${node.name}" for good?`)) void deleteContact({ id: node._id });
                    }}
                  />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <CursorPager
            history={pages.history}
            hasNextPage={contacts.pageInfo.hasNextPage}
            totalCount={contacts.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(contacts.pageInfo.endCursor)}
          />
        </>
      )}
      {editing && (
        <Suspense fallback={null}>
          <ContactForm
            contact={editing === 'new' ? null : editing}
            initialGroups={filter.group ? [filter.group] : []}
            onClose={() => setEditing(null)}
          />
        </Suspense>
      )}
    </>
  );
}

interface RowProps {
  contact: ContactFieldsFragment;
  isAdmin: boolean;
  selected: boolean;
  onSelect: (on: boolean) => void;
  onEdit: () => void;
  onDelete: () => void;
}

/** One contact in the list; its name leads to the contact's page. An admin can select it for a bulk action. */
function ContactRow({ contact, isAdmin, selected, onSelect, onEdit, onDelete }: RowProps) {
  const left = CHANNELS.filter(({ value }) => contact.subscriptions[value].status === 'unsubscribed').map(({ label }) => label);
  return (
    <Table.Tr>
      {isAdmin && (
        <Table.Td>
          <Checkbox aria-label={`Select ${contact.name}`} checked={selected} onChange={(e) => onSelect(e.currentTarget.checked)} />
        </Table.Td>
      )}
      <Table.Td miw={140}>
        <Link to={`/contacts/${contact._id}`}>{contact.name}</Link>
      </Table.Td>
      <Table.Td>{contact.email ?? '—'}</Table.Td>
      <Table.Td>{contact.phone ?? '—'}</Table.Td>
      <Table.Td>
        <Group gap={4}>
          {contact.groups.map((g) => (
            <Badge key={g._id} variant="default" tt="none" leftSection={<ColorSwatch color={swatchOf(g.color)} size={8} aria-hidden />}>
              {g.name}
            </Badge>
          ))}
        </Group>
      </Table.Td>
      <Table.Td>
        <Group gap={4}>
          {contact.tags.map((t) => (
            <Badge key={t} variant="outline" color="dark" tt="none">
              {t}
            </Badge>
          ))}
        </Group>
      </Table.Td>
      <Table.Td>{left.length ? left.join(', ') : '—'}</Table.Td>
      <Table.Td miw={120}>{formatDateTime(contact.createdAt)}</Table.Td>
      {isAdmin && (
        <Table.Td>
          <Group gap="xs" justify="flex-end" wrap="nowrap">
            <Button size="xs" variant="default" onClick={onEdit} aria-label={`Edit ${contact.name}`}>
              Edit
            </Button>
            <Button size="xs" color="red.9" variant="outline" onClick={onDelete} aria-label={`Delete ${contact.name}`}>
              Delete
            </Button>
          </Group>
        </Table.Td>
      )}
    </Table.Tr>
  );
}
