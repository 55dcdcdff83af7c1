import { defineConfig } from 'vite';

/**
 * The console's build: Vite with its own JSX transform (React's automatic runtime), output in
 * `web/dist`, served by Herald at `/`. Every `<script>`, `<style>` and stylesheet link of the page
 * carries the nonce placeholder, which Herald replaces per response (see src/http/console.ts), so the
 * Content-Security-Policy never needs 'unsafe-inline'.
 */
export default defineConfig({
  root: 'web',
  base: '/',
  html: { cspNonce: 'HERALD_CSP_NONCE' },
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Herald serves the console offline: nothing is inlined as a data: URL the policy would refuse.
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    rolldownOptions: {
      // Mantine marks its modules "use client" (for React Server Components); meaningless in a browser bundle.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
