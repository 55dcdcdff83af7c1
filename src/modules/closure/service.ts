import { z } from 'zod';
import type { Knex } from 'knex';
import type { AuthedContext, Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { inBatches } from '../../db/batches.js';
import { setLocal } from '../../db/settings.js';
import { run } from '../../db/statements.js';
import { addJobStatement, inTransaction, removeJobStatement } from '../../jobs/queue.js';
import { badRequest, conflict, notFound } from '../../lib/errors.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';
import { passwordMatches } from '../auth/passwords.js';
import { checkCode } from '../two-factor/check.js';
import { loginState } from '../two-factor/store.js';
import * as sql from './sql.js';

/**
 * Closing an organization. An admin asks, signed in and giving their password again (and a code of
 * their two-factor authentication, when they use it); the organization keeps working through a
 * grace period (`CLOSURE_GRACE_DAYS`, 7 unless the platform sets another), when any admin may cancel.
 * Then one job deletes every row of the organization: its members and keys first (every session
 * and key stops working), what the delivery engine and the job queue hold for it, each tenant table
 * in short batches (resting between them, as retention does, so other organizations' sending keeps
 * the machine), and the organization itself. The closure stays, recording when and how many rows
 * of each table went, and nothing personal.
 *
 * The job is resumable and idempotent: run again after a crash it finds less to delete and ends
 * the same. On Citus every statement names the organization, so it runs on the organization's shard.
 */

export const CLOSURE_TASK = 'close-organization';
/** Rows per statement, and how long the deletion rests after each full batch (times the batch's time). */
export const BATCH = 2000;
const REST_FACTOR = 4;

type Status = 'scheduled' | 'cancelled' | 'deleting' | 'deleted';

interface ClosureRow {
  id: string;
  organization_id: string;
  status: Status;
  requested_at: Date;
  delete_after: Date;
  cancelled_at: Date | null;
  deleted_at: Date | null;
  rows_deleted: Record<string, number>;
}

export interface ClosureDto {
  _id: string;
  status: Status;
  requestedAt: string;
  /** When the organization's rows are deleted, unless the closing is cancelled first. */
  deleteAfter: string;
  cancelledAt: string | null;
}

const COLUMNS = ['id', 'organization_id', 'status', 'requested_at', 'delete_after', 'cancelled_at', 'deleted_at', 'rows_deleted'];

const toDto = (row: ClosureRow): ClosureDto => ({
  _id: row.id,
  status: row.status,
  requestedAt: row.requested_at.toISOString(),
  deleteAfter: row.delete_after.toISOString(),
  cancelledAt: row.cancelled_at?.toISOString() ?? null,
});

const jobKey = (orgId: string) => `closure:${orgId}`;
type Payload = { orgId: string; closureId: string };

/** The organization's open closure (scheduled, or deleting), if any. */
async function openClosure(db: Db | Knex.Transaction, orgId: string): Promise<ClosureRow | undefined> {
  return db('organization_closures').where({ organization_id: orgId }).whereIn('status', ['scheduled', 'deleting']).first(COLUMNS);
}

/** The organization's closing as the organization shows it: the open one, else null. */
export async function closingOf(db: Db | Knex.Transaction, orgId: string): Promise<ClosureDto | null> {
  const row = await openClosure(db, orgId);
  return row ? toDto(row) : null;
}

/**
 * The caller proves it is them again: their password, throttled as logins are, and a code when
 * they use two-factor authentication. A wrong one is 400, not 401: the session itself is good.
 */
async function reauthenticate(ctx: AuthedContext, password: string, code: string | undefined): Promise<void> {
  const user = (await ctx.db('users').where({ id: ctx.caller.userId, organization_id: ctx.caller.orgId }).first('email', 'password_hash')) as
    | { email: string; password_hash: string }
    | undefined;
  if (!user) throw notFound();
  const email = user.email.toLowerCase();
  await ctx.throttle.check(email, ctx.clientIp);
  if (!(await passwordMatches(password, user.password_hash))) {
    await ctx.throttle.failed(email, ctx.clientIp);
    throw badRequest('Password is incorrect');
  }
  await ctx.throttle.succeeded(email);
  if (!(await loginState(ctx.db, ctx.caller.userId!, ctx.caller.orgId)).enabled) return;
  if (!code) throw badRequest('code is required: your account uses two-factor authentication');
  if (!(await checkCode(ctx, ctx.caller.userId!, code))) throw badRequest('Authentication code is incorrect');
}

/** `POST /organizations/current/closure`: closes the organization after the grace period; 202 with the closure. Admins, by JWT. */
export const close = operation({
  access: { role: 'admin', apiKeys: false },
  input: z.strictObject({
    password: z.string().min(1).max(1024),
    code: z.string().trim().min(1).max(64).optional(),
  }),
  async run(ctx, { password, code }): Promise<ClosureDto> {
    await reauthenticate(ctx, password, code);
    const orgId = ctx.caller.orgId;
    return ctx.db.transaction(async (trx) => {
      // One closing at a time: the organization's row locked, then the open closure looked for.
      await trx('organizations').where({ id: orgId }).forUpdate().first('id');
      if (await openClosure(trx, orgId)) throw conflict('The organization is already closing');
      const [row] = (await trx('organization_closures')
        .insert({
          organization_id: orgId,
          requested_by: ctx.caller.userId,
          delete_after: trx.raw(`date_trunc('milliseconds', now()) + make_interval(days => ?)`, [ctx.config.closureGraceDays]),
        })
        .returning(COLUMNS)) as ClosureRow[];
      const payload: Payload = { orgId, closureId: row!.id };
      await run(trx, addJobStatement, inTransaction({ task: CLOSURE_TASK, payload, runAt: row!.delete_after, jobKey: jobKey(orgId), maxAttempts: 25 }));
      await record(trx, ctx, { action: 'organization.closing_requested', resourceType: 'organization', resourceId: orgId, details: { closureId: row!.id, deleteAfter: row!.delete_after.toISOString() } });
      return toDto(row!);
    });
  },
});

/** `DELETE /organizations/current/closure`: cancels the closing during its grace period; the closure, cancelled. Admins, by JWT. */
export const cancel = operation({
  access: { role: 'admin', apiKeys: false },
  async run(ctx): Promise<ClosureDto> {
    const orgId = ctx.caller.orgId;
    return ctx.db.transaction(async (trx) => {
      await trx('organizations').where({ id: orgId }).forUpdate().first('id');
      const open = await openClosure(trx, orgId);
      if (!open) throw notFound('The organization is not closing');
      if (open.status === 'deleting') throw conflict('The organization is being deleted; its closing can no longer be cancelled');
      const [row] = (await trx('organization_closures')
        .where({ id: open.id, status: 'scheduled' })
        .update({ status: 'cancelled', cancelled_at: trx.raw(`date_trunc('milliseconds', now())`) })
        .returning(COLUMNS)) as ClosureRow[];
      await run(trx, removeJobStatement, { jobKey: jobKey(orgId) });
      await record(trx, ctx, { action: 'organization.closing_cancelled', resourceType: 'organization', resourceId: orgId, details: { closureId: row!.id } });
      return toDto(row!);
    });
  },
});

/** The caller's organization's closing, or null (GraphQL `organization { closure }`, read alone). */
export const current = operation({
  access: { role: 'any', apiKeys: false },
  run: (ctx): Promise<ClosureDto | null> => closingOf(ctx.db, ctx.caller.orgId),
});

/** `GET /organizations/current/closure`: the organization's closing, 404 when it is not closing. */
export const get = operation({
  access: { role: 'any', apiKeys: false },
  async run(ctx): Promise<ClosureDto> {
    const closing = await closingOf(ctx.db, ctx.caller.orgId);
    if (!closing) throw notFound('The organization is not closing');
    return closing;
  },
});

/** One step of the deletion: a table (or a group of the coordinator's rows) emptied of the organization. */
type Step = { name: string; run: (db: Db) => Promise<number> };

function steps(orgId: string): Step[] {
  const org = { orgId };
  const batches = (statement: (typeof sql.TENANT_DELETES)[number]['statement'], table: string) => (db: Db) =>
    inBatches(
      () =>
        // The audit log gives up its entries only to the closing of their own organization (see the migration).
        table === 'audit_log'
          ? db.transaction(async (trx) => {
              await setLocal(trx, 'herald.closing', orgId);
              return (await run(trx, statement, { orgId, limit: BATCH }))[0]?.deleted ?? 0;
            })
          : run(db, statement, { orgId, limit: BATCH }).then((rows) => rows[0]?.deleted ?? 0),
      { limit: BATCH, restFactor: REST_FACTOR },
    );
  return [
    {
      // The members first, so that no session or key acts on what is being deleted (authentication
      // hears of their deletion on commit), with what the login and quota throttles count for them.
      name: 'users',
      run: (db) =>
        db.transaction(async (trx) => {
          const members = await run(trx, sql.memberEmails, org);
          const keys = [
            ...members.flatMap((m) => [`login_email:${m.email.toLowerCase()}`, `mfa_user:${m.id}`]),
            `quota_requests:${orgId}`,
            `quota_messages:${orgId}`,
          ];
          const counters = (await run(trx, sql.deleteCounters, { keys }))[0]!.deleted;
          const apiKeys = (await run(trx, sql.deleteApiKeys, org))[0]!.deleted;
          return counters + apiKeys + (await run(trx, sql.deleteUsers, org))[0]!.deleted;
        }),
    },
    ...sql.ENGINE_DELETES.map(({ table, statement }) => ({
      name: table,
      run: async (db: Db) => (await run(db, statement, { orgId, task: CLOSURE_TASK }))[0]!.deleted,
    })),
    ...sql.TENANT_DELETES.map(({ table, statement }) => ({ name: table, run: batches(statement, table) })),
    { name: 'organizations', run: async (db: Db) => (await run(db, sql.deleteOrganization, org))[0]!.deleted },
  ];
}

/** How many steps a deletion takes. */
export const STEP_COUNT = steps('00000000-0000-0000-0000-000000000000').length;

/**
 * The job: once the grace period is over, deletes every row of the organization, step by step, and
 * records what went in the closure. A cancelled closure is left alone; one whose time has not come
 * (the job run early) waits for it. `now` moves the clock (tests); `stopAfter` ends it after that
 * many steps (a crash, in tests).
 */
export async function runClosure(db: Db, { orgId, closureId }: Payload, options: { now?: Date; stopAfter?: number } = {}): Promise<'deleted' | 'waiting' | 'skipped' | 'stopped'> {
  const now = options.now ?? new Date();
  // Scheduled and due (or already deleting) becomes deleting in one conditional write: a cancel that
  // commits first leaves nothing to take, and one that comes after finds it deleting (409).
  const [closure] = (await db('organization_closures')
    .where({ id: closureId, organization_id: orgId })
    .where((w) => w.where('status', 'deleting').orWhere((due) => due.where('status', 'scheduled').where('delete_after', '<=', now)))
    .update({ status: 'deleting', started_at: db.raw('coalesce(started_at, now())') })
    .returning(COLUMNS)) as ClosureRow[];
  if (!closure) {
    const found = (await db('organization_closures').where({ id: closureId, organization_id: orgId }).first('status')) as { status: Status } | undefined;
    return found?.status === 'scheduled' ? 'waiting' : 'skipped';
  }
  const counts: Record<string, number> = { ...closure.rows_deleted };
  let done = 0;
  for (const step of steps(orgId)) {
    if (options.stopAfter !== undefined && done >= options.stopAfter) return 'stopped';
    const deleted = await step.run(db);
    counts[step.name] = (counts[step.name] ?? 0) + deleted;
    // How far it got, kept as it goes (a step a crash cut short is counted from what the next run finds).
    await db('organization_closures').where({ id: closureId }).update({ rows_deleted: JSON.stringify(counts) });
    done++;
  }
  await db('organization_closures')
    .where({ id: closureId })
    .update({ status: 'deleted', deleted_at: db.raw(`date_trunc('milliseconds', now())`), requested_by: null, rows_deleted: JSON.stringify(counts) });
  // Its own job, when it was run otherwise (a running one is only kept from running again).
  await run(db, removeJobStatement, { jobKey: jobKey(orgId) });
  return 'deleted';
}

/** The closing's job, for the worker lane that runs data work (imports, erasures, retention). */
export const closureTasks = (deps: Pick<Deps, 'db' | 'queue'>) => ({
  [CLOSURE_TASK]: async (payload: unknown) => {
    const job = payload as Payload;
    // Run early (a clock set back, a job moved): queued again for the closure's time.
    if ((await runClosure(deps.db, job)) === 'waiting') {
      const row = (await deps.db('organization_closures').where({ id: job.closureId }).first('delete_after')) as { delete_after: Date };
      await deps.queue.add({ task: CLOSURE_TASK, payload: job, runAt: row.delete_after, jobKey: jobKey(job.orgId), maxAttempts: 25 });
    }
  },
});
