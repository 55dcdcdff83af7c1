import { Stack, Text } from '@mantine/core';
import { useMemo } from 'react';
import { styleNonce } from '../../lib/nonce';
import { emailDocument } from './email-document';

/** An email's rendered body, drawn as a mail client would in a sandboxed frame (`email-document.ts`). */
export function EmailFrame({ body, html, title }: { body: string; html: boolean; title: string }) {
  const { srcDoc, remoteImages } = useMemo(() => emailDocument(body, html, styleNonce), [body, html]);
  return (
    <Stack gap={4}>
      <iframe title={title} sandbox="" srcDoc={srcDoc} style={{ width: '100%', height: 380, border: '1px solid var(--mantine-color-gray-3)', borderRadius: 'var(--mantine-radius-sm)', background: 'white' }} />
      {remoteImages > 0 && (
        <Text size="xs" c="dimmed">
          {remoteImages === 1 ? 'An image' : `${remoteImages} images`} from another site {remoteImages === 1 ? 'is' : 'are'} left out of the preview; recipients see {remoteImages === 1 ? 'it' : 'them'}.
        </Text>
      )}
    </Stack>
  );
}
