import { Anchor, Badge, Button, Group, NativeSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { AuditLogFilter, AuditLogQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { ACTION_OPTIONS, actionLabel, isActionOption, resourceLabel } from './audit-actions';

const PAGE_SIZE = 25;

const AuditLogQueryDocument = graphql(`
  query AuditLog($first: Int, $after: String, $filter: AuditLogFilter) {
    auditLog(first: $first, after: $after, filter: $filter) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          at
          actorType
          actorId
          actorLabel
          action
          resourceType
          resourceId
          details
          ip
        }
      }
    }
  }
`);

type Entry = AuditLogQuery['auditLog']['edges'][number]['node'];

/** The search parameters the page reads and writes, so a filtered log can be linked to. */
const PARAMS = ['action', 'from', 'to'] as const;

function filterOf(search: URLSearchParams): AuditLogFilter {
  const filter: AuditLogFilter = {};
  const action = search.get('action');
  if (isActionOption(action)) filter.action = action;
  if (search.get('from')) filter.dateFrom = search.get('from');
  if (search.get('to')) filter.dateTo = search.get('to');
  return filter;
}

/** The organization's admin actions, newest first: who did what, to what, when and from where. */
export default function AuditLogPage() {
  const [search, setSearch] = useSearchParams();
  const set = (name: (typeof PARAMS)[number], value: string) => {
    const next = new URLSearchParams(search);
    if (value) next.set(name, value);
    else next.delete(name);
    setSearch(next, { replace: true });
  };
  const clear = () => setSearch(new URLSearchParams(), { replace: true });
  const filtered = PARAMS.some((p) => search.get(p));

  // A new filter starts again at the first page.
  const pages = useCursorPages();
  const filterKey = PARAMS.map((p) => search.get(p) ?? '').join('|');
  const [pagesOf, setPagesOf] = useState(filterKey);
  if (pagesOf !== filterKey) {
    setPagesOf(filterKey);
    pages.reset();
  }

  const [{ data, fetching, error }] = useQuery({ query: AuditLogQueryDocument, variables: { first: PAGE_SIZE, after: pages.after, filter: filterOf(search) } });
  const log = data?.auditLog;
  const errors = fieldErrors(error);

  return (
    <>
      <PageHeader title="Audit log" />
      <Text c="dimmed" mb="md" maw={720}>
        Every change an admin or an admin API key made to the team, API keys, credentials, settings, webhooks, campaign launches, imports and contacts&apos; consent. Entries are kept as
        written and can not be changed.
      </Text>
      <Group align="flex-end" mb="md">
        <NativeSelect label="Action" data={ACTION_OPTIONS} value={isActionOption(search.get('action')) ? search.get('action')! : ''} onChange={(e) => set('action', e.currentTarget.value)} />
        <TextInput label="From" type="date" value={search.get('from') ?? ''} onChange={(e) => set('from', e.currentTarget.value)} error={errors.dateFrom} />
        <TextInput label="Until" type="date" value={search.get('to') ?? ''} onChange={(e) => set('to', e.currentTarget.value)} error={errors.dateTo} />
        {filtered && (
          <Button variant="default" onClick={clear}>
            Clear filters
          </Button>
        )}
      </Group>
      {!errors.dateFrom && !errors.dateTo && <ErrorAlert error={error} />}
      {!log && fetching && <PageLoader />}
      {log && log.edges.length === 0 && (
        <EmptyState title={filtered ? 'No entries match these filters' : 'No admin actions yet'}>
          <Text c="dimmed">{filtered ? 'Widen the dates, or choose another action.' : 'Changes to the team, keys, credentials, webhooks, campaigns and imports appear here.'}</Text>
        </EmptyState>
      )}
      {log && log.edges.length > 0 && (
        <>
          <AuditTable entries={log.edges.map((e) => e.node)} />
          <CursorPager
            history={pages.history}
            hasNextPage={log.pageInfo.hasNextPage}
            totalCount={log.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(log.pageInfo.endCursor)}
          />
        </>
      )}
    </>
  );
}

/** Where a resource's own page is in the console, when it has one. */
function resourcePath(entry: Entry): string | null {
  if (!entry.resourceId) return null;
  switch (entry.resourceType) {
    case 'campaign':
      return `/campaigns/${entry.resourceId}`;
    case 'contact':
      return `/contacts/${entry.resourceId}`;
    case 'contact_import':
      return `/imports/${entry.resourceId}`;
    default:
      return null;
  }
}

/** The few words that name the resource or say what changed, from the entry's details. */
function summaryOf(details: Record<string, unknown>): string {
  const text = (key: string) => (typeof details[key] === 'string' || typeof details[key] === 'number' ? String(details[key]) : null);
  const name = text('email') ?? text('name') ?? text('url') ?? text('fileName');
  const parts: string[] = name ? [name] : [];
  if (text('from') && text('to')) parts.push(`${text('from')} → ${text('to')}`);
  if (Array.isArray(details.fields)) parts.push(`changed: ${details.fields.join(', ')}`);
  if (details.changes && typeof details.changes === 'object') {
    parts.push(
      Object.entries(details.changes as Record<string, unknown>)
        .map(([key, value]) => (value && typeof value === 'object' ? `${key}: ${String((value as { from: unknown }).from)} → ${String((value as { to: unknown }).to)}` : `${key}: ${String(value)}`))
        .join(', '),
    );
  }
  if (typeof details.count === 'number') parts.push(`${details.count} contacts`);
  return parts.join(' · ');
}

function AuditTable({ entries }: { entries: Entry[] }) {
  return (
    <Table striped>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>When</Table.Th>
          <Table.Th>Who</Table.Th>
          <Table.Th>Action</Table.Th>
          <Table.Th>Resource</Table.Th>
          <Table.Th>From where</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {entries.map((entry) => {
          const path = resourcePath(entry);
          const summary = summaryOf(entry.details);
          return (
            <Table.Tr key={entry._id}>
              <Table.Td>{formatDateTime(entry.at)}</Table.Td>
              <Table.Td>
                <Group gap="xs" wrap="nowrap">
                  <Text size="sm">{entry.actorLabel}</Text>
                  {entry.actorType === 'api_key' && (
                    <Badge variant="outline" color="gray.8">
                      API key
                    </Badge>
                  )}
                </Group>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{actionLabel(entry.action)}</Text>
              </Table.Td>
              <Table.Td maw={420}>
                <Stack gap={0}>
                  {path ? (
                    <Anchor size="sm" component={Link} to={path}>
                      {resourceLabel(entry.resourceType)}
                    </Anchor>
                  ) : (
                    <Text size="sm">{resourceLabel(entry.resourceType)}</Text>
                  )}
                  {summary && (
                    <Text size="xs" c="dimmed">
                      {summary}
                    </Text>
                  )}
                </Stack>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{entry.ip ?? '—'}</Text>
              </Table.Td>
            </Table.Tr>
          );
        })}
      </Table.Tbody>
    </Table>
  );
}
