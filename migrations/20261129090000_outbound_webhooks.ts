import type { Knex } from 'knex';

/**
 * Outbound webhooks (platform.md): the organization's endpoints, and a transactional outbox.
 *
 * - `webhook_endpoints`: where an organization wants its events, which types (`event_types`, empty:
 *   every type), its signing secret and, for 24 hours after a rotation, the previous one (both
 *   AES-256-GCM under CREDENTIALS_KEY), and a summary of its deliveries (last success and failure,
 *   failures in a row, failing since when); `enabled` false with `disabled_reason` when a receiver
 *   answered 410 or kept failing for 5 days.
 * - `webhook_events`: each event, written by the statement (or in the transaction) of the change
 *   that caused it and only when an enabled endpoint of the organization takes its type: never
 *   lost, never written for a change that rolled back. Its id is the `webhook-id` of every attempt.
 * - `webhook_deliveries`: one per event and endpoint: pending until an attempt succeeds or the retry
 *   schedule is spent; `next_attempt_at` and a lease (`leased_until`) let any worker take it, and a
 *   worker that dies leaves it to the next once the lease ends.
 * - `webhook_attempts`: each attempt: its status, duration and the first 1 KiB of the answer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE webhook_endpoints (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      url text NOT NULL,
      description text,
      event_types text[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      secret bytea NOT NULL,
      previous_secret bytea,
      previous_secret_expires_at timestamptz,
      last_success_at timestamptz,
      last_failure_at timestamptz,
      failing_since timestamptz,
      failures_in_a_row int NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw(`
    CREATE TABLE webhook_events (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      type text NOT NULL,
      occurred_at timestamptz NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX webhook_events_org_created_idx ON webhook_events (organization_id, created_at, id)');
  await knex.raw(`
    CREATE TABLE webhook_deliveries (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      event_id uuid NOT NULL,
      endpoint_id uuid NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts int NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      leased_until timestamptz,
      last_response_status int,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, event_id, endpoint_id),
      FOREIGN KEY (organization_id, event_id) REFERENCES webhook_events (organization_id, id) ON DELETE CASCADE,
      FOREIGN KEY (organization_id, endpoint_id) REFERENCES webhook_endpoints (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw(`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (organization_id, endpoint_id, next_attempt_at) WHERE status = 'pending'`);
  await knex.raw(`CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (organization_id, endpoint_id)`);
  await knex.raw(`
    CREATE TABLE webhook_attempts (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      event_id uuid NOT NULL,
      endpoint_id uuid NOT NULL,
      attempt int NOT NULL,
      succeeded boolean NOT NULL,
      response_status int,
      duration_ms int NOT NULL,
      response text,
      error text,
      attempted_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id),
      FOREIGN KEY (organization_id, event_id, endpoint_id) REFERENCES webhook_deliveries (organization_id, event_id, endpoint_id) ON DELETE CASCADE
    )`);
  await knex.raw('CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (organization_id, endpoint_id, created_at, id)');
  await knex.raw('CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (organization_id, event_id, created_at, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE webhook_attempts');
  await knex.raw('DROP TABLE webhook_deliveries');
  await knex.raw('DROP TABLE webhook_events');
  await knex.raw('DROP TABLE webhook_endpoints');
}
