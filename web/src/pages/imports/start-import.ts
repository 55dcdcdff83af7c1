/**
 * Starts an import of a file through the door its size calls for: a file that fits a GraphQL
 * request goes as CSV text in `startContactImport`; a larger one (up to the 100 MiB an import
 * takes) is uploaded to `POST /contacts/import`. Both answer the queued import.
 */
import { CombinedError, type Client } from 'urql';
import { graphql } from '../../gql';
import type { ContactImportExisting, ContactImportMatchBy } from '../../gql/graphql';
import { uploadFile } from '../../lib/upload';

const StartImportDocument = graphql(`
  mutation ImportPageStart($input: StartContactImportInput!) {
    startContactImport(input: $input) {
      ...ContactImportFields
    }
  }
`);

/** The largest file an import takes (platform.md). */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;
/**
 * The largest file sent as GraphQL text: requests are limited to 15 MB, and escaping (quotes, tabs,
 * line breaks) makes the JSON string longer than the file.
 */
const GRAPHQL_FILE_BYTES = 10 * 1024 * 1024;
const GRAPHQL_TEXT_CHARS = 14 * 1024 * 1024;

export interface ImportSettings {
  mapping: Record<string, string>;
  delimiter: string;
  matchBy: ContactImportMatchBy;
  existing: ContactImportExisting;
  groups: string[];
  tags: string[];
}

export type Started = { id: string; error?: undefined } | { id?: undefined; error: CombinedError };

/** Queues the import of `file`; `onUpload` gets the share sent while a large file uploads. */
export async function startImport(client: Client, file: File, settings: ImportSettings, onUpload?: (sent: number) => void): Promise<Started> {
  if (file.size <= GRAPHQL_FILE_BYTES) {
    const csv = await file.text();
    if (JSON.stringify(csv).length <= GRAPHQL_TEXT_CHARS) {
      const result = await client.mutation(StartImportDocument, { input: { csv, fileName: file.name, ...settings } }).toPromise();
      const started = result.data?.startContactImport;
      if (started) return { id: started._id };
      return { error: result.error ?? new CombinedError({ graphQLErrors: ['The import did not start'] }) };
    }
  }
  const fields = {
    mapping: JSON.stringify(settings.mapping),
    delimiter: settings.delimiter,
    matchBy: settings.matchBy,
    existing: settings.existing,
    groups: settings.groups.join(','),
    tags: settings.tags.join(','),
  };
  const result = await uploadFile<{ _id: string }>('/contacts/import', fields, file, onUpload);
  return result.error ? { error: result.error } : { id: result.data._id };
}
