import { encodeCursor, type Page, type PageRequest } from '../db/pagination.js';

/**
 * An input's explicit nulls read as "not given", as the services take a field left out; except the
 * fields named in `nullable`, whose null is a value the service takes (it removes what is stored).
 */
export function compact<T extends object>(input: T | null | undefined, nullable: readonly (keyof T & string)[] = []): Partial<T> {
  if (!input) return {};
  return Object.fromEntries(Object.entries(input).filter(([key, value]) => value !== null || nullable.includes(key as keyof T & string))) as Partial<T>;
}

export const pageArgs = (args: { first?: number | null; after?: string | null }): PageRequest => ({
  limit: args.first ?? undefined,
  cursor: args.after ?? undefined,
});

/**
 * An edge whose cursor is encoded only if the query asks for it: a page of 1,000 nodes read without
 * `cursor` (the common case) then costs no Date, Buffer or base64 work per row.
 */
class Edge<T extends { _id: string; createdAt: string }> {
  constructor(readonly node: T) {}
  get cursor(): string {
    return encodeCursor({ created_at: new Date(this.node.createdAt), id: this.node._id });
  }
}

/** A page of API objects as a Relay connection; each edge's cursor is its row's keyset position. */
export function connection<T extends { _id: string; createdAt: string }>(page: Page<T>) {
  const edges = page.items.map((node) => new Edge(node));
  return {
    edges,
    // Relay: endCursor is the last edge's cursor (null only when there are no edges), also on the last page.
    pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: edges.length ? edges[edges.length - 1]!.cursor : null },
    totalCount: page.totalCount,
  };
}
