import type { z } from 'zod';
import { paginateAs, type Page, type PageRequest } from './db/pagination.js';
import { tenant } from './db/tenant.js';
import type { AuthedContext, Context } from './context.js';
import type { Role } from './modules/auth/caller.js';
import { authenticationRequired, forbidden, validationFailed, type FieldProblem } from './lib/errors.js';
import { validate, type Passed } from './lib/validation.js';

/**
 * Who may run an operation. Deny by default: an operation names its role, and API keys reach
 * only the operations that say so.
 */
export type Access = { public: true } | { role: Role | 'any'; apiKeys: boolean; duringTwoFactorSetup?: boolean };

/**
 * The 403 of a session whose organization requires two-factor authentication before the user has
 * enrolled: only the operations marked `duringTwoFactorSetup` (reading oneself, enrolling) run.
 */
export const TWO_FACTOR_REQUIRED = 'Two-factor authentication is required by your organization: set it up to continue';

type Output<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface OperationSpec<S extends z.ZodType | undefined, P, O, C> {
  access: Access;
  input?: S;
  /**
   * The input's rules that need the caller or the database: the organization's country for a phone,
   * ids that must be the caller's own, a stored value an update is merged with. They run in the same
   * pass as `input`'s, on the fields that passed it (`failed` names those that did not), and their
   * problems are named in the same 400.
   */
  check?(ctx: C, input: Passed<Output<S>>, params: P, failed: ReadonlySet<string>): Promise<FieldProblem[]>;
  run(ctx: C, input: Output<S>, params: P): Promise<O>;
}

/**
 * A service entry point, carrying who may run it and the shape of its input: the API description
 * (`/openapi.json`) is read from them.
 */
export type Operation<P, O> = ((ctx: Context, input: unknown, params: P) => Promise<O>) & { readonly access: Access; readonly input?: z.ZodType };

/**
 * Every service entry point goes through here, whichever door it came in by: credential (401),
 * then the shape of the input (400), then permission (403), then the input's rules that read the
 * database (400, named together with the shape's); the business rules come after, in `run`.
 */
export function operation<S extends z.ZodType | undefined, P = Record<string, never>, O = unknown>(
  spec: OperationSpec<S, P, O, AuthedContext> & { access: { role: Role | 'any'; apiKeys: boolean; duringTwoFactorSetup?: boolean } },
): Operation<P, O>;
export function operation<S extends z.ZodType | undefined, P = Record<string, never>, O = unknown>(
  spec: OperationSpec<S, P, O, Context> & { access: { public: true } },
): Operation<P, O>;
export function operation<S extends z.ZodType | undefined, P, O>(
  spec: OperationSpec<S, P, O, Context & Partial<AuthedContext>>,
): Operation<P, O> {
  const run = async (ctx: Context, raw: unknown, params: P): Promise<O> => {
    const access = spec.access;
    let runCtx: Context & Partial<AuthedContext> = ctx;
    if (!('public' in access)) {
      const caller = await ctx.authenticate();
      if (!caller) throw authenticationRequired();
      runCtx = { ...ctx, caller };
    }
    const validated = spec.input ? validate(spec.input, raw ?? {}) : undefined;
    if (!('public' in access)) {
      const caller = runCtx.caller!;
      const denied = (caller.via === 'apiKey' && !access.apiKeys) || (access.role === 'admin' && caller.role !== 'admin');
      const setupFirst = caller.twoFactorSetupRequired === true && !access.duringTwoFactorSetup;
      // A malformed input is named before permission, as ever; a caller without it never reaches `check`.
      if ((denied || setupFirst) && validated?.problems.length) throw validationFailed(validated.problems);
      if (setupFirst) throw forbidden(TWO_FACTOR_REQUIRED);
      if (denied) throw forbidden();
    }
    if (validated) {
      const { problems, passed, failed } = validated;
      const found = spec.check && passed !== undefined ? [...problems, ...(await spec.check(runCtx, passed as Passed<Output<S>>, params, failed))] : problems;
      if (found.length) throw validationFailed(found);
    }
    return spec.run(runCtx, validated?.value as Output<S>, params);
  };
  return Object.assign(run, { access: spec.access, input: spec.input });
}

/** The plain list of a tenant table: the caller's organization's rows, newest first, paged, as DTOs. */
export function listOf<Row extends { created_at: Date; id: string }, Dto>(
  access: { role: Role | 'any'; apiKeys: boolean },
  table: string,
  columns: readonly string[],
  toDto: (row: Row) => Dto,
): Operation<PageRequest, Page<Dto>> {
  return operation({
    access,
    run: (ctx, _input: undefined, page: PageRequest) => paginateAs(tenant(ctx.db, ctx.caller.orgId).scoped(table).select(columns), table, page, toDto),
  });
}
