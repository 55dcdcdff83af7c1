import { MantineProvider, Modal, createTheme, type CSSVariablesResolver } from '@mantine/core';
import { Suspense, useEffect, useMemo } from 'react';
import { RouterProvider } from 'react-router';
import { Provider } from 'urql';
import { PageLoader } from './components/PageLoader';
import { createHeraldClient } from './lib/client';
import { styleNonce } from './lib/nonce';
import { useToken } from './lib/session';
import { router } from './routes';

/** Darker shades than Mantine's defaults, so text and buttons meet WCAG AA contrast (axe checks it). */
const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: 'md',
  // Mantine's close button is an icon alone: every dialog's gets a name.
  components: { Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close dialog' } } }) },
});
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)', '--mantine-color-error': 'var(--mantine-color-red-9)' },
  dark: {},
});


/** A new client (and an empty cache) per session: nothing of one user's data survives logging out. */
export function App() {
  const token = useToken();
  const { client, dispose } = useMemo(() => createHeraldClient(token), [token]);
  useEffect(() => dispose, [dispose]);
  return (
    <MantineProvider theme={theme} cssVariablesResolver={contrast} getStyleNonce={() => styleNonce}>
      <Provider value={client}>
        <Suspense fallback={<PageLoader />}>
          <RouterProvider router={router} />
        </Suspense>
      </Provider>
    </MantineProvider>
  );
}
