/**
 * What the import pages share: the fields of an import they read (one fragment, so the query, the
 * progress events and the cancel's answer keep one cached import whole), and how a status reads.
 */
import { Badge } from '@mantine/core';
import { graphql } from '../../gql';
import type { ContactImportStatus } from '../../gql/graphql';

export const ContactImportFields = graphql(`
  fragment ContactImportFields on ContactImport {
    _id
    status
    fileName
    fileBytes
    columns {
      column
      field
    }
    delimiter
    matchBy
    existing
    groups
    tags
    rowsTotal
    rowsRead
    created
    updated
    skipped
    failed
    errors {
      line
      column
      message
    }
    failure
    createdAt
    startedAt
    finishedAt
    updatedAt
  }
`);

/** The organization's groups, to choose from and to name an import's by. */
export const ImportGroupOptions = graphql(`
  query ImportPageGroups {
    groups(first: 1000) {
      edges {
        node {
          _id
          name
        }
      }
    }
  }
`);

/** The separators an import reads, as people name them. */
export const DELIMITER_LABELS: Record<string, string> = { ',': 'Comma (,)', ';': 'Semicolon (;)', '\t': 'Tab', '|': 'Pipe (|)' };

/** Statuses an import leaves by itself: it is watched live while in one. */
export const isUnderWay = (status: ContactImportStatus) => status === 'queued' || status === 'running';

const STATUS_COLORS: Record<ContactImportStatus, string> = {
  queued: 'gray.9',
  running: 'cyan.9',
  completed: 'teal.9',
  failed: 'red.9',
  canceled: 'grape.9',
};

/** An import's status as a badge (filled with shade 9: white on it passes WCAG AA contrast). */
export function ImportStatusBadge({ status }: { status: ContactImportStatus }) {
  return (
    <Badge color={STATUS_COLORS[status]} variant="filled">
      {status}
    </Badge>
  );
}

/** How an import is named in lists and titles: its file's name (an import through the API may have none). */
export const importName = (i: { fileName?: string | null }) => i.fileName || 'CSV without a name';

/** A size in bytes as people read it: `2.4 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toLocaleString(undefined, { maximumFractionDigits: 1 })} ${units[unit]}`;
}
