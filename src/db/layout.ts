/**
 * Where each of Herald's tables lives when its database is a Citus cluster (`./citus.ts` applies
 * it), and the one list of them: the catalog test refuses a table that is not named here.
 *
 * - `tenant`: one organization's rows, distributed by `organization_id` and colocated, so every
 *   query of one organization runs on one worker, joins included. Their keys, unique indexes and
 *   foreign keys lead with `organization_id`.
 * - `reference`: small global tables copied to every node, so tenant tables join them and keep
 *   foreign keys to them. Written rarely (a signup, a change of credentials).
 * - `coordinator`: global tables found before the organization is known (a user by email, an API
 *   key by its hash), kept on the coordinator as Citus local tables: their unique keys are global,
 *   their triggers notify the API processes listening there, and they keep their foreign keys to
 *   the reference tables.
 * - `local`: tables only Herald's own machinery reads, never joined with the others (the login
 *   throttle's counters, the migrations' bookkeeping, the record of closed organizations, which
 *   outlives them); graphile-worker's queue keeps its own schema
 *   on the coordinator as well.
 */
export const LAYOUT = {
  tenant: [
    'audit_log',
    'campaign_batches',
    'campaign_triggers',
    'campaigns',
    'consent_changes',
    'contact_groups',
    'contact_import_chunks',
    'contact_import_rows',
    'contact_imports',
    'contacts',
    'dkim_keys',
    'email_bounces',
    'erasures',
    'groups',
    'idempotency_keys',
    'invitations',
    'message_events',
    'message_logs',
    'message_stats_buckets', 'message_stats_campaigns', 'message_stats_changes',
    'message_templates',
    'organization_credits',
    'providers',
    'recipient_receipts',
    'sandbox_sends',
    'suppressions',
    'webhook_attempts',
    'webhook_deliveries',
    'webhook_endpoints',
    'webhook_events',
  ],
  reference: ['organizations'],
  coordinator: ['users', 'api_keys', 'user_two_factor', 'user_recovery_codes'],
  local: ['organization_closures', 'rate_limits', 'send_pace', 'send_queue', 'send_turns', 'knex_migrations', 'knex_migrations_lock'],
} as const;

/** The column every tenant table is distributed by. */
export const TENANT_COLUMN = 'organization_id';
