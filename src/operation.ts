import type { z } from 'zod';
import type { AuthedContext, Context } from './context.js';
import type { Role } from './modules/auth/caller.js';
import { forbidden, unauthorized } from './lib/errors.js';
import { parse } from './lib/validation.js';

/**
 * Who may run an operation. Deny by default: an operation names its role, and API keys reach
 * only the operations that say so.
 */
export type Access = { public: true } | { role: Role | 'any'; apiKeys: boolean };

export interface OperationSpec<S extends z.ZodType | undefined, P, O, C> {
  access: Access;
  input?: S;
  run(ctx: C, input: S extends z.ZodType ? z.output<S> : undefined, params: P): Promise<O>;
}

export type Operation<P, O> = (ctx: Context, input: unknown, params: P) => Promise<O>;

/**
 * Every service entry point goes through here, whichever door it came in by: credential (401),
 * then the shape of the input (400), then permission (403); the business rules come after, in
 * `run`.
 */
export function operation<S extends z.ZodType | undefined, P = Record<string, never>, O = unknown>(
  spec: OperationSpec<S, P, O, AuthedContext> & { access: { role: Role | 'any'; apiKeys: boolean } },
): Operation<P, O>;
export function operation<S extends z.ZodType | undefined, P = Record<string, never>, O = unknown>(
  spec: OperationSpec<S, P, O, Context> & { access: { public: true } },
): Operation<P, O>;
export function operation<S extends z.ZodType | undefined, P, O>(
  spec: OperationSpec<S, P, O, Context & Partial<AuthedContext>>,
): Operation<P, O> {
  return async (ctx, raw, params) => {
    const access = spec.access;
    let runCtx: Context & Partial<AuthedContext> = ctx;
    if (!('public' in access)) {
      const caller = await ctx.authenticate();
      if (!caller) throw unauthorized();
      runCtx = { ...ctx, caller };
    }
    const input = (spec.input ? parse(spec.input, raw ?? {}) : undefined) as never;
    if (!('public' in access)) {
      const caller = runCtx.caller!;
      if (caller.via === 'apiKey' && !access.apiKeys) throw forbidden();
      if (access.role === 'admin' && caller.role !== 'admin') throw forbidden();
    }
    return spec.run(runCtx, input, params);
  };
}
