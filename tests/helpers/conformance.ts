import { appendFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../src/http/openapi.js';
import { routes } from '../../src/http/routes.js';

/**
 * Every REST answer the test suite receives is checked against the OpenAPI document Herald serves
 * (`src/http/openapi.ts`, from the same route table): its status must be one the operation
 * describes, and its body must match the response's schema (compiled with ajv). Paths outside the
 * route table (GraphQL, health, the public pages and provider webhooks) are not part of it.
 * `OPENAPI_CONFORMANCE_LOG=<file>` records mismatches there instead of failing.
 */

type Json = Record<string, any>;

let compiled: { document: Json; matchers: { method: string; pattern: RegExp; path: string }[] } | null = null;
const validators = new Map<string, ValidateFunction>();

function load() {
  if (compiled) return compiled;
  const document = openApiDocument(routes, { publicUrl: 'http://localhost' });
  const matchers = Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.keys(item).map((method) => ({ method, path, pattern: new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`) })),
  );
  // Literal paths first: `/users/me` is not `/users/{id}`.
  matchers.sort((a, b) => (a.path.includes('{') ? 1 : 0) - (b.path.includes('{') ? 1 : 0));
  compiled = { document, matchers };
  return compiled;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

/** A `$ref` of the document, followed. */
function resolve(document: Json, node: Json): Json {
  let current = node;
  while (current?.$ref) current = current.$ref.slice(2).split('/').reduce((o: Json, k: string) => o[k], document);
  return current;
}

function validatorFor(key: string, schema: Json, document: Json): ValidateFunction {
  let v = validators.get(key);
  if (!v) {
    // Refs inside a schema point at the document's components.
    v = ajv.compile({ ...schema, $defs: undefined, components: document.components });
    validators.set(key, v);
  }
  return v;
}

/** Why the answer does not conform, or null. */
export function mismatch(method: string, url: string, status: number, headers: Headers, body: unknown): string | null {
  const { document, matchers } = load();
  const path = url.split('?')[0]!;
  const m = method.toLowerCase();
  const found = matchers.find((x) => x.method === m && x.pattern.test(path));
  if (!found) return null;
  const operation = document.paths[found.path][m] as Json;
  let described = operation.responses[String(status)];
  // A server failure is never the client's to expect (other tests refuse them): only its shape is checked.
  if (!described && status >= 500) described = { $ref: '#/components/responses/E500' };
  if (!described) return `${method} ${found.path}: status ${status} is not described (${Object.keys(operation.responses).join(', ')})`;
  const response = resolve(document, described);
  const type = headers.get('content-type') ?? '';
  const content = response.content as Json | undefined;
  if (!content) return null;
  const mediaType = Object.keys(content).find((t) => type.startsWith(t));
  if (!mediaType) return `${method} ${found.path} ${status}: content type ${type || '(none)'} is not described (${Object.keys(content).join(', ')})`;
  if (mediaType !== 'application/json') return null;
  const schema = resolve(document, content[mediaType].schema ?? {});
  const validate = validatorFor(`${m} ${found.path} ${status}`, schema, document);
  if (!validate(body)) return `${method} ${found.path} ${status}: ${ajv.errorsText(validate.errors)}`;
  if (response.headers?.['X-Total-Count'] && status < 300 && headers.get('x-total-count') === null) return `${method} ${found.path} ${status}: no X-Total-Count`;
  return null;
}

/** Fails (or records) an answer that does not conform to the document. */
export function assertConforms(method: string, url: string, status: number, headers: Headers, body: unknown): void {
  const problem = mismatch(method, url, status, headers, body);
  if (!problem) return;
  const log = process.env.OPENAPI_CONFORMANCE_LOG;
  if (log) appendFileSync(log, `${problem}\n`);
  else throw new Error(`the answer does not conform to /openapi.json: ${problem}`);
}
