import { z } from 'zod';
import { nowMs } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { badRequest } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { groupColumns, toGroupDto, type GroupRow } from './dto.js';

// The role matrix: everyone in the organization reads, admins (and admin-role keys) write.
const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;
const DUPLICATE = 'A group with this name already exists';

/** A Tailwind class list: `bg-blue-500`, `text-white hover:bg-blue-600`, `bg-[#1da1f2]`. */
const color = () =>
  z
    .string()
    .trim()
    .min(1)
    .max(100)
    .regex(/^[\w:/.\-[\]#%()]+( [\w:/.\-[\]#%()]+)*$/, 'must be a Tailwind CSS class list');

const description = () => z.string().trim().max(500).nullable();

async function load(db: Parameters<typeof tenant>[0], orgId: string, id: string) {
  const t = tenant(db, orgId);
  await t.owned('groups', id, ['id']);
  return toGroupDto((await t.scoped('groups').where('groups.id', id).first(groupColumns(db, orgId))) as GroupRow);
}

export const list = operation({
  access: READ,
  async run(ctx, _input: undefined, page: PageRequest) {
    const query = tenant(ctx.db, ctx.caller.orgId).scoped('groups').select(groupColumns(ctx.db, ctx.caller.orgId));
    return paginateAs(query, 'groups', page, toGroupDto);
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return load(ctx.db, ctx.caller.orgId, id);
  },
});

export const create = operation({
  access: WRITE,
  input: z.strictObject({ name: v.name(), description: description().optional(), color: color() }),
  async run(ctx, input) {
    try {
      const [row] = await ctx.db('groups')
        .insert({ organization_id: ctx.caller.orgId, name: input.name, description: input.description ?? null, color: input.color })
        .returning('id');
      return load(ctx.db, ctx.caller.orgId, row.id);
    } catch (err) {
      if (isUniqueViolation(err, 'organization_id, lower(name)')) throw badRequest(DUPLICATE);
      throw err;
    }
  },
});

export const update = operation({
  access: WRITE,
  input: z.strictObject({ name: v.name().optional(), description: description().optional(), color: color().optional() }),
  async run(ctx, input, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    await t.owned('groups', id, ['id']);
    try {
      await t.scoped('groups').where('groups.id', id).update({ ...input, updated_at: nowMs(ctx.db) });
    } catch (err) {
      if (isUniqueViolation(err, 'organization_id, lower(name)')) throw badRequest(DUPLICATE);
      throw err;
    }
    return load(ctx.db, ctx.caller.orgId, id);
  },
});

/** Memberships go with the group (ON DELETE CASCADE), in the same statement. */
export const remove = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    await t.owned('groups', id, ['id']);
    await t.scoped('groups').where('groups.id', id).delete();
    return { message: 'Group deleted successfully' };
  },
});
