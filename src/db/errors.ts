/** SQLSTATE checks for the places that translate a database error into a domain one. */
const code = (err: unknown): string | undefined => (err as { code?: string } | null)?.code;

export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  code(err) === '23505' && (!constraint || (err as { constraint?: string }).constraint === constraint);

export const isForeignKeyViolation = (err: unknown): boolean => code(err) === '23503';
