import { Button } from '@mantine/core';
import { useState } from 'react';
import { useClient, type CombinedError } from 'urql';
import { graphql } from '../../gql';
import type { ContactFilter } from '../../gql/graphql';

const ContactExportLinkDocument = graphql(`
  query ContactExportLink($filter: ContactFilter) {
    contactExport(filter: $filter) {
      path
    }
  }
`);

interface Props {
  filter: ContactFilter;
  /** A failure to make the link, for the page to show. */
  onError: (error: CombinedError | undefined) => void;
}

/**
 * Downloads the contacts the list's filters match as CSV: a fresh signed link from the API (the
 * console holds its credential in memory, which a download by navigation can not carry), then the
 * browser fetches it as an attachment and stays on the page.
 */
export function ContactExport({ filter, onError }: Props) {
  const client = useClient();
  const [busy, setBusy] = useState(false);
  async function download() {
    setBusy(true);
    onError(undefined);
    const result = await client.query(ContactExportLinkDocument, { filter }, { requestPolicy: 'network-only' }).toPromise();
    setBusy(false);
    if (result.error || !result.data) return onError(result.error);
    window.location.assign(result.data.contactExport.path);
  }
  return (
    <Button variant="default" onClick={() => void download()} loading={busy}>
      Export CSV
    </Button>
  );
}
