/**
 * Import boundaries (`npm run lint:imports`, part of `npm test`). Layering runs one way:
 * http and graphql -> modules -> delivery, jobs -> db, lib. The composition roots (server.ts,
 * worker.ts, main.ts, tasks.ts, context.ts, operation.ts, cli/) may import any layer.
 */
const TOP = '^src/(http|graphql)/';
const MODULES = '^src/modules/';
const ROOTS = '^src/(server|worker|main|entry|tasks|context|operation|loaders)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'lib-is-the-bottom',
      comment: 'src/lib holds pure helpers: it imports nothing of Herald outside itself.',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'db-imports-lib-only',
      comment: 'src/db (knex, statements, tenancy, paging) sits on lib alone.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: '^src/(db|lib|config)/' },
    },
    {
      name: 'delivery-and-jobs-below-modules',
      comment: 'delivery and jobs serve the modules; they never reach up into modules, the doors or the composition roots.',
      severity: 'error',
      from: { path: '^src/(delivery|jobs)/' },
      to: { path: [MODULES, TOP, ROOTS] },
    },
    {
      name: 'modules-below-the-doors',
      comment: 'Modules hold the business rules; only their GraphQL glue (resolvers.ts) may use the generated types and glue.',
      severity: 'error',
      from: { path: MODULES, pathNot: '/resolvers\\.ts$' },
      to: { path: [TOP, '^src/(server|worker|main|tasks)\\.ts$'] },
    },
    {
      name: 'resolvers-use-graphql-glue-only',
      severity: 'error',
      from: { path: '/resolvers\\.ts$' },
      to: { path: ['^src/http/', '^src/graphql/(?!generated/|glue\\.ts)'] },
    },
    {
      name: 'send-pipeline-internals',
      comment:
        'Only the notifications module sends ad hoc, and a campaign\'s test send (campaigns/dry-run.ts: an ad hoc send of its texts, logged under it); campaigns use the delivery API (retries, credits, sql), not the pipeline.',
      severity: 'error',
      from: { path: MODULES, pathNot: ['^src/modules/notifications/', '^src/modules/campaigns/dry-run\\.ts$'] },
      to: { path: '^src/delivery/pipeline\\.ts$' },
    },
    {
      name: 'sql-text-in-its-home',
      comment: 'Send statements live in src/delivery/sql and are called by delivery and the modules only.',
      severity: 'error',
      from: { pathNot: '^src/(delivery|modules)/' },
      to: { path: '^src/delivery/sql/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^src/graphql/generated/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
