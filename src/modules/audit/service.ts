import { z } from 'zod';
import { paginateAs, type Keyset, type PageRequest } from '../../db/pagination.js';
import { tenant } from '../../db/tenant.js';
import { dateFilter, rangeEnd, rangeStart } from '../../lib/date-range.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { AUDIT_ACTIONS } from './record.js';

/**
 * `GET /audit-log` and `auditLog`: the organization's audit entries, newest first, for its admins
 * (signed in, or through an admin API key). There is nothing else: no path changes or removes an
 * entry. Entries are written by `record` (./record.ts), in the transactions of the actions.
 */

interface AuditRow {
  id: string;
  at: Date;
  created_at: Date;
  actor_type: 'user' | 'api_key';
  actor_id: string;
  actor_label: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Record<string, unknown>;
  ip: string | null;
  request_id: string | null;
}

export interface AuditEntryDto {
  _id: string;
  /** When the action committed (ISO 8601 UTC with milliseconds). */
  at: string;
  actorType: 'user' | 'api_key';
  /** The user's or the API key's id. */
  actorId: string;
  /** The user's email, or the key's name and visible prefix, as they were then. */
  actorLabel: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  details: Record<string, unknown>;
  /** The client address the request came from. */
  ip: string | null;
  requestId: string | null;
}

const toDto = (row: AuditRow): AuditEntryDto => ({
  _id: row.id,
  at: row.at.toISOString(),
  actorType: row.actor_type,
  actorId: row.actor_id,
  actorLabel: row.actor_label,
  action: row.action,
  resourceType: row.resource_type,
  resourceId: row.resource_id,
  details: row.details,
  ip: row.ip,
  requestId: row.request_id,
});

const COLUMNS = ['id', 'at', 'actor_type', 'actor_id', 'actor_label', 'action', 'resource_type', 'resource_id', 'details', 'ip', 'request_id'].map((c) => `audit_log.${c}`);

/** Newest first by the entry's time (`at`, which the cursor carries as its time), ties by id. */
const keyset: Keyset = {
  orderBy: [
    { column: 'audit_log.at', order: 'desc' },
    { column: 'audit_log.id', order: 'desc' },
  ],
  after: (query, key) => query.whereRaw('(audit_log.at, audit_log.id) < (?::timestamptz, ?::uuid)', [key.createdAt, key.id]),
};

/** An action of the log, or a prefix of some ending in a dot (`user.`, `api_key.`). */
const isActionOrPrefix = (given: string) => (given.endsWith('.') ? AUDIT_ACTIONS.some((a) => a.startsWith(given)) : (AUDIT_ACTIONS as readonly string[]).includes(given));

const filterInput = z
  .strictObject({
    actor: v.id().optional().describe("Only the actions of this user or API key (its id)."),
    action: z
      .string()
      .trim()
      .max(100)
      .refine(isActionOrPrefix, 'must be an audit action (such as user.created) or the prefix of some, ending in a dot (user.)')
      .optional()
      .describe('One action (`user.created`), or every action of a prefix ending in a dot (`user.`, `campaign.`).'),
    dateFrom: dateFilter().optional().describe('ISO 8601 date or date-time, inclusive.'),
    dateTo: dateFilter().optional().describe('ISO 8601 date or date-time, inclusive (a bare date covers that whole day).'),
    resourceId: v.id().optional().describe('Only actions on this resource (its id).'),
  })
  .refine((f) => !f.dateFrom || !f.dateTo || rangeStart(f.dateFrom) <= rangeEnd(f.dateTo), { path: ['dateTo'], message: 'must not be before dateFrom' });
export type AuditFilter = z.output<typeof filterInput>;

/** The next string after every string that starts with `prefix` (its last character, the dot, moved one up), in the "C" collation. */
const pastPrefix = (prefix: string) => prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);

export const list = operation({
  access: { role: 'admin', apiKeys: true },
  input: filterInput,
  async run(ctx, filter, page: PageRequest) {
    const q = tenant(ctx.db, ctx.caller.orgId)
      .scoped('audit_log')
      .select([...COLUMNS, ctx.db.raw('audit_log.at AS created_at')]);
    if (filter.actor) q.where('audit_log.actor_id', filter.actor);
    if (filter.action?.endsWith('.')) q.where('audit_log.action', '>=', filter.action).where('audit_log.action', '<', pastPrefix(filter.action));
    else if (filter.action) q.where('audit_log.action', filter.action);
    if (filter.dateFrom) q.where('audit_log.at', '>=', rangeStart(filter.dateFrom));
    if (filter.dateTo) q.where('audit_log.at', '<=', rangeEnd(filter.dateTo));
    if (filter.resourceId) q.where('audit_log.resource_id', filter.resourceId);
    return paginateAs(q, 'audit_log', page, toDto, keyset);
  },
});
