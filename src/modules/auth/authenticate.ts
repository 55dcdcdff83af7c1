import type { Db } from '../../db/database.js';
import { run, statement } from '../../db/statements.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { hashApiKey, isWellFormedApiKey } from '../api-keys/format.js';
import type { KeyUsage } from '../api-keys/usage.js';
import type { CallerCache } from './caller-cache.js';
import type { Caller, Credentials, Role } from './caller.js';
import type { TokenService } from './tokens.js';

const BEARER = /^Bearer ([^\s]+)$/i;

// The rows authentication reads (through the caller cache). Fixed statements, prepared once per pooled connection by name: built
// through knex's query builder, the lookup cost about twice the Node CPU of the round trip itself
// (bench/auth.ts). Only the columns the checks need; a revoked key is filtered out by the statement.
// Whether the user must still enrol in two-factor authentication is read with them (the organization
// requires it and the user has none confirmed): such a session may only enrol.
const userById = statement<{ id: string }, UserRow>(
  'herald_auth_user',
  `SELECT u.organization_id, u.role, u.is_active, u.tokens_valid_after,
          o.require_two_factor AND NOT EXISTS (
            SELECT 1 FROM user_two_factor t WHERE t.user_id = u.id AND t.confirmed_at IS NOT NULL
          ) AS two_factor_setup_required
     FROM users u JOIN organizations o ON o.id = u.organization_id
    WHERE u.id = :id`,
);
const activeKeyByHash = statement<{ hash: Buffer }, KeyRow>(
  'herald_auth_api_key',
  'SELECT id, organization_id, role, created_by FROM api_keys WHERE key_hash = :hash AND revoked_at IS NULL',
);

export interface UserRow {
  organization_id: string;
  role: Role;
  is_active: boolean;
  tokens_valid_after: number;
  two_factor_setup_required: boolean;
}

export interface KeyRow {
  id: string;
  organization_id: string;
  role: Role;
  created_by: string | null;
}

/** What authentication needs of the process: the database and the caller cache over it. */
export interface AuthDeps {
  db: Db;
  callers: CallerCache<UserRow, KeyRow>;
  keyUsage: KeyUsage;
}

/**
 * Turns the request's credential into a caller. The user or key row is read through the caller cache
 * (`deps.callers`): reused for a moment at most and dropped the moment it changes anywhere, so that
 * deactivation, deletion, role changes, password changes and revocation apply at once.
 */
export async function authenticate(deps: AuthDeps, tokens: TokenService, creds: Credentials): Promise<Caller | null> {
  const given = [creds.authorization, creds.headerKey, creds.queryKey].filter((c) => c !== undefined);
  if (given.length === 0) return null;
  const twoKeysInOneHeader = creds.headerKey?.includes(',');
  if (given.length > 1 || Array.isArray(creds.queryKey) || twoKeysInOneHeader) throw badRequest('Provide exactly one credential');
  if (creds.authorization !== undefined) return fromToken(deps, tokens, creds.authorization);
  return fromApiKey(deps, (creds.headerKey ?? creds.queryKey) as string);
}

async function fromToken(deps: AuthDeps, tokens: TokenService, header: string): Promise<Caller> {
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('Invalid token');
  const claims = tokens.verify(match[1]!);
  if (!isUuid(claims.userId) || !isUuid(claims.orgId)) throw unauthorized('Invalid token');
  const user = await deps.callers.user(claims.userId, () => run(deps.db, userById, { id: claims.userId }).then((rows) => rows[0]));
  const valid =
    user &&
    user.organization_id === claims.orgId &&
    user.is_active &&
    claims.iat >= Number(user.tokens_valid_after);
  if (!valid) throw unauthorized('Invalid token');
  // The stored role governs, whatever the token's role claim says: a promotion or a demotion applies
  // at once to the tokens the user already holds (the claim is informational, never a reason for 401).
  const caller: Caller = { orgId: claims.orgId, role: user.role, via: 'jwt', userId: claims.userId, apiKeyId: null };
  if (user.two_factor_setup_required) caller.twoFactorSetupRequired = true;
  return caller;
}

async function fromApiKey(deps: AuthDeps, value: string): Promise<Caller> {
  if (!isWellFormedApiKey(value)) throw unauthorized('Invalid API key');
  const hash = hashApiKey(value);
  const key = await deps.callers.key(hash.toString('hex'), () => run(deps.db, activeKeyByHash, { hash }).then((rows) => rows[0]), (row) => row.id);
  if (!key) throw unauthorized('Invalid API key');
  deps.keyUsage.touch(key.id);
  return { orgId: key.organization_id, role: key.role, via: 'apiKey', userId: key.created_by, apiKeyId: key.id };
}
