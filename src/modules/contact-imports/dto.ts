import type { ColumnTarget } from '../contacts/csv-columns.js';
import type { StoredOptions } from './runner.js';
import type { ImportRow } from './sql.js';

/** Where a column of the file goes, as written in a mapping (`email`, `attributes.plan`, ...), or null when ignored. */
export const targetName = (target: ColumnTarget | null): string | null => {
  if (!target) return null;
  switch (target.kind) {
    case 'field':
      return target.field;
    case 'attribute':
      return `attributes.${target.key}`;
    case 'subscription':
      return `subscriptions.${target.channel}`;
    case 'unsubscribed':
      return 'unsubscribed';
  }
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const toImportDto = (row: ImportRow) => {
  const options = row.options as unknown as StoredOptions;
  return {
    _id: row.id,
    status: row.status,
    fileName: row.file_name,
    fileBytes: Number(row.file_bytes),
    columns: options.layout.columns.map((c) => ({ column: c.header, field: targetName(c.target) })),
    delimiter: options.layout.delimiter,
    matchBy: options.layout.matchBy,
    existing: options.existing,
    groups: options.groups,
    tags: options.tags,
    rowsTotal: row.rows_total,
    rowsRead: row.rows_read,
    created: row.created,
    updated: row.updated,
    skipped: row.skipped,
    failed: row.failed,
    errors: row.errors.map((e) => ({ line: e.line, column: e.column ?? null, message: e.message })),
    failure: row.failure,
    createdByUserId: row.created_by_user_id,
    createdByApiKeyId: row.created_by_api_key_id,
    organization: row.organization_id,
    createdAt: row.created_at.toISOString(),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    updatedAt: row.updated_at.toISOString(),
  };
};
export type ContactImportDto = ReturnType<typeof toImportDto>;
