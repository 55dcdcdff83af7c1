import type { Caller, Credentials, Deps } from '../../context.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { hashApiKey, isWellFormedApiKey } from '../api-keys/format.js';
import type { TokenService } from './tokens.js';

const BEARER = /^Bearer ([^\s]+)$/i;

/**
 * Turns the request's credential into a caller, re-reading the user or key on every request so
 * that deactivation, deletion, role changes, password changes and revocation apply at once.
 */
export async function authenticate(deps: Deps, tokens: TokenService, creds: Credentials): Promise<Caller | null> {
  const given = [creds.authorization, creds.headerKey, creds.queryKey].filter((c) => c !== undefined);
  if (given.length === 0) return null;
  const twoKeysInOneHeader = creds.headerKey?.includes(',');
  if (given.length > 1 || Array.isArray(creds.queryKey) || twoKeysInOneHeader) throw badRequest('Provide exactly one credential');
  if (creds.authorization !== undefined) return fromToken(deps, tokens, creds.authorization);
  return fromApiKey(deps, (creds.headerKey ?? creds.queryKey) as string);
}

async function fromToken(deps: Deps, tokens: TokenService, header: string): Promise<Caller> {
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('Invalid token');
  const claims = tokens.verify(match[1]!);
  if (!isUuid(claims.userId) || !isUuid(claims.orgId)) throw unauthorized('Invalid token');
  const user = await deps.db('users')
    .where({ id: claims.userId })
    .first('organization_id', 'role', 'is_active', 'tokens_valid_after');
  const valid =
    user &&
    user.organization_id === claims.orgId &&
    user.is_active &&
    user.role === claims.role &&
    claims.iat >= Number(user.tokens_valid_after);
  if (!valid) throw unauthorized('Invalid token');
  return { orgId: claims.orgId, role: user.role, via: 'jwt', userId: claims.userId, apiKeyId: null };
}

async function fromApiKey(deps: Deps, value: string): Promise<Caller> {
  if (!isWellFormedApiKey(value)) throw unauthorized('Invalid API key');
  const key = await deps.db('api_keys')
    .where({ key_hash: hashApiKey(value) })
    .first('id', 'organization_id', 'role', 'created_by', 'revoked_at');
  if (!key || key.revoked_at) throw unauthorized('Invalid API key');
  deps.keyUsage.touch(key.id);
  return { orgId: key.organization_id, role: key.role, via: 'apiKey', userId: key.created_by, apiKeyId: key.id };
}
