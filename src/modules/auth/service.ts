import { z } from 'zod';
import * as credits from '../../delivery/credits.js';
import { isUniqueViolation } from '../../db/errors.js';
import { badRequest, unauthorized } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import type { Context } from '../../context.js';
import { loginUser, newUserFields, toUserDto, USER_COLUMNS, type UserRow } from '../users/dto.js';
import { checkCode } from '../two-factor/check.js';
import { loginState } from '../two-factor/store.js';
import { burnComparison, checkPassword, comparable, hashPassword } from './passwords.js';
import { countryTimeZone } from '../../lib/time-zones.js';

const signupInput = z
  .strictObject({
    ...newUserFields(),
    companyName: v.name(),
    sector: v.name(),
    country: v.name(),
    // The first user of an organization is its admin; the field exists for compatibility only.
    role: z.literal('admin', { error: 'must be admin: the first user of an organization is its admin' }).optional(),
  })
  .superRefine(v.personPhone, v.whenPassed('countryCode', 'phoneNumber'));

export const signup = operation({
  access: { public: true },
  input: signupInput,
  async run(ctx, input) {
    const passwordHash = await hashPassword(input.password, ctx.config.bcryptRounds);
    let user: UserRow;
    try {
      user = await ctx.db.transaction(async (trx) => {
        const [org] = await trx('organizations')
          .insert({ name: input.companyName, sector: input.sector, country: input.country, time_zone: countryTimeZone(input.country) ?? 'UTC' })
          .returning('id');
        await credits.open(trx, org.id, ctx.config.signupCredits);
        const [row] = await trx('users')
          .insert({
            organization_id: org.id,
            first_name: input.firstName,
            last_name: input.lastName,
            email: input.email,
            country_code: input.countryCode,
            phone_number: input.phoneNumber,
            role: 'admin',
            password_hash: passwordHash,
          })
          .returning([...USER_COLUMNS, 'tokens_valid_after']);
        return row as UserRow;
      });
    } catch (err) {
      if (isUniqueViolation(err, 'lower(email)')) throw badRequest('Email already exists');
      throw err;
    }
    const token = ctx.tokens.sign({ userId: user.id, orgId: user.organization_id, role: user.role });
    return { token, user: toUserDto(user) };
  },
});

const loginInput = z.strictObject({
  email: z.string().trim().min(1).max(254).transform((s) => s.toLowerCase()),
  password: z.string().min(1).max(1024),
});

export const login = operation({
  access: { public: true },
  input: loginInput,
  async run(ctx, input) {
    await ctx.throttle.check(input.email, ctx.clientIp);
    const user = (await ctx.db('users').whereRaw('lower(email) = ?', [input.email]).first()) as UserRow | undefined;
    // A password over bcrypt's 72 bytes can not match; it still costs a comparison, so that the
    // answer for a known email takes as long as for an unknown one.
    const ok =
      user && comparable(input.password)
        ? (await checkPassword(input.password, user.password_hash)) && user.is_active
        : await burnComparison(input.password, ctx.config.bcryptRounds).then(() => false);
    if (!ok || !user) {
      await ctx.throttle.failed(input.email, ctx.clientIp);
      throw unauthorized('Invalid credentials');
    }
    await ctx.throttle.succeeded(input.email);
    const twoFactor = await loginState(ctx.db, user.id, user.organization_id);
    // The password was right; an enrolled user's session waits for a code (POST /auth/login/mfa).
    if (twoFactor.enabled) {
      return { mfaRequired: true as const, mfaToken: ctx.tokens.signMfa({ userId: user.id, orgId: user.organization_id }, Number(user.tokens_valid_after)) };
    }
    return { ...session(ctx, user), ...(twoFactor.required ? { twoFactorSetupRequired: true as const } : {}) };
  },
});

/** A session for `user`: its token, the interface's short user and the full one (for GraphQL). */
function session(ctx: Context, user: UserRow) {
  const token = ctx.tokens.sign({ userId: user.id, orgId: user.organization_id, role: user.role }, Number(user.tokens_valid_after));
  const fullUser = toUserDto(user);
  return { token, user: loginUser(fullUser), fullUser };
}

/** A login's answer as REST shows it: `{ token, user }` as ever, or what the two-factor step needs. */
export const loginView = (result: Awaited<ReturnType<typeof login>>) => {
  if ('mfaRequired' in result) return { mfaRequired: result.mfaRequired, mfaToken: result.mfaToken };
  return { token: result.token, user: result.user, ...('twoFactorSetupRequired' in result ? { twoFactorSetupRequired: result.twoFactorSetupRequired } : {}) };
};

/**
 * The second step of a two-factor login: the `mfaToken` of a right password and a code (TOTP, or a
 * recovery code, each accepted once) give the session login gives. Wrong codes are throttled per
 * user (10 without a right one) and with the client address's failed logins.
 */
export const loginWithTwoFactor = operation({
  access: { public: true },
  input: z.strictObject({
    mfaToken: z.string().min(1).max(2048),
    code: z.string().trim().min(1).max(64),
  }),
  async run(ctx, input) {
    const claims = ctx.tokens.verifyMfa(input.mfaToken);
    const pending = (await ctx.db('users').where({ id: claims.userId }).first()) as UserRow | undefined;
    // The user still there, active, in that organization and without a password change since.
    const valid = pending && pending.organization_id === claims.orgId && pending.is_active && claims.iat >= Number(pending.tokens_valid_after);
    if (!valid) throw unauthorized('Invalid mfaToken');
    if (!(await checkCode(ctx, pending.id, input.code))) throw unauthorized('Invalid authentication code');
    return session(ctx, pending);
  },
});

/** Used by password changes: tokens issued before the next whole second stop working. */
export const revokeTokensNow = () => Math.floor(Date.now() / 1000) + 1;
