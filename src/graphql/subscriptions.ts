import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import {
  getOperationAST,
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type GraphQLSchema,
} from 'graphql';
import type { Context as SocketContext, SubscribePayload } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Deps } from '../context.js';
import { createContext } from '../http/context.js';
import { authenticationRequired, badRequest, toHttpError, type HttpError } from '../lib/errors.js';
import { authenticate } from '../modules/auth/authenticate.js';
import type { Credentials } from '../modules/auth/caller.js';
import { depthLimit } from './depth-limit.js';
import { buildSchema } from './schema.js';
import { formatError, MAX_DEPTH, MAX_TOKENS } from './server.js';

/** The largest message a client may send: a subscription document and its variables. */
const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long sockets get to close politely when the server stops, before they are cut. */
const CLOSE_GRACE_MS = 1_000;

/** What a connection keeps from its `connection_init`: its credential and where it comes from. */
interface Connection {
  credentials: Credentials;
  clientIp: string;
}

type Socket = SocketContext<Record<string, unknown>, Extra & Partial<Connection>>;

export interface Subscriptions {
  /** Closes every socket (subscriptions end, their listeners go) and stops accepting new ones. */
  close(): Promise<void>;
}

/** Two values of one name (in different cases) are two credentials, refused as HTTP refuses them. */
const joined = (had: string | undefined, given: string) => (had === undefined ? given : `${had},${given}`);

/**
 * The connection's credential, from the `connection_init` payload as HTTP headers would carry it:
 * `Authorization: Bearer <jwt>` or `UNIFIED-API-Key: <key>`, names in any case.
 */
function credentialsOf(params: Record<string, unknown> | undefined): Credentials {
  const credentials: Credentials = {};
  for (const [name, value] of Object.entries(params ?? {})) {
    const key = name.toLowerCase();
    if (key === 'authorization') credentials.authorization = joined(credentials.authorization, String(value));
    else if (key === 'unified-api-key') credentials.headerKey = joined(credentials.headerKey, String(value));
  }
  return credentials;
}

/** The client's address as Express would give it for an HTTP request (`TRUST_PROXY`: the first forwarded one). */
function clientIpOf(request: IncomingMessage, trustProxy: boolean): string {
  const forwarded = request.headers['x-forwarded-for'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  return (trustProxy && first) || request.socket.remoteAddress || 'unknown';
}

/**
 * A refused connection is closed with 4000 plus the HTTP status the same credential gets over HTTP
 * (4401 for none or a bad one, 4400 for two) and its reason phrase. Returns false for graphql-ws,
 * whose own close (4403) then does nothing: the socket is already closing.
 */
function refuse(socket: Socket, error: HttpError): false {
  socket.extra.socket.close(error.statusCode < 500 ? 4000 + error.statusCode : 4500, error.error);
  return false;
}

/**
 * Parses and validates an operation as Apollo does for `POST /graphql`: the same token and depth
 * limits, and no introspection in production. Only subscriptions are served here; queries and
 * mutations go over HTTP, where the cost and alias limits apply.
 */
function prepare(schema: GraphQLSchema, production: boolean, payload: SubscribePayload): ExecutionArgs | readonly GraphQLError[] {
  let document: DocumentNode;
  try {
    document = parse(payload.query, { maxLexicalTokens: MAX_TOKENS });
  } catch (err) {
    return [err as GraphQLError];
  }
  const rules = [...specifiedRules, depthLimit(MAX_DEPTH), ...(production ? [NoSchemaIntrospectionCustomRule] : [])];
  const problems = validate(schema, document, rules);
  if (problems.length) return problems;
  const operation = getOperationAST(document, payload.operationName);
  if (operation?.operation !== 'subscription') {
    const refused = badRequest(operation ? 'Only subscriptions are served over WebSocket; send queries and mutations to POST /graphql' : 'Unknown operation');
    return [new GraphQLError(refused.message, { originalError: refused })];
  }
  return { schema, document, operationName: payload.operationName, variableValues: payload.variables };
}

/**
 * GraphQL subscriptions over WebSocket (`graphql-ws`) on Herald's HTTP server, at `/graphql` (upgrade
 * requests only: every other request to `/graphql` stays Apollo's). The credential, given once in
 * `connection_init`, is checked then and again for each operation, whose context is built by the
 * same code as an HTTP request's; errors are formatted as Apollo formats them.
 */
export function attachSubscriptions(server: Server, deps: Deps): Subscriptions {
  const production = deps.config.env === 'production';
  const format = formatError(deps.log, production);
  const schema = buildSchema();
  const wss = new WebSocketServer({ server, path: '/graphql', maxPayload: MAX_MESSAGE_BYTES });
  const { dispose } = useServer<Record<string, unknown>, Partial<Connection>>(
    {
      isProd: production,
      async onConnect(socket) {
        const credentials = credentialsOf(socket.connectionParams);
        try {
          // Checked without counting against the quota: each operation counts, as a request does.
          if (!(await authenticate(deps, deps.tokens, credentials))) return refuse(socket, authenticationRequired());
        } catch (err) {
          return refuse(socket, toHttpError(err));
        }
        socket.extra.credentials = credentials;
        socket.extra.clientIp = clientIpOf(socket.extra.request, deps.config.trustProxy);
        return true;
      },
      onSubscribe: (_socket, _id, payload) => prepare(schema, production, payload),
      context: (socket) =>
        createContext(deps, {
          requestId: randomUUID(),
          clientIp: socket.extra.clientIp ?? 'unknown',
          credentials: () => socket.extra.credentials ?? {},
        }),
      onNext: (_socket, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: result.errors.map((e) => format(e.toJSON(), e)) } : undefined,
      onError: (_socket, _id, _payload, errors) => errors.map((e) => format(e.toJSON(), e)),
    },
    wss,
  );
  return {
    async close() {
      for (const socket of wss.clients) socket.close(1001, 'Going away');
      const cut = setTimeout(() => wss.clients.forEach((socket) => socket.terminate()), CLOSE_GRACE_MS);
      try {
        await dispose();
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
