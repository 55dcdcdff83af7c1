import type { CombinedError } from 'urql';

/** One field the server named in a 400's `details`. */
export interface FieldProblem {
  field: string;
  message: string;
}

interface ErrorExtensions {
  code?: string;
  statusCode?: number;
  details?: FieldProblem[];
}

function extensionsOf(error: CombinedError | undefined): ErrorExtensions[] {
  return (error?.graphQLErrors ?? []).map((e) => (e.extensions ?? {}) as ErrorExtensions);
}

/** The HTTP status Herald gave the first error (`extensions.statusCode`), or the transport's. */
export function statusOf(error: CombinedError | undefined): number | undefined {
  const fromGraph = extensionsOf(error).find((x) => x.statusCode)?.statusCode;
  if (fromGraph) return fromGraph;
  const response = error?.response as { status?: number } | undefined;
  return response?.status;
}

/**
 * The messages of a 400's `details`, by field: `input.email` and `email` both land on `email`, so a
 * form puts each message next to the control the server named.
 */
export function fieldErrors(error: CombinedError | undefined): Record<string, string> {
  const byField: Record<string, string> = {};
  for (const ext of extensionsOf(error)) {
    for (const d of ext.details ?? []) {
      const field = d.field.replace(/^input\./, '');
      byField[field] ??= d.message;
    }
  }
  return byField;
}

/** A sentence for the user: the server's own message, without urql's "[GraphQL]" prefix. */
export function messageOf(error: CombinedError | undefined): string | null {
  if (!error) return null;
  if (error.networkError) return 'Herald could not be reached. Check your connection and try again.';
  return error.graphQLErrors[0]?.message ?? error.message.replace(/^\[\w+\]\s*/, '');
}
