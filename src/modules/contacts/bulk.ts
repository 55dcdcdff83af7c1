import type { Knex } from 'knex';
import { z } from 'zod';
import { nowMs } from '../../db/database.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { tenant, type Tenant } from '../../db/tenant.js';
import { wake } from '../../delivery/outbox.js';
import * as triggers from '../campaigns/triggers.js';
import { CHANNELS } from '../../delivery/types.js';
import { validationFailed, type FieldProblem } from '../../lib/errors.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { setSubscription, type Match } from '../consent/service.js';
import { filterInput, matching, WRITE } from './service.js';
import { record } from '../audit/record.js';

/**
 * Bulk actions (platform.md, "Contacts in bulk"): one action on the contacts named by id, or on
 * every contact a list filter matches (`filter: {}` is all of them), in one transaction of
 * set-based statements whatever their number. The answer's `count` is the contacts the action
 * changed: those deleted, those that joined or left the group, gained or lost the tag, left or
 * rejoined at least one channel (a contact already in the state asked for is matched, not counted).
 */

export const BULK_ACTIONS = ['delete', 'addToGroup', 'removeFromGroup', 'addTag', 'removeTag', 'unsubscribe', 'resubscribe'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
export const MAX_BULK_IDS = 10_000;
/** Decisions.md's limit on a contact's tags. */
const MAX_TAGS = 50;

const GROUP_ACTIONS: readonly BulkAction[] = ['addToGroup', 'removeFromGroup'];
const TAG_ACTIONS: readonly BulkAction[] = ['addTag', 'removeTag'];
const CONSENT_ACTIONS: readonly BulkAction[] = ['unsubscribe', 'resubscribe'];

const bulkInput = z.strictObject({
  action: z.enum(BULK_ACTIONS),
  ids: z.array(v.id()).max(MAX_BULK_IDS).optional(),
  filter: filterInput.optional(),
  group: v.id().optional(),
  tag: z.string().trim().min(1).max(50).optional(),
  /** The channels to leave or rejoin; every channel when left out. */
  channels: z.array(z.enum(CHANNELS)).min(1).max(CHANNELS.length).optional(),
});
type BulkInput = z.output<typeof bulkInput>;

export interface BulkResult {
  action: BulkAction;
  count: number;
}

/** Whether a field was given (whether or not it passed its own rules). */
const given = (value: unknown, field: string, failed: ReadonlySet<string>) =>
  value !== undefined || [...failed].some((f) => f === field || f.startsWith(`${field}.`));

/** The fields only some actions take: required by them (`channels` has a default), refused by the others. */
const ACTION_FIELDS = [
  { field: 'group', actions: GROUP_ACTIONS, required: true },
  { field: 'tag', actions: TAG_ACTIONS, required: true },
  { field: 'channels', actions: CONSENT_ACTIONS, required: false },
] as const;

/** A field the action needs and lacks, or one it has no use for. */
function fieldProblem({ field, actions, required }: (typeof ACTION_FIELDS)[number], action: BulkAction, present: boolean): FieldProblem[] {
  const wanted = actions.includes(action);
  if (wanted && required && !present) return [{ field, message: `${field} is required for ${action}` }];
  if (!wanted && present) return [{ field, message: `${field} is only for ${actions.join(' and ')}` }];
  return [];
}

/** The contacts an action applies to: the ids given (another organization's match nothing), or the filter's. */
const targetOf = (t: Tenant, input: BulkInput): Match =>
  input.ids ? (q) => q.whereRaw('contacts.id = ANY(?::uuid[])', [input.ids as unknown as Knex.Value]) : matching(t, input.filter!);

/** The ids of the contacts `match` narrows the organization's contacts to, as a subquery. */
const idsOf = (t: Tenant, match: Match) => t.scoped('contacts').modify(match).select('contacts.id');

const touched = (table: string) => `UPDATE contacts SET updated_at = date_trunc('milliseconds', now())
  WHERE contacts.organization_id = ? AND contacts.id IN (SELECT contact_id FROM ${table})`;

/** The matching contacts join the group (a membership is part of the contact: its `updatedAt` moves). */
async function addToGroup(t: Tenant, match: Match, group: string): Promise<number> {
  const rows = t.scoped('contacts').modify(match).select(t.db.raw('?::uuid', [t.orgId]), 'contacts.id', t.db.raw('?::uuid', [group]), 'contacts.created_at');
  // The contacts that joined trigger the group's automated campaigns, in the same statement.
  const fired = triggers.triggerSql('(SELECT contact_id, ?::uuid AS group_id FROM added)', 'contact.added_to_group').replaceAll(':orgId', '?');
  try {
    const result = (await t.db.raw(
      `WITH added AS (
         INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at) ?
         ON CONFLICT DO NOTHING RETURNING contact_id),
       fired AS (${fired})
       ${touched('added')}`,
      [rows, t.orgId, group, t.orgId, t.orgId],
    )) as { rowCount: number };
    return result.rowCount;
  } catch (err) {
    // The group was deleted since `check` saw it.
    if (isForeignKeyViolation(err)) throw validationFailed([{ field: 'group', message: `group is an unknown group id: ${group}` }]);
    throw err;
  }
}

async function removeFromGroup(t: Tenant, match: Match, group: string): Promise<number> {
  const result = (await t.db.raw(
    `WITH removed AS (
       DELETE FROM contact_groups cg WHERE cg.organization_id = ? AND cg.group_id = ? AND cg.contact_id IN ?
       RETURNING contact_id)
     ${touched('removed')}`,
    [t.orgId, group, idsOf(t, match), t.orgId],
  )) as { rowCount: number };
  return result.rowCount;
}

const hasTag = 'contacts.tags @> ARRAY[?]::text[]';

/** The matching contacts gain the tag; none may go over the tag limit (a 400, nothing changed). */
async function addTag(t: Tenant, match: Match, tag: string): Promise<number> {
  const full = t.scoped('contacts').modify(match).whereNot((w) => w.whereRaw(hasTag, [tag])).whereRaw('cardinality(contacts.tags) >= ?', [MAX_TAGS]);
  const [{ n }] = (await full.count({ n: '*' })) as [{ n: number }];
  if (n > 0) throw validationFailed([{ field: 'tag', message: `tag can not be added: ${n} of the contacts already have ${MAX_TAGS} tags` }]);
  return t
    .scoped('contacts')
    .modify(match)
    .whereNot((w) => w.whereRaw(hasTag, [tag]))
    // A contact filled up since the count is left as it is rather than taken over the limit.
    .whereRaw('cardinality(contacts.tags) < ?', [MAX_TAGS])
    .update({ tags: t.db.raw('array_append(contacts.tags, ?::text)', [tag]), updated_at: nowMs(t.db) });
}

async function removeTag(t: Tenant, match: Match, tag: string): Promise<number> {
  return t
    .scoped('contacts')
    .modify(match)
    .whereRaw(hasTag, [tag])
    .update({ tags: t.db.raw('array_remove(contacts.tags, ?::text)', [tag]), updated_at: nowMs(t.db) });
}

/** Runs the action in the transaction; consent changes add the webhook endpoints to wake to `woken`. */
async function apply(trx: Knex.Transaction, orgId: string, input: BulkInput, woken: Set<string>): Promise<number> {
  const t = tenant(trx, orgId);
  const match = targetOf(t, input);
  const channels = input.channels ?? CHANNELS;
  switch (input.action) {
    case 'delete':
      return t.scoped('contacts').modify(match).delete();
    case 'addToGroup':
      return addToGroup(t, match, input.group!);
    case 'removeFromGroup':
      return removeFromGroup(t, match, input.group!);
    case 'addTag':
      return addTag(t, match, input.tag!);
    case 'removeTag':
      return removeTag(t, match, input.tag!);
    case 'unsubscribe':
      return setSubscription(trx, orgId, { matching: match }, channels, 'unsubscribed', 'api', new Date(), woken);
    case 'resubscribe':
      return setSubscription(trx, orgId, { matching: match }, channels, 'subscribed', 'api', new Date(), woken);
  }
}

export const bulk = operation({
  access: WRITE,
  input: bulkInput,
  async check(ctx, input, _params, failed) {
    const problems: FieldProblem[] = [];
    const ids = given(input.ids, 'ids', failed);
    const filter = given(input.filter, 'filter', failed);
    if (!ids && !filter) problems.push({ field: 'ids', message: 'ids or filter is required (filter {} for every contact)' });
    if (ids && filter) problems.push({ field: 'filter', message: 'filter can not be given with ids: give one of them' });
    const action = input.action;
    if (action) for (const rule of ACTION_FIELDS) problems.push(...fieldProblem(rule, action, given(input[rule.field], rule.field, failed)));
    if (input.group && action && GROUP_ACTIONS.includes(action)) {
      const found = await tenant(ctx.db, ctx.caller.orgId).scoped('groups').where('groups.id', input.group).first('groups.id');
      if (!found) problems.push({ field: 'group', message: `group is an unknown group id: ${input.group}` });
    }
    return problems;
  },
  async run(ctx, input): Promise<BulkResult> {
    const woken = new Set<string>();
    const count = await ctx.db.transaction(async (trx) => {
      const changed = await apply(trx, ctx.caller.orgId, input, woken);
      // A consent change by an admin is audited (the other bulk actions are not admin actions of the audit log).
      if (changed && CONSENT_ACTIONS.includes(input.action)) {
        const target = input.ids ? { ids: input.ids.length } : { filter: input.filter };
        const details = { channels: input.channels ?? CHANNELS, count: changed, ...target };
        await record(trx, ctx, { action: input.action === 'unsubscribe' ? 'contact.bulk_unsubscribed' : 'contact.bulk_resubscribed', resourceType: 'contact', resourceId: null, details });
      }
      return changed;
    });
    await wake(ctx.db, ctx.caller.orgId, [...woken]);
    if (input.action === 'addToGroup') await triggers.wakeAutomations(ctx.db, ctx.caller.orgId);
    return { action: input.action, count };
  },
});
