import { GraphQLJSONObject } from 'graphql-scalars';
import type { Resolvers } from './generated/resolvers-types.js';

/** The custom scalars of `schema/base`, implemented (and, as served, described) by graphql-scalars. */
export const scalars: Resolvers = { JSONObject: GraphQLJSONObject };
