import { z } from 'zod';
import type { Role } from '../auth/caller.js';
import { nowMs } from '../../db/database.js';
import { tenant } from '../../db/tenant.js';
import { iso } from '../../lib/ids.js';
import * as v from '../../lib/validation.js';
import { listOf, operation } from '../../operation.js';
import { generateApiKey, hashApiKey, visiblePrefix } from './format.js';

interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  role: Role;
  prefix: string;
  created_by: string | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface ApiKeyDto {
  _id: string;
  name: string;
  role: Role;
  prefix: string;
  organization: string;
  createdBy: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

const COLUMNS = ['id', 'organization_id', 'name', 'role', 'prefix', 'created_by', 'last_used_at', 'revoked_at', 'created_at', 'updated_at'];

const toDto = (row: ApiKeyRow): ApiKeyDto => ({
  _id: row.id,
  name: row.name,
  role: row.role,
  prefix: row.prefix,
  organization: row.organization_id,
  createdBy: row.created_by,
  lastUsedAt: iso(row.last_used_at),
  revokedAt: iso(row.revoked_at),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

// Keys are managed by an admin signed in as a person, never by another key.
const ADMIN_JWT = { role: 'admin', apiKeys: false } as const;

export const create = operation({
  access: ADMIN_JWT,
  input: z.strictObject({ name: v.name(), role: v.role().default('user') }),
  async run(ctx, input) {
    const key = generateApiKey();
    const [row] = await ctx.db('api_keys')
      .insert({
        organization_id: ctx.caller.orgId,
        name: input.name,
        role: input.role,
        prefix: visiblePrefix(key),
        key_hash: hashApiKey(key),
        created_by: ctx.caller.userId,
      })
      .returning(COLUMNS);
    return { apiKey: toDto(row), key };
  },
});

export const list = listOf(ADMIN_JWT, 'api_keys', COLUMNS, toDto);

/** Revoking twice is harmless: the first revocation time is kept. */
export const revoke = operation({
  access: ADMIN_JWT,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    const row = await t.owned<ApiKeyRow>('api_keys', id, COLUMNS);
    if (row.revoked_at) return toDto(row);
    const [updated] = await t
      .scoped('api_keys')
      .where({ id })
      .update({ revoked_at: nowMs(ctx.db), updated_at: nowMs(ctx.db) })
      .returning(COLUMNS);
    ctx.callers.forgetKey(id);
    return toDto(updated);
  },
});

export const remove = operation({
  access: ADMIN_JWT,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    await t.owned('api_keys', id, ['id']);
    await t.scoped('api_keys').where({ id }).delete();
    ctx.callers.forgetKey(id);
    return { message: 'API key deleted successfully' };
  },
});
