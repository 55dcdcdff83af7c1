import { encodeCursor, type Page, type PageRequest } from '../db/pagination.js';

/** GraphQL sends explicit nulls for omitted optional inputs; the services treat both as "not given". */
export function compact<T extends object>(input: T | null | undefined): Partial<T> {
  if (!input) return {};
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null)) as Partial<T>;
}

export const pageArgs = (args: { first?: number | null; after?: string | null }): PageRequest => ({
  limit: args.first ?? undefined,
  cursor: args.after ?? undefined,
});

/** A page of API objects as a Relay connection; each edge's cursor is its row's keyset position. */
export function connection<T extends { _id: string; createdAt: string }>(page: Page<T>) {
  const edges = page.items.map((node) => ({ cursor: encodeCursor({ created_at: new Date(node.createdAt), id: node._id }), node }));
  return {
    edges,
    // Relay: endCursor is the last edge's cursor (null only when there are no edges), also on the last page.
    pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: edges.length ? edges[edges.length - 1]!.cursor : null },
    totalCount: page.totalCount,
  };
}
