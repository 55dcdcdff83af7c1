/** SQLSTATE checks for the places that translate a database error into a domain one. */
const code = (err: unknown): string | undefined => (err as { code?: string } | null)?.code;

/**
 * The key a unique violation names in its detail, as Postgres writes it: `Key (organization_id,
 * lower(name))=(...) already exists.` gives `organization_id, lower(name)`. Matched on the key, not on
 * the index's name: on Citus the index a row hits is a shard's, named with the shard's id.
 */
const violatedKey = (err: unknown): string | undefined => /^Key \((.*?)\)=\(/.exec((err as { detail?: string }).detail ?? '')?.[1];

/** A unique violation; given `key`, only of the unique key over those columns (as the detail names them). */
export const isUniqueViolation = (err: unknown, key?: string): boolean => code(err) === '23505' && (!key || violatedKey(err) === key);

export const isForeignKeyViolation = (err: unknown): boolean => code(err) === '23503';
