import { z } from 'zod';
import type { Config } from '../config/config.js';
import type { Access } from '../operation.js';
import { API_INDEX, PUBLIC_PATHS, type PublicPath } from './public-paths.js';
import { RESPONSES } from './responses.js';
import { queryFilters, queryParams, type Route } from './rest.js';

/**
 * The OpenAPI 3.1 description of the REST surface (`GET /openapi.json`), generated from the route
 * table and the operations' zod schemas, never written by hand: each route gives its method, path,
 * success status and shape (a page, a download, an upload), each operation who may run it and the
 * shape of its input (a JSON body, or the query of a list or download). A request body's schema is
 * zod's own JSON Schema of the input as a client sends it (`io: 'input'`).
 */

type Json = Record<string, unknown>;

const { version } = API_INDEX;

/** The error shape every 4xx and 5xx answers (decisions.md, "Validation and errors"). */
export const errorSchema = z
  .object({
    statusCode: z.number().int().describe('The HTTP status.'),
    message: z.string().describe('What went wrong; a validation error names every failing field, joined with `; `.'),
    error: z.string().describe("The status's reason phrase (`Bad Request`)."),
    details: z
      .array(z.object({ field: z.string(), message: z.string() }))
      .optional()
      .describe('Validation errors: one per failing field.'),
  })
  .describe('An error.');

/** Why a route can answer each error status, given what it takes and who may call it. */
const ERRORS: Record<number, string> = {
  400: 'The input is invalid (every failing field named).',
  401: 'No credential, or one that is refused.',
  403: "The caller's role or credential may not do this, or the resource is another organization's.",
  404: 'No such resource.',
  405: 'The path exists with other methods (`Allow` lists them).',
  402: 'The credits do not cover it.',
  409: 'The resource is not in a state that allows this, or the same `Idempotency-Key` is still being answered.',
  410: 'The link was real but can no longer be used (accepted, expired or revoked).',
  413: 'The body is too large.',
  415: 'The body is not of a type the route reads.',
  422: 'The `Idempotency-Key` was already used with a different request.',
  429: 'Too many requests (`Retry-After` says when to try again).',
  502: 'The provider refused the message (a single recipient).',
  503: 'The database is unreachable for now.',
};

/** Not a documented answer of any operation: the shape a server failure still answers in. */
const SERVER_ERROR = { E500: { description: 'The server failed (a bug, logged with the request id).', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } } };

/** The credentials of `access`: a JWT (`Authorization: Bearer`), and an API key in the header or the query when the operation takes keys. */
function security(access: Access): Json[] {
  if ('public' in access) return [];
  const jwt = { bearerAuth: [] };
  return access.apiKeys ? [jwt, { apiKeyHeader: [] }, { apiKeyQuery: [] }] : [jwt];
}

const toSchema = (schema: z.ZodType, io: 'input' | 'output' = 'input'): Json => {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  return json;
};

/** An object schema's properties as query parameters (arrays and objects as `deepObject`-free strings: the API reads them as text). */
function queryParameters(schema: z.ZodType): Json[] {
  const json = toSchema(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    ...(property.description ? { description: property.description } : {}),
    schema: stripDescription(property),
  }));
}

const stripDescription = ({ description: _d, ...rest }: Json): Json => rest;

const PAGE_PARAMETERS: Json[] = [
  { name: 'limit', in: 'query', required: false, description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
  { name: 'cursor', in: 'query', required: false, description: "The `Link` header's cursor for the next page.", schema: { type: 'string' } },
];

/** `/campaigns/:id` as OpenAPI writes it, and its path parameters. */
function pathOf(path: string): { path: string; parameters: Json[] } {
  const names = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  return {
    path: path.replace(/:(\w+)/g, '{$1}'),
    parameters: names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
  };
}

/** A stable operation id: `get /campaigns/:id/runs` is `getCampaignsIdRuns`. */
const operationId = (route: Route) =>
  route.method +
  route.path
    .split(/[/:.-]/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

/** Where the input comes from: a JSON body, the query (lists and downloads), an upload, or nothing. */
function inputOf(route: Route): 'body' | 'query' | 'upload' | 'none' {
  if (route.upload) return 'upload';
  if (route.input === queryFilters || route.input === queryParams) return 'query';
  if (route.input) return 'none';
  return route.op.input ? 'body' : 'none';
}

/** The success answer's schema: the route's own (`./responses.ts`), else a JSON value (an array for a list). */
function answerSchema(route: Route): Json {
  const described = RESPONSES[`${route.method} ${route.path}`];
  if (described) return toSchema(described, 'output');
  return route.list ? { type: 'array', items: { type: 'object' } } : {};
}

function operationOf(route: Route): { path: string; method: string; operation: Json } {
  const { path, parameters } = pathOf(route.path);
  const { access } = route.op;
  const input = inputOf(route);
  const status = route.status ?? 200;
  const tag = route.path.split('/')[1]!;

  if (input === 'query' && route.op.input) parameters.push(...queryParameters(route.op.input));
  if (route.list) parameters.push(...PAGE_PARAMETERS);

  let requestBody: Json | undefined;
  if (input === 'body') {
    requestBody = { required: true, content: { 'application/json': { schema: toSchema(route.op.input!) } } };
  } else if (input === 'upload') {
    const options = route.op.input ? (toSchema(route.op.input) as { properties?: Json }) : { properties: {} };
    requestBody = {
      required: true,
      description: 'A CSV file: as the body (`text/csv`, the options in the query string), or as the `file` part of a form after the option fields.',
      content: {
        'text/csv': { schema: { type: 'string' } },
        'multipart/form-data': { schema: { type: 'object', properties: { ...options.properties, file: { type: 'string', contentMediaType: 'text/csv' } }, required: ['file'] } },
      },
    };
    if (route.op.input) parameters.push(...queryParameters(route.op.input).map((p) => ({ ...p, required: false })));
  }

  const success: Json = route.stream === 'answer'
    ? { description: 'The answer, written as it is produced: a failure once it has started cuts it short.', content: { 'application/json': { schema: answerSchema(route) } } }
    : route.stream
    ? route.streamType === 'application/json'
      ? { description: 'A JSON document, streamed as a download.', content: { 'application/json': { schema: { type: 'object' } } } }
      : { description: 'A CSV download, streamed.', content: { 'text/csv': { schema: { type: 'string' } } } }
    : {
        description: route.list ? 'A page, newest first.' : 'The answer.',
        ...(route.list
          ? {
              headers: {
                'X-Total-Count': { $ref: '#/components/headers/X-Total-Count' },
                Link: { $ref: '#/components/headers/Link' },
              },
            }
          : {}),
        content: { 'application/json': { schema: answerSchema(route) } },
      };

  // Every route can be refused its input or its headers (a cursor, two credentials), its method,
  // its rate, a credential, and the database's absence.
  const errors = new Set<number>([400, 401, 405, 429, 503]);
  if (!('public' in access)) errors.add(403);
  if (input === 'body' || input === 'upload') [413, 415].forEach((s) => errors.add(s));
  if (route.path.includes(':')) [403, 404, 409].forEach((s) => errors.add(s));
  if (route.method === 'post') [402, 409, 422].forEach((s) => errors.add(s));
  if (route.path.startsWith('/notifications/send')) errors.add(502);
  // An invitation link outlives its use: the message says whether it was accepted, expired or revoked.
  if (route.path.startsWith('/invitations/accept/')) errors.add(410);
  for (const status of route.errors ?? []) errors.add(status);
  const responses: Json = { [String(status)]: success };
  for (const code of [...errors].sort()) responses[String(code)] = { $ref: `#/components/responses/E${code}` };

  return {
    path,
    method: route.method,
    operation: {
      operationId: operationId(route),
      tags: [tag],
      summary: `${route.method.toUpperCase()} ${route.path}`,
      description: 'public' in access ? 'No credential.' : `${access.role === 'admin' ? 'Admins' : 'Any role'}${access.apiKeys ? ', with a JWT or an API key of that role' : ', with a JWT only'}.`,
      security: security(access),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    },
  };
}

/** A path outside the route table (`./public-paths.ts`): public, each answer with its media types. */
function publicOperationOf(entry: PublicPath): { path: string; method: string; operation: Json } {
  const { path, parameters } = pathOf(entry.path);
  const responses: Json = {};
  for (const [status, answer] of Object.entries(entry.answers)) {
    const content: Json = {};
    if (answer.json) content['application/json'] = { schema: toSchema(answer.json, 'output') };
    if (answer.error) content['application/json'] = { schema: { $ref: '#/components/schemas/Error' } };
    for (const type of answer.types ?? []) content[type] = { schema: { type: 'string' } };
    responses[status] = { description: answer.description, ...(Object.keys(content).length ? { content } : {}) };
  }
  return {
    path,
    method: entry.method,
    operation: {
      operationId: operationId({ method: entry.method, path: entry.path === '/' ? '/index' : entry.path } as Route),
      tags: [entry.tag],
      summary: `${entry.method.toUpperCase()} ${entry.path}`,
      description: `${entry.summary} No credential.`,
      security: [],
      ...(parameters.length ? { parameters } : {}),
      responses,
    },
  };
}

/**
 * The OpenAPI 3.1 document of `routes`, served at `publicUrl`, with the public paths outside the
 * table (`PUBLIC_PATHS`): every REST path Herald serves.
 */
export function openApiDocument(routes: readonly Route[], config: Pick<Config, 'publicUrl'>): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const { path, method, operation } of [...routes.map(operationOf), ...PUBLIC_PATHS.map(publicOperationOf)]) {
    (paths[path] ??= {})[method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald',
      version,
      description:
        'A multi-tenant notification platform: SMS, email and WhatsApp to contacts, groups and campaigns. Every error answers the `Error` shape; lists are newest first and paged with `limit` and `cursor` (`X-Total-Count`, and `Link` when more remain).',
    },
    servers: [{ url: config.publicUrl }],
    tags: [...new Set([...routes.map((r) => r.path.split('/')[1]!), ...PUBLIC_PATHS.map((p) => p.tag)])].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'The token of `POST /auth/login` or `/auth/signup`.' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'UNIFIED-API-Key', description: 'An API key (`POST /api-keys`).' },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'apikey', description: 'An API key in the query string.' },
      },
      schemas: { Error: toSchema(errorSchema) },
      headers: {
        'X-Total-Count': { description: 'How many items the whole list holds.', schema: { type: 'integer' } },
        Link: { description: 'The next page: `<path?cursor=...>; rel="next"`, when more remain.', schema: { type: 'string' } },
      },
      responses: {
        ...Object.fromEntries(
          Object.entries(ERRORS).map(([code, description]) => [`E${code}`, { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]),
        ),
        ...SERVER_ERROR,
      },
    },
  };
}
