import { Button, Text } from '@mantine/core';
import { useState } from 'react';
import { getToken } from '../../lib/session';

/**
 * Downloads everything Herald holds about a contact (`GET /contacts/:id/data`): the file a person
 * asking for their data is sent. Fetched with the session's token and saved from memory, so no
 * credential ever sits in a URL.
 */
export function PersonDataButton({ contactId, name }: { contactId: string; name: string }) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const save = async () => {
    setBusy(true);
    setProblem(null);
    try {
      const res = await fetch(`/contacts/${encodeURIComponent(contactId)}/data`, { headers: { authorization: `Bearer ${getToken() ?? ''}` } });
      if (!res.ok) {
        const body = (await res.json().catch(() => null)) as { message?: string } | null;
        throw new Error(body?.message ?? `The data could not be read (${res.status})`);
      }
      const url = URL.createObjectURL(await res.blob());
      const link = document.createElement('a');
      link.href = url;
      link.download = `${name.replace(/[^\w.-]+/g, '-').toLowerCase() || 'contact'}-data.json`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setProblem((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button variant="default" loading={busy} onClick={() => void save()}>
        Download data
      </Button>
      {problem && (
        <Text c="red.9" size="sm" role="alert">
          {problem}
        </Text>
      )}
    </>
  );
}
