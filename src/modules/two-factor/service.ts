import * as audit from '../audit/record.js';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { tenant } from '../../db/tenant.js';
import { conflict, forbidden, validationFailed } from '../../lib/errors.js';
import { operation } from '../../operation.js';
import { toUserDto, USER_COLUMNS, type UserRow } from '../users/dto.js';
import { checkCode, clockOf } from './check.js';
import { newSecret, otpauthUri } from './codes.js';
import {
  confirmPending,
  loginState,
  matchFirstCode,
  recoveryCodesLeft,
  removeTwoFactor,
  replaceRecoveryCodes,
  sealSecret,
  startPending,
  twoFactorRow,
} from './store.js';

/**
 * Two-factor authentication of the caller's own account (JWT only: API keys have no second factor).
 * Enrolling and reading one's state are open to a session that must still enrol because the
 * organization requires it; everything else needs a session that has.
 */
const SELF = { role: 'any', apiKeys: false } as const;
const SELF_DURING_SETUP = { ...SELF, duringTwoFactorSetup: true } as const;

const ALREADY_ENABLED = 'Two-factor authentication is already enabled';
const NOT_ENABLED = 'Two-factor authentication is not enabled';

const codeInput = z.strictObject({
  // A TOTP code from the authenticator app, or (where noted) a recovery code.
  code: z.string().trim().min(1).max(64),
});

const wrongCode = () => validationFailed([{ field: 'code', message: 'code is not a valid authentication code (wrong, expired or already used)' }]);

export interface TwoFactorStatusDto {
  enabled: boolean;
  enabledAt: string | null;
  /** An enrolment was started and waits for its first code. */
  pending: boolean;
  requiredByOrganization: boolean;
  recoveryCodesRemaining: number;
}

async function statusOf(ctx: AuthedContext, userId: string): Promise<TwoFactorStatusDto> {
  const [row, state, left] = await Promise.all([twoFactorRow(ctx.db, userId), loginState(ctx.db, userId, ctx.caller.orgId), recoveryCodesLeft(ctx.db, userId)]);
  return {
    enabled: Boolean(row?.confirmed_at),
    enabledAt: row?.confirmed_at?.toISOString() ?? null,
    pending: Boolean(row && !row.confirmed_at),
    requiredByOrganization: state.required,
    recoveryCodesRemaining: row?.confirmed_at ? left : 0,
  };
}

/** The caller's user id: these operations are JWT only, so there always is one. */
const self = (ctx: AuthedContext) => ctx.caller.userId!;

/** `GET /users/me/two-factor`. */
export const status = operation({
  access: SELF_DURING_SETUP,
  run: (ctx) => statusOf(ctx, self(ctx)),
});

/**
 * `POST /users/me/two-factor`: a new secret, answered once as base32 and as the `otpauth://` URI of
 * a QR code; nothing is protected until `confirm`. Starting again replaces an unconfirmed secret; a
 * confirmed one is 409.
 */
export const startEnrolment = operation({
  access: SELF_DURING_SETUP,
  async run(ctx) {
    const user = await tenant(ctx.db, ctx.caller.orgId).owned<Pick<UserRow, 'id' | 'email'>>('users', self(ctx), ['id', 'email']);
    const secret = newSecret();
    if (!(await startPending(ctx.db, user.id, sealSecret(ctx.config.credentialsKey, secret)))) throw conflict(ALREADY_ENABLED);
    return { secret, otpauthUri: otpauthUri(secret, user.email) };
  },
});

/**
 * `POST /users/me/two-factor/confirm`: the first code from the app turns two-factor authentication
 * on and answers the ten recovery codes, shown this once.
 */
export const confirm = operation({
  access: SELF_DURING_SETUP,
  input: codeInput,
  async run(ctx, input) {
    const userId = self(ctx);
    const row = await twoFactorRow(ctx.db, userId);
    if (!row) throw conflict('No two-factor enrolment to confirm: start one first');
    if (row.confirmed_at) throw conflict(ALREADY_ENABLED);
    await ctx.throttle.codeAttempt(userId, ctx.clientIp);
    const step = await matchFirstCode(ctx.config.credentialsKey, row, input.code, clockOf(ctx));
    if (step === null) {
      await ctx.throttle.codeFailed(ctx.clientIp);
      throw wrongCode();
    }
    const recoveryCodes = await ctx.db.transaction((trx) => confirmPending(trx, userId, row.secret, step));
    if (!recoveryCodes) throw conflict('The enrolment was started again meanwhile: confirm the new one');
    await ctx.throttle.codeSucceeded(userId);
    // A session that had to enrol is a full one from now on, in this process at once (others hear the trigger).
    ctx.callers.forgetUser(userId);
    return { recoveryCodes };
  },
});

/** Refuses a change that needs the caller's confirmed two-factor authentication and a code of it. */
async function requireCode(ctx: AuthedContext, code: string): Promise<void> {
  const row = await twoFactorRow(ctx.db, self(ctx));
  if (!row?.confirmed_at) throw conflict(NOT_ENABLED);
  if (!(await checkCode(ctx, self(ctx), code))) throw wrongCode();
}

/**
 * `DELETE /users/me/two-factor` with `{ code }` (a current code or a recovery code): turns it off.
 * Refused (403) while the organization requires two-factor authentication. Idempotent: without a
 * confirmed second factor there is nothing a code could prove, and an enrolment still waiting for
 * its first code (which protects nothing) is dropped.
 */
export const disable = operation({
  access: SELF,
  input: codeInput,
  async run(ctx, input) {
    const userId = self(ctx);
    const row = await twoFactorRow(ctx.db, userId);
    if (row?.confirmed_at) {
      if ((await loginState(ctx.db, userId, ctx.caller.orgId)).required) {
        throw forbidden('Your organization requires two-factor authentication: it can not be turned off');
      }
      await requireCode(ctx, input.code);
    }
    if (row) await ctx.db.transaction((trx) => removeTwoFactor(trx, userId));
    ctx.callers.forgetUser(userId);
    return statusOf(ctx, userId);
  },
});

/** `POST /users/me/two-factor/recovery-codes` with `{ code }`: ten new recovery codes, the old ones void. */
export const regenerateRecoveryCodes = operation({
  access: SELF,
  input: codeInput,
  async run(ctx, input) {
    await requireCode(ctx, input.code);
    return { recoveryCodes: await ctx.db.transaction((trx) => replaceRecoveryCodes(trx, self(ctx))) };
  },
});

/**
 * `DELETE /users/:id/two-factor` (admin, JWT): turns off a member's two-factor authentication when
 * they lost their device and their recovery codes; where the organization requires it, they enrol
 * again at their next request. An admin's own goes through `disable`, with a code.
 */
export const reset = operation({
  access: { role: 'admin', apiKeys: false },
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const user = await tenant(ctx.db, ctx.caller.orgId).owned<UserRow>('users', id, [...USER_COLUMNS]);
    if (user.id === ctx.caller.userId) throw forbidden('Turn off your own two-factor authentication with a code: DELETE /users/me/two-factor');
    await ctx.db.transaction(async (trx) => {
      await removeTwoFactor(trx, user.id);
      await audit.record(trx, ctx, { action: 'user.two_factor_reset', resourceType: 'user', resourceId: user.id });
    });
    ctx.callers.forgetUser(user.id);
    return toUserDto(user);
  },
});
