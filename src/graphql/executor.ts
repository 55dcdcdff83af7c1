import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { GraphQLError, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** Compiled operations kept per document text and operation name; the oldest go past this many. */
const MAX_COMPILED = 1000;

/**
 * graphql-jit is CommonJS and builds its errors with the CommonJS copy of graphql, while Herald
 * (ESM) checks `instanceof` against the ESM copy: each error is rebuilt here, keeping the original
 * error that carries Herald's status and code, so both doors still answer alike.
 */
function rebuildErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  // No `data` at all: the variables did not fit their types (graphql-js reports the same case
  // before executing, and Apollo answers it as a 400 BAD_USER_INPUT).
  const badInput = !('data' in result);
  const errors = result.errors.map(
    (e) =>
      new GraphQLError(e.message, {
        path: e.path,
        originalError: e.originalError ?? undefined,
        extensions: badInput ? { ...e.extensions, code: 'BAD_USER_INPUT', http: { status: 400 } } : e.extensions,
      }),
  );
  // Locations are kept as graphql-js gives them (the rebuilt error has no source to compute them).
  errors.forEach((err, i) => Object.defineProperty(err, 'locations', { value: result.errors![i]!.locations, enumerable: true }));
  return { ...result, errors };
}

/**
 * Executes operations with graphql-jit: each distinct document is compiled once into a function,
 * instead of graphql-js interpreting every field of every row (14,000 fields for a page of 1,000
 * contacts). Apollo still parses, validates (limits included), runs its plugins and formats the
 * errors; only execution is swapped, through Apollo's executor hook (a "gateway" with one local
 * schema).
 */
export function jitExecution(schema: GraphQLSchema): GatewayInterface {
  const compiled = new Map<string, CompiledQuery>();
  const executor: GatewayExecutor = async (requestContext) => {
    const key = `${requestContext.operationName ?? ''}\n${requestContext.source}`;
    let query = compiled.get(key);
    if (!query) {
      const result = compileQuery(schema, requestContext.document, requestContext.operationName ?? undefined);
      if (!isCompiledQuery(result)) return rebuildErrors(result);
      query = result;
      if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
      compiled.set(key, query);
    }
    return rebuildErrors(await query.query(undefined, requestContext.context, requestContext.request.variables ?? {}));
  };
  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async load() {
      return { executor };
    },
    async stop() {},
  };
}
