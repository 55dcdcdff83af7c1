import type { Knex } from 'knex';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { tenant } from '../../db/tenant.js';
import { badRequest, conflict, forbidden } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import * as v from '../../lib/validation.js';
import { listOf, operation } from '../../operation.js';
import { hashPassword, passwordMatches } from '../auth/passwords.js';
import { revokeTokensNow } from '../auth/service.js';
import { newUserFields, toUserDto, USER_COLUMNS, type UserRow } from './dto.js';
import { record, type AuditEntryInput } from '../audit/record.js';

const ADMIN = { role: 'admin', apiKeys: false } as const;
const ANY_USER = { role: 'any', apiKeys: false } as const;
const LAST_ADMIN = 'An organization must keep at least one active admin';
/** Another admin does it: an admin locked out by their own click could not undo it. */
const NOT_YOURSELF = { deactivate: 'You can not deactivate yourself: ask another admin', delete: 'You can not delete yourself: ask another admin' };

type Params = { id: string };

export const list = listOf(ADMIN, 'users', USER_COLUMNS, toUserDto);

/**
 * The caller and a summary of their organization, which `GET /users/me` embeds; open to a session
 * that must still enrol in two-factor authentication, so that the console knows whom it shows.
 */
export const me = operation({
  access: { ...ANY_USER, duringTwoFactorSetup: true },
  async run(ctx) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<UserRow>('users', ctx.caller.userId!, [...USER_COLUMNS]);
    const organization = await ctx.loaders.organizationById.load(ctx.caller.orgId);
    return { user: toUserDto(row), organization: organization! };
  },
});

/** Admins read anyone in their organization; a user reads only themself. */
export const get = operation({
  access: ANY_USER,
  async run(ctx, _input: undefined, { id }: Params) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<UserRow>('users', id, [...USER_COLUMNS]);
    if (ctx.caller.role !== 'admin' && row.id !== ctx.caller.userId) throw forbidden();
    return toUserDto(row);
  },
});

export const create = operation({
  access: ADMIN,
  input: z
    .strictObject({
      ...newUserFields(),
      role: v.role().default('user'),
    })
    .superRefine(v.personPhone, v.whenPassed('countryCode', 'phoneNumber')),
  async run(ctx, input) {
    const passwordHash = await hashPassword(input.password, ctx.config.bcryptRounds);
    try {
      return await ctx.db.transaction(async (trx) => {
        const [row] = (await trx('users')
          .insert({
            organization_id: ctx.caller.orgId,
            first_name: input.firstName,
            last_name: input.lastName,
            email: input.email,
            country_code: input.countryCode,
            phone_number: input.phoneNumber,
            role: input.role,
            password_hash: passwordHash,
          })
          .returning(USER_COLUMNS)) as UserRow[];
        await record(trx, ctx, { action: 'user.created', resourceType: 'user', resourceId: row!.id, details: { email: row!.email, role: row!.role } });
        return toUserDto(row!);
      });
    } catch (err) {
      if (isUniqueViolation(err, 'lower(email)')) throw badRequest('Email already exists');
      throw err;
    }
  },
});

/**
 * Runs a change to one user of the caller's organization with the organization's admins locked,
 * refusing it when it would leave no active admin.
 */
async function changeUser(
  ctx: AuthedContext,
  id: string,
  patch: Partial<Pick<UserRow, 'first_name' | 'last_name' | 'phone_number' | 'role' | 'is_active'>>,
): Promise<UserRow> {
  const row = await ctx.db.transaction(async (trx) => {
    const t = tenant(trx, ctx.caller.orgId);
    const user = await t.owned<UserRow>('users', id, [...USER_COLUMNS]);
    const losesAdmin = user.role === 'admin' && user.is_active && (patch.role === 'user' || patch.is_active === false);
    if (losesAdmin) await assertAnotherActiveAdmin(trx, ctx.caller.orgId, user.id);
    if (patch.is_active === false && user.id === ctx.caller.userId) throw badRequest(NOT_YOURSELF.deactivate);
    const [updated] = await t.scoped('users').where({ id }).update({ ...patch, updated_at: nowMs(ctx.db) }).returning(USER_COLUMNS);
    for (const entry of userChanges(user, updated as UserRow)) await record(trx, ctx, entry);
    return updated as UserRow;
  });
  // Other processes hear of it from the trigger; this one forgets at once, so the next request sees it.
  ctx.callers.forgetUser(id);
  return row;
}

/** The API's names of the profile fields an admin may change. */
const PROFILE_FIELDS = { first_name: 'firstName', last_name: 'lastName', phone_number: 'phoneNumber' } as const;

/** The audit entries of a change to a user: activation, role and profile each recorded when they changed. */
function userChanges(before: UserRow, after: UserRow): AuditEntryInput[] {
  const entry = (action: AuditEntryInput['action'], details: Record<string, unknown> = {}): AuditEntryInput => ({
    action,
    resourceType: 'user',
    resourceId: after.id,
    details: { email: after.email, ...details },
  });
  const entries: AuditEntryInput[] = [];
  if (before.is_active !== after.is_active) entries.push(entry(after.is_active ? 'user.reactivated' : 'user.deactivated'));
  if (before.role !== after.role) entries.push(entry('user.role_changed', { from: before.role, to: after.role }));
  const fields = (Object.keys(PROFILE_FIELDS) as (keyof typeof PROFILE_FIELDS)[]).filter((f) => before[f] !== after[f]).map((f) => PROFILE_FIELDS[f]);
  if (fields.length) entries.push(entry('user.updated', { fields }));
  return entries;
}

async function assertAnotherActiveAdmin(trx: Knex.Transaction, orgId: string, exceptId: string): Promise<void> {
  // Locking the organization row serialises concurrent demotions, so two admins can not demote each other at once.
  await trx('organizations').where({ id: orgId }).forUpdate().first('id');
  const other = await tenant(trx, orgId)
    .scoped('users')
    .where({ role: 'admin', is_active: true })
    .whereNot({ id: exceptId })
    .first('id');
  if (!other) throw conflict(LAST_ADMIN);
}

export const update = operation({
  access: ADMIN,
  input: z.strictObject({
    firstName: v.name().optional(),
    lastName: v.name().optional(),
    phoneNumber: v.localPhone().optional(),
    role: v.role().optional(),
  }),
  /** A new phone number must be one for the country code the user has (which no update changes). */
  async check(ctx, input, { id }: Params) {
    if (input.phoneNumber === undefined || !isUuid(id)) return [];
    const user = await tenant(ctx.db, ctx.caller.orgId).scoped('users').where({ id }).first('country_code');
    const problem = user && v.personPhoneProblem(user.country_code, input.phoneNumber);
    return problem ? [{ field: 'phoneNumber', message: `phoneNumber ${problem}` }] : [];
  },
  async run(ctx, input, { id }: Params) {
    const row = await changeUser(ctx, id, {
      first_name: input.firstName,
      last_name: input.lastName,
      phone_number: input.phoneNumber,
      role: input.role,
    });
    return toUserDto(row);
  },
});

export const deactivate = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: Params) {
    return toUserDto(await changeUser(ctx, id, { is_active: false }));
  },
});

export const reactivate = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: Params) {
    return toUserDto(await changeUser(ctx, id, { is_active: true }));
  },
});

export const remove = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: Params) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const user = await t.owned<UserRow>('users', id, [...USER_COLUMNS]);
      if (user.role === 'admin' && user.is_active) await assertAnotherActiveAdmin(trx, ctx.caller.orgId, user.id);
      if (user.id === ctx.caller.userId) throw badRequest(NOT_YOURSELF.delete);
      await record(trx, ctx, { action: 'user.deleted', resourceType: 'user', resourceId: id, details: { email: user.email, role: user.role } });
      await t.scoped('users').where({ id }).delete();
    });
    ctx.callers.forgetUser(id);
    return { message: 'User Deleted Successfully' };
  },
});

export const changePassword = operation({
  access: ANY_USER,
  input: z.strictObject({
    oldPassword: z.string().max(1024).optional(),
    newPassword: v.password(),
  }),
  /** Changing one's own password takes the old one. */
  async check(ctx, input, { id }: Params, failed) {
    const self = id.toLowerCase() === ctx.caller.userId;
    return self && !input.oldPassword && !failed.has('oldPassword') ? [{ field: 'oldPassword', message: 'oldPassword is required' }] : [];
  },
  async run(ctx, input, { id }: Params) {
    const t = tenant(ctx.db, ctx.caller.orgId);
    const user = await t.owned<UserRow>('users', id, [...USER_COLUMNS, 'password_hash']);
    const self = user.id === ctx.caller.userId;
    if (!self && ctx.caller.role !== 'admin') throw forbidden();
    if (self) {
      const old = input.oldPassword ?? '';
      if (!(await passwordMatches(old, user.password_hash))) throw badRequest('Old password is incorrect');
    }
    const passwordHash = await hashPassword(input.newPassword, ctx.config.bcryptRounds);
    const row = await ctx.db.transaction(async (trx) => {
      const [changed] = await tenant(trx, ctx.caller.orgId)
        .scoped('users')
        .where({ id })
        // Always past the previous cut-off, so a token minted after an earlier change in this same
        // second (it carries that cut-off as its iat) is revoked too.
        .update({
          password_hash: passwordHash,
          tokens_valid_after: trx.raw('greatest(?::bigint, tokens_valid_after + 1)', [revokeTokensNow()]),
          updated_at: nowMs(trx),
        })
        .returning(USER_COLUMNS);
      // An admin setting another's password is a reset; one's own change is recorded too (a security event).
      await record(trx, ctx, { action: self ? 'user.password_changed' : 'user.password_reset', resourceType: 'user', resourceId: id, details: { email: user.email } });
      return changed;
    });
    ctx.callers.forgetUser(id);
    return toUserDto(row);
  },
});
