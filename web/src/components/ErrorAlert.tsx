import { Alert } from '@mantine/core';
import type { CombinedError } from 'urql';
import { messageOf } from '../lib/errors';

/** The server's message for a failed query or mutation, announced to screen readers. */
export function ErrorAlert({ error, title = 'Something went wrong' }: { error: CombinedError | undefined; title?: string }) {
  const message = messageOf(error);
  if (!message) return null;
  return (
    <Alert color="red" title={title} role="alert" mb="md">
      {message}
    </Alert>
  );
}
