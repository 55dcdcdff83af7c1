import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { ErrorRequestHandler } from 'express';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Context } from '../context.js';
import { fromExpress, HttpError, toHttpError } from '../lib/errors.js';
import { costLimit } from './cost-limit.js';
import { depthLimit } from './depth-limit.js';
import { jitExecution } from './executor.js';
import { operationMetrics } from './metrics.js';
import { buildSchema } from './schema.js';

/** Apollo's own codes for requests that never reached a resolver: all the client's doing. */
const CLIENT_CODES: Record<string, number> = {
  GRAPHQL_PARSE_FAILED: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  BAD_USER_INPUT: 400,
  BAD_REQUEST: 400,
  PERSISTED_QUERY_NOT_FOUND: 400,
  PERSISTED_QUERY_NOT_SUPPORTED: 400,
  OPERATION_RESOLUTION_FAILURE: 400,
};

/** The one place GraphQL errors get their `code` and `statusCode`, the same ones REST answers with. */
export function formatError(log: Logger, production: boolean) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
    if (original instanceof HttpError || !(original instanceof GraphQLError)) {
      const http = original instanceof HttpError ? original : toHttpError(original);
      if (http.statusCode >= 500) log.error({ err: original }, 'graphql resolver failed');
      return {
        message: http.message,
        locations: formatted.locations,
        path: formatted.path,
        extensions: {
          code: http.code,
          statusCode: http.statusCode,
          ...(http.extra.details ? { details: http.extra.details } : {}),
          ...(http.extra.retryAfter ? { retryAfter: http.extra.retryAfter } : {}),
        },
      };
    }
    const code = String(formatted.extensions?.code ?? 'GRAPHQL_VALIDATION_FAILED');
    // Apollo's refusals that carry their own HTTP status (405 for a mutation over GET) report that one.
    const http = (error as GraphQLError).extensions?.http as { status?: number } | undefined;
    const statusCode = http?.status ?? CLIENT_CODES[code] ?? (code === 'INTERNAL_SERVER_ERROR' ? 500 : 400);
    const { stacktrace: _dropped, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions: { ...(production ? {} : extensions), code, statusCode } };
  };
}

/**
 * Errors raised on `/graphql` before Apollo (the body parser's, a body that is not JSON) answered as
 * GraphQL, `{ errors: [...] }`, formatted by `format` like every other, with their HTTP status.
 */
export function graphqlErrorHandler(format: ReturnType<typeof formatError>): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    const error = fromExpress(err) ?? err;
    const http = toHttpError(error);
    if (res.headersSent) return res.end();
    res.set(http.headers());
    res.status(http.statusCode).json({ errors: [format({ message: http.message }, error)] });
  };
}

/**
 * An `operationName` that names no operation of the document (or none given for a document of
 * several) is the client's error, refused before execution: graphql-jit would fail on it with a 500.
 */
const operationResolved: ApolloServerPlugin<Context> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation, request }) {
        if (operation) return;
        const message = request.operationName
          ? `Unknown operation named "${request.operationName}".`
          : 'Must provide operation name if query contains multiple operations.';
        throw new GraphQLError(message, { extensions: { code: 'OPERATION_RESOLUTION_FAILURE', http: { status: 400 } } });
      },
    };
  },
};

/** The largest worst-case answer an operation may ask for (see `cost-limit.ts`). */
export const MAX_COST = 100_000;
/** How deeply an answer may nest (see `depth-limit.ts`), over HTTP and WebSocket alike. */
export const MAX_DEPTH = 10;
/** The most tokens a document may have, counted by graphql's parser. */
export const MAX_TOKENS = 1000;

export async function createApollo(config: Config, log: Logger): Promise<{ apollo: ApolloServer<Context>; errorHandler: ErrorRequestHandler }> {
  const production = config.env === 'production';
  const format = formatError(log, production);
  const armor = new ApolloArmor({
    // Depth is our own rule: it limits introspection too, without refusing the IDE's introspection query.
    maxDepth: { enabled: false },
    maxAliases: { n: 15 },
    // Counted by graphql's own parser (`parseOptions` below): armor's Apollo token plugin throws from a
    // parsing hook, which Apollo answers with HTTP 500 for every syntax error and every long document.
    maxTokens: { enabled: false },
    maxDirectives: { n: 50 },
    // Cost is our own plugin (`cost-limit.ts`): armor's rule runs before variables are known, so a
    // `first` passed as a variable would count as 1.
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: production },
  }).protect();
  const apollo = new ApolloServer<Context>({
    gateway: jitExecution(buildSchema()),
    introspection: !production,
    hideSchemaDetailsFromClientErrors: production,
    includeStacktraceInErrorResponses: false,
    allowBatchedHttpRequests: false,
    // Herald drains and stops Apollo itself; Apollo's own handler (on outside NODE_ENV=test) would
    // stop it and re-raise the signal, killing the process before requests and jobs have drained.
    stopOnTerminationSignals: false,
    csrfPrevention: true,
    parseOptions: { maxLexicalTokens: MAX_TOKENS },
    validationRules: [...armor.validationRules, depthLimit(MAX_DEPTH)],
    plugins: [
      operationMetrics,
      operationResolved,
      ...(armor.plugins as ApolloServerPlugin<Context>[]),
      costLimit(MAX_COST),
      ApolloServerPluginLandingPageDisabled(),
      // No field sets cache hints; the default cache-control plugin would still wrap every resolver.
      ApolloServerPluginCacheControlDisabled(),
    ],
    formatError: format,
  });
  await apollo.start();
  return { apollo, errorHandler: graphqlErrorHandler(format) };
}
