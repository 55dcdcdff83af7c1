import { statement } from '../../db/statements.js';

/**
 * The statements of closing an organization. Every one names the organization, so on Citus each
 * runs on the organization's shard alone (or on the coordinator, for its own tables).
 */

/**
 * Every tenant table with its primary key after `organization_id`, in the order the closing empties
 * them: a table before those it refers to, the audit log last but one, the credits last. The
 * closure test holds this list to the layout's tenant tables, so a new table can not be left out.
 */
export const CLOSING_ORDER = [
  { table: 'campaign_triggers', key: ['campaign_id', 'contact_id'] },
  { table: 'campaign_batches', key: ['campaign_id', 'channel', 'batch_no'] },
  { table: 'message_events', key: ['id'] },
  { table: 'recipient_receipts', key: ['log_id', 'position'] },
  { table: 'message_logs', key: ['id'] },
  { table: 'campaigns', key: ['id'] },
  { table: 'message_stats_changes', key: ['id'] },
  { table: 'message_stats_buckets', key: ['bucket', 'channel'] },
  { table: 'message_stats_campaigns', key: ['campaign_id', 'channel'] },
  { table: 'sandbox_sends', key: ['id'] },
  { table: 'webhook_deliveries', key: ['event_id', 'endpoint_id'] },
  { table: 'webhook_attempts', key: ['id'] },
  { table: 'webhook_events', key: ['id'] },
  { table: 'webhook_endpoints', key: ['id'] },
  { table: 'consent_changes', key: ['id'] },
  { table: 'contact_groups', key: ['contact_id', 'group_id'] },
  { table: 'contact_import_rows', key: ['import_id', 'line'] },
  { table: 'contact_import_chunks', key: ['import_id', 'seq'] },
  { table: 'contact_imports', key: ['id'] },
  { table: 'contacts', key: ['id'] },
  { table: 'groups', key: ['id'] },
  { table: 'suppressions', key: ['id'] },
  { table: 'email_bounces', key: ['id'] },
  { table: 'erasures', key: ['id'] },
  { table: 'idempotency_keys', key: ['key'] },
  { table: 'invitations', key: ['id'] },
  { table: 'message_templates', key: ['id'] },
  { table: 'providers', key: ['id'] },
  { table: 'dkim_keys', key: ['id'] },
  { table: 'audit_log', key: ['id'] },
  { table: 'organization_credits', key: ['organization_id'] },
] as const;

type Batch = { orgId: string; limit: number };

/** A batch of one tenant table's rows of the organization, by its key, deleted; answers how many. */
export const deleteBatch = (table: string, key: readonly string[]) => {
  const columns = key.map((c) => `"${c}"`).join(', ');
  return statement<Batch, { deleted: number }>(
    `herald_closure_${table}`,
    `WITH doomed AS (SELECT ${columns} FROM ${table} WHERE organization_id = :orgId LIMIT :limit),
          deleted AS (DELETE FROM ${table} WHERE organization_id = :orgId AND (${columns}) IN (SELECT ${columns} FROM doomed) RETURNING 1)
     SELECT count(*)::int AS deleted FROM deleted`,
  );
};

export const TENANT_DELETES = CLOSING_ORDER.map(({ table, key }) => ({ table, statement: deleteBatch(table, key) }));

type Org = { orgId: string };
type Count = { deleted: number };
const countOf = (sql: string) => `WITH deleted AS (${sql} RETURNING 1) SELECT count(*)::int AS deleted FROM deleted`;

/**
 * What the delivery engine holds of the organization (its queue, turn and pace) and its jobs
 * waiting in graphile-worker's queue (every one names its organization as `orgId`), but the
 * closing's own. A job running now finishes; what it writes after this goes with the rest. The
 * queue's public view has no payloads, so the job table itself is read (graphile-worker's version is
 * pinned); the jobs go through its own `complete_jobs`, which leaves a running one be.
 */
export const ENGINE_DELETES = [
  { table: 'send_queue', statement: statement<Org, Count>('herald_closure_send_queue', countOf('DELETE FROM send_queue WHERE organization_id = :orgId')) },
  { table: 'send_turns', statement: statement<Org, Count>('herald_closure_send_turns', countOf('DELETE FROM send_turns WHERE organization_id = :orgId')) },
  { table: 'send_pace', statement: statement<Org, Count>('herald_closure_send_pace', countOf('DELETE FROM send_pace WHERE organization_id = :orgId')) },
  {
    table: 'jobs',
    statement: statement<Org & { task: string }, Count>(
      'herald_closure_jobs',
      `SELECT count(*)::int AS deleted FROM graphile_worker.complete_jobs(ARRAY(
         SELECT j.id FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
          WHERE j.payload->>'orgId' = :orgId::text AND t.identifier <> :task))`,
    ),
  },
] as const;

/** The organization's members and their keys, and what the throttles count for them and for the organization. */
export const memberEmails = statement<Org, { id: string; email: string }>('herald_closure_members', 'SELECT id, email FROM users WHERE organization_id = :orgId');
export const deleteCounters = statement<{ keys: string[] }, Count>('herald_closure_rate_limits', countOf('DELETE FROM rate_limits WHERE key = ANY(:keys::text[])'));
export const deleteApiKeys = statement<Org, Count>('herald_closure_api_keys', countOf('DELETE FROM api_keys WHERE organization_id = :orgId'));
/** The users, with their two-factor secrets and recovery codes (their keys cascade). */
export const deleteUsers = statement<Org, Count>('herald_closure_users', countOf('DELETE FROM users WHERE organization_id = :orgId'));
/** The organization itself, last; whatever a job still running wrote meanwhile goes with it (the tenant tables' keys cascade). */
export const deleteOrganization = statement<Org, Count>('herald_closure_organization', countOf('DELETE FROM organizations WHERE id = :orgId'));
