import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import type { Context } from '../context.js';

/** The page size a list answers when `first` is not given (decisions.md: `limit` defaults to 100). */
const DEFAULT_PAGE = 100;

/** A paginated list costs its selection once per item it may return. */
const pagedList: ComplexityEstimator = ({ field, args, childComplexity }) => {
  if (!field.args.some((a) => a.name === 'first')) return undefined;
  const first = typeof args.first === 'number' ? Math.max(0, args.first) : DEFAULT_PAGE;
  return 1 + first * childComplexity;
};

/**
 * Refuses operations whose worst-case answer is too large, counted once the variables are known:
 * every field costs 1, and a field taking `first` multiplies its selection by it (so `first` given
 * as a variable counts the same as one written inline, which graphql-armor's cost rule misses).
 * A full page of 1,000 contacts with their fields and groups costs about 20,000; two nested lists of
 * the default 100 about 50,000; a third nested list, or 1,000 groups with 1,000 contacts each, runs
 * into the millions.
 */
export function costLimit(maxCost: number): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema }) {
          let cost: number;
          try {
            cost = getComplexity({
              schema,
              query: document,
              operationName: request.operationName ?? undefined,
              variables: request.variables ?? {},
              estimators: [pagedList, simpleEstimator({ defaultComplexity: 1 })],
            });
          } catch {
            // Variables that do not fit their types: execution refuses them with its own 400.
            return;
          }
          if (cost > maxCost) {
            throw new GraphQLError(`Query cost limit of ${maxCost} exceeded, found ${cost}.`, {
              extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } },
            });
          }
        },
      };
    },
  };
}
