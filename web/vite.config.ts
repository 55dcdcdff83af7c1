import { defineConfig, type Plugin } from 'vite';

/// <reference types="node" />
/** The module graphql-codegen's client preset generates every typed document into. */
const DOCUMENTS = new URL('./src/gql/graphql.ts', import.meta.url).pathname;
const VIRTUAL = 'virtual:herald-document/';

/**
 * Gives each page only its own GraphQL documents. Each `graphql(`...`)` call of the console's code
 * becomes an import of a module holding just the typed document codegen made of it
 * (`<Name>Document`, or `<Name>FragmentDoc` for a fragment), its object copied out of
 * `gql/graphql.ts`, where the client preset writes every document on one line of its own. The
 * types stay those of `gql/gql.ts`; the bundle no longer carries the lookup table of all 76
 * documents, nor one chunk of them all shared by every page.
 */
function typedDocuments(): Plugin {
  return {
    name: 'herald-typed-documents',
    enforce: 'pre',
    resolveId: (id) => (id.startsWith(VIRTUAL) ? `\0${id}` : null),
    async load(id) {
      if (!id.startsWith(`\0${VIRTUAL}`)) return null;
      const name = id.slice(VIRTUAL.length + 1);
      const { readFile } = await import('node:fs/promises');
      const generated = await readFile(DOCUMENTS, 'utf8');
      const line = new RegExp(`^export const ${name} = (\\{.*\\}) as unknown as DocumentNode<.*>;$`, 'm').exec(generated);
      if (!line) throw new Error(`no document ${name} in ${DOCUMENTS}: run npm run codegen`);
      return `export default ${line[1]};`;
    },
    transform(code, id) {
      if (!/\/web\/src\/.*\.tsx?$/.test(id) || id.includes('/web/src/gql/') || !code.includes('graphql(`')) return null;
      const used = new Set<string>();
      const replaced = code.replace(/\bgraphql\(\s*`([\s\S]*?)`\s*\)/g, (_call, document: string) => {
        const operation = /^\s*(?:query|mutation|subscription)\s+(\w+)/m.exec(document);
        const fragment = /^\s*fragment\s+(\w+)/m.exec(document);
        const name = operation ? `${operation[1]}Document` : fragment ? `${fragment[1]}FragmentDoc` : null;
        if (!name) throw new Error(`${id}: a graphql() document without a named operation or fragment`);
        used.add(name);
        return `__${name}`;
      });
      const withoutTag = replaced.replace(/^import \{ graphql \} from '[^']*\/gql';\n/m, '');
      const imports = [...used].map((name) => `import __${name} from '${VIRTUAL}${name}';\n`).join('');
      return { code: imports + withoutTag, map: null };
    },
  };
}

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
