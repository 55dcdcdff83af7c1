import type { Context } from '../../context.js';
import { spendCode } from './store.js';

/** The time as two-factor codes read it: the wall clock unless a test sets another. */
export const clockOf = (ctx: Pick<Context, 'clock'>): Date => (ctx.clock ? ctx.clock() : new Date());

/**
 * Checks and spends a code of the user's confirmed two-factor authentication (a TOTP code or a
 * recovery code), throttled as logins are: the attempt is counted first (429 once spent), a wrong
 * code counts against the client address too, and a right one clears the user's count.
 */
export async function checkCode(ctx: Context, userId: string, code: string): Promise<boolean> {
  await ctx.throttle.codeAttempt(userId, ctx.clientIp);
  const matched = await spendCode(ctx.db, ctx.config.credentialsKey, userId, code, clockOf(ctx));
  if (!matched) {
    await ctx.throttle.codeFailed(ctx.clientIp);
    return false;
  }
  await ctx.throttle.codeSucceeded(userId);
  return true;
}
