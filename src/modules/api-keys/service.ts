import { z } from 'zod';
import type { Role } from '../auth/caller.js';
import { nowMs } from '../../db/database.js';
import { tenant } from '../../db/tenant.js';
import { iso } from '../../lib/ids.js';
import * as v from '../../lib/validation.js';
import { listOf, operation } from '../../operation.js';
import { generateApiKey, hashApiKey, visiblePrefix } from './format.js';
import { record } from '../audit/record.js';

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

/** What an audit entry says of a key: never its value or hash. */
const keyDetails = (row: ApiKeyRow) => ({ name: row.name, role: row.role, prefix: row.prefix });

// Keys are managed by an admin signed in as a person, never by another key.
const ADMIN_JWT = { role: 'admin', apiKeys: false } as const;

export const create = operation({
  access: ADMIN_JWT,
  input: z.strictObject({ name: v.name(), role: v.role().default('user') }),
  async run(ctx, input) {
    const key = generateApiKey();
    const row = await ctx.db.transaction(async (trx) => {
      const [created] = (await trx('api_keys')
        .insert({
          organization_id: ctx.caller.orgId,
          name: input.name,
          role: input.role,
          prefix: visiblePrefix(key),
          key_hash: hashApiKey(key),
          created_by: ctx.caller.userId,
        })
        .returning(COLUMNS)) as ApiKeyRow[];
      await record(trx, ctx, { action: 'api_key.created', resourceType: 'api_key', resourceId: created!.id, details: keyDetails(created!) });
      return created!;
    });
    return { apiKey: toDto(row), key };
  },
});

export const list = listOf(ADMIN_JWT, 'api_keys', COLUMNS, toDto);

/** Revoking twice is harmless: the first revocation time is kept. */
export const revoke = operation({
  access: ADMIN_JWT,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const current = await t.owned<ApiKeyRow>('api_keys', id, COLUMNS, { forUpdate: true });
      if (current.revoked_at) return current;
      const [updated] = (await t
        .scoped('api_keys')
        .where({ id })
        .update({ revoked_at: nowMs(ctx.db), updated_at: nowMs(ctx.db) })
        .returning(COLUMNS)) as ApiKeyRow[];
      await record(trx, ctx, { action: 'api_key.revoked', resourceType: 'api_key', resourceId: id, details: keyDetails(updated!) });
      return updated!;
    });
    ctx.callers.forgetKey(id);
    return toDto(row);
  },
});

export const remove = operation({
  access: ADMIN_JWT,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const key = await t.owned<ApiKeyRow>('api_keys', id, COLUMNS);
      await t.scoped('api_keys').where({ id }).delete();
      await record(trx, ctx, { action: 'api_key.deleted', resourceType: 'api_key', resourceId: id, details: keyDetails(key) });
    });
    ctx.callers.forgetKey(id);
    return { message: 'API key deleted successfully' };
  },
});
