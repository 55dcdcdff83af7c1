import { z } from 'zod';
import type { AuthedContext, Deps } from '../../context.js';
import type { Db } from '../../db/database.js';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { setLocal } from '../../db/settings.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { addJobStatement, inTransaction } from '../../jobs/queue.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';
import { addressProblems, contactAddresses, personAddress } from '../contacts/person.js';
import { ERASURE_STEPS, ERASURE_STEP_COUNT, suppressErasedEmail } from './sql.js';
import { erasureKey } from './keys.js';
import { addressPattern, erasedToken } from './tokens.js';

/**
 * Erasure of a person (the right to erasure of Kenya's Data Protection Act and the GDPR): the
 * contact is deleted, and wherever Herald keeps the person's addresses (message logs and their
 * recipients, receipts, engagement events, the sandbox outbox, webhook events and their attempts,
 * import rows and errors, campaigns' manual recipients and batches, bounces, idempotent answers,
 * the audit log's details) each is replaced by its token (tokens.ts), so counts and analytics keep
 * adding up. The suppression of an email address survives under its token, and an erased email
 * address is suppressed whether or not it was before: campaigns and sends to every contact leave it
 * out if it ever comes back.
 *
 * A request records the erasure (its tokens, never the addresses) and queues one job, which holds
 * the addresses until it ends. The job runs `ERASURE_STEPS` in order, each set-based over one table
 * in a transaction of its own; run again (a retry after a crash, a second request) it finds nothing
 * left to change and completes, so it is idempotent and resumable.
 */

export const ERASURE_TASK = 'erase-person';
const ACCESS = { role: 'admin', apiKeys: true } as const;

interface ErasureRow {
  id: string;
  contact_id: string | null;
  channels: string[];
  tokens: string[];
  status: 'pending' | 'done';
  steps_done: number;
  rows_changed: number;
  created_at: Date;
  finished_at: Date | null;
}

export interface ErasureDto {
  _id: string;
  contactId: string | null;
  /** What was erased: `email`, `phone`. */
  channels: string[];
  /** The tokens that stand for the erased addresses wherever they were. */
  tokens: string[];
  status: 'pending' | 'done';
  /** Steps done of `steps`. */
  stepsDone: number;
  steps: number;
  /** Rows changed or removed. */
  rowsChanged: number;
  createdAt: string;
  finishedAt: string | null;
}

const COLUMNS = ['id', 'contact_id', 'channels', 'tokens', 'status', 'steps_done', 'rows_changed', 'created_at', 'finished_at'].map((c) => `erasures.${c}`);

const toDto = (row: ErasureRow): ErasureDto => ({
  _id: row.id,
  contactId: row.contact_id,
  channels: row.channels,
  tokens: row.tokens,
  status: row.status,
  stepsDone: row.steps_done,
  steps: row.channels.length * ERASURE_STEP_COUNT,
  rowsChanged: Number(row.rows_changed),
  createdAt: row.created_at.toISOString(),
  finishedAt: row.finished_at?.toISOString() ?? null,
});

type Payload = {
  orgId: string;
  erasureId: string;
  addresses: string[];
};

/** Records the erasure of `addresses` and queues its job, in one transaction; answers the erasure. */
async function request(ctx: AuthedContext, addresses: string[], contactId: string | null): Promise<ErasureDto> {
  const orgId = ctx.caller.orgId;
  const key = (await erasureKey(ctx.db, orgId, true))!;
  const tokens = addresses.map((a) => erasedToken(key, a));
  const channels = addresses.map((a) => (a.includes('@') ? 'email' : 'phone'));
  return ctx.db.transaction(async (trx) => {
    const [row] = (await trx('erasures')
      .insert({ organization_id: orgId, contact_id: contactId, channels, tokens, requested_by: ctx.caller.userId })
      .returning(COLUMNS.map((c) => c.replace('erasures.', '')))) as ErasureRow[];
    const payload: Payload = { orgId, erasureId: row!.id, addresses };
    await run(trx, addJobStatement, inTransaction({ task: ERASURE_TASK, payload, jobKey: `erasure:${orgId}:${row!.id}`, maxAttempts: 25 }));
    await record(trx, ctx, { action: 'contact.erased', resourceType: 'contact', resourceId: contactId, details: { erasureId: row!.id, channels, tokens } });
    return toDto(row!);
  });
}

/** `POST /contacts/:id/erase`: erases the contact and its addresses everywhere; 202 with the erasure. */
export const eraseContact = operation({
  access: ACCESS,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<ErasureDto> {
    const { contactId, addresses } = await contactAddresses(ctx, id);
    return request(ctx, addresses, contactId);
  },
});

/** `POST /erasures`: erases an address everywhere (every contact that has it included); 202 with the erasure. */
export const eraseAddress = operation({
  access: ACCESS,
  input: z.strictObject({ address: z.string().min(1).max(320) }),
  check: (ctx, { address }) => addressProblems(ctx, address),
  async run(ctx, { address }): Promise<ErasureDto> {
    return request(ctx, [await personAddress(ctx, address)], null);
  },
});

/** `GET /erasures`: the organization's erasures, newest first. */
export const list = operation({
  access: ACCESS,
  async run(ctx, _input: undefined, page: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId).scoped('erasures').select(COLUMNS);
    return paginateAs(q, 'erasures', page, toDto);
  },
});

/** `GET /erasures/:id`: one erasure and how far its job got. */
export const get = operation({
  access: ACCESS,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<ErasureDto> {
    return toDto(await tenant(ctx.db, ctx.caller.orgId).owned<ErasureRow>('erasures', id, COLUMNS));
  },
});

/**
 * The job: every step for every address, then the erased email addresses suppressed and the
 * erasure done. `stopAfter` ends it after that many steps of the first address (a crash, in tests).
 */
export async function runErasure(db: Db, { orgId, erasureId, addresses }: Payload, options: { stopAfter?: number } = {}): Promise<void> {
  const key = await erasureKey(db, orgId);
  if (!key) return;
  let steps = 0;
  for (const address of addresses) {
    const params = { orgId, address, token: erasedToken(key, address), pattern: addressPattern(address) };
    for (const { statement } of ERASURE_STEPS) {
      if (options.stopAfter !== undefined && steps >= options.stopAfter) return;
      await db.transaction(async (trx) => {
        // The one change the audit log takes (see the migration); local to this transaction.
        await setLocal(trx, 'herald.erasing', 'on');
        const [row] = await run(trx, statement, params);
        await trx('erasures')
          .where({ organization_id: orgId, id: erasureId })
          .update({ steps_done: trx.raw('greatest(steps_done, ?)', [steps + 1]), rows_changed: trx.raw('rows_changed + ?', [row?.changed ?? 0]) });
      });
      steps++;
    }
    if (address.includes('@')) await run(db, suppressErasedEmail, { orgId, token: params.token });
  }
  await db('erasures').where({ organization_id: orgId, id: erasureId, status: 'pending' }).update({ status: 'done', finished_at: db.fn.now() });
}

/** The erasure's job, for the worker lane that runs data work (imports, erasures). */
export const erasureTasks = (deps: Pick<Deps, 'db'>) => ({
  [ERASURE_TASK]: async (payload: unknown) => runErasure(deps.db, payload as Payload),
});
