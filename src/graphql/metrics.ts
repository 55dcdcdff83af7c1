import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, type DocumentNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { Context } from '../context.js';
import { graphqlOperationDuration, secondsSince } from '../lib/metrics.js';

/**
 * The first field an operation selects at its root (`contacts`, `launchCampaign`), looking into
 * fragments. Its label: a name from the schema, so the set of labels is bounded by the schema, where
 * the client's operation name is free text (a label per distinct name would let any client grow the
 * metrics without bound).
 */
export function rootField(operation: OperationDefinitionNode, document: DocumentNode): string | null {
  const seen = new Set<string>();
  const first = (set: SelectionSetNode): string | null => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) return selection.name.value;
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const found = first(selection.selectionSet);
        if (found) return found;
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value);
        const found = fragment?.kind === Kind.FRAGMENT_DEFINITION ? first(fragment.selectionSet) : null;
        if (found) return found;
      }
    }
    return null;
  };
  return first(operation.selectionSet);
}

/**
 * Records each GraphQL request over HTTP in `herald_graphql_operation_duration_seconds`, by operation
 * type and root field, `unknown`/`invalid` for a document refused before it ran (unparsable, invalid,
 * over a limit), and whether it answered errors.
 */
export const operationMetrics: ApolloServerPlugin<Context> = {
  async requestDidStart() {
    const start = process.hrtime.bigint();
    let type = 'unknown';
    let operation = 'invalid';
    return {
      async didResolveOperation({ operation: op, document }) {
        if (!op) return;
        type = op.operation;
        operation = rootField(op, document) ?? 'invalid';
      },
      async willSendResponse({ errors }) {
        graphqlOperationDuration.observe({ type, operation, outcome: errors?.length ? 'error' : 'success' }, secondsSince(start));
      },
    };
  },
};
