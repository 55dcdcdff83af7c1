import { defineConfig, type Plugin } from 'vite';

/** The module graphql-codegen's client preset generates every typed document into. */
const DOCUMENTS = new URL('./src/gql/graphql.ts', import.meta.url).pathname;

/**
 * Replaces each `graphql(`...`)` call of the console's code by the typed document codegen made of
 * it (`<Name>Document`, or `<Name>FragmentDoc` for a fragment), imported from `gql/graphql.ts`. The
 * types stay those of `gql/gql.ts`, but a page no longer loads its lookup table of every document
 * of the console: each page's bundle carries only its own documents.
 */
function typedDocuments(): Plugin {
  return {
    name: 'herald-typed-documents',
    enforce: 'pre',
    transform(code, id) {
      if (!/\/web\/src\/.*\.tsx?$/.test(id) || id.includes('/web/src/gql/') || !code.includes('graphql(`')) return null;
      const used = new Set<string>();
      const replaced = code.replace(/\bgraphql\(\s*`([\s\S]*?)`\s*\)/g, (call, document: string) => {
        const operation = /^\s*(?:query|mutation|subscription)\s+(\w+)/m.exec(document);
        const fragment = /^\s*fragment\s+(\w+)/m.exec(document);
        const name = operation ? `${operation[1]}Document` : fragment ? `${fragment[1]}FragmentDoc` : null;
        if (!name) throw new Error(`${id}: a graphql() document without a named operation or fragment`);
        used.add(name);
        return name;
      });
      const withoutTag = replaced.replace(/^import \{ graphql \} from '[^']*\/gql';\n/m, '');
      return { code: `import { ${[...used].join(', ')} } from ${JSON.stringify(DOCUMENTS)};\n${withoutTag}`, map: null };
    },
  };
}

/**
 * The console's build: Vite with its own JSX transform (React's automatic runtime), output in
 * `web/dist`, served by Herald at `/`. Every `<script>`, `<style>` and stylesheet link of the page
 * carries the nonce placeholder, which Herald replaces per response (see src/http/console.ts), so the
 * Content-Security-Policy never needs 'unsafe-inline'.
 */
export default defineConfig({
  root: 'web',
  base: '/',
  plugins: [typedDocuments()],
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
