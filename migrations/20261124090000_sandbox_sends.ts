import type { Knex } from 'knex';

/**
 * The sandbox outbox is stored per delivery call instead of per message: one row holds the message
 * once and its recipients (and the errors of those that failed) as arrays. The `sandbox_outbox` view
 * reads it per message as before. A message's id is its call's id with the last 8 hex digits
 * replaced by its position (calls' ids end in 8 zeros), so messages keep stable, unique UUIDs that
 * sort like (call, position).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE sandbox_sends (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT overlay(gen_random_uuid()::text PLACING '00000000' FROM 29)::uuid CHECK (right(id::text, 8) = '00000000'),
      channel text NOT NULL,
      subject text,
      body text NOT NULL,
      attachments jsonb NOT NULL DEFAULT '[]',
      recipients text[] NOT NULL CHECK (cardinality(recipients) > 0),
      -- Aligned with recipients, NULL for a success; empty when every recipient succeeded.
      errors text[] NOT NULL DEFAULT '{}' CHECK (cardinality(errors) IN (0, cardinality(recipients))),
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX sandbox_sends_org_created_idx ON sandbox_sends (organization_id, created_at DESC, id DESC)');
  await knex.raw(`
    INSERT INTO sandbox_sends (organization_id, id, channel, subject, body, attachments, recipients, errors, created_at)
    SELECT organization_id, overlay(id::text PLACING '00000000' FROM 29)::uuid, channel, subject, body, attachments, ARRAY[recipient],
           CASE WHEN status = 'failed' THEN ARRAY[coalesce(error, 'Delivery failed')] ELSE '{}' END, created_at
    FROM sandbox_outbox`);
  await knex.raw('DROP TABLE sandbox_outbox');
  await knex.raw(`
    CREATE VIEW sandbox_outbox AS
    SELECT s.organization_id, overlay(s.id::text PLACING lpad(to_hex(m.position), 8, '0') FROM 29)::uuid AS id,
           s.id AS send_id, m.position::int AS position, s.channel, m.recipient, s.subject, s.body, s.attachments,
           CASE WHEN m.error IS NULL THEN 'success' ELSE 'failed' END AS status, m.error, s.created_at
    FROM sandbox_sends s
    CROSS JOIN LATERAL unnest(s.recipients, s.errors) WITH ORDINALITY AS m(recipient, error, position)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP VIEW sandbox_outbox');
  await knex.raw(`
    CREATE TABLE sandbox_outbox (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL,
      recipient text NOT NULL,
      subject text,
      body text NOT NULL,
      attachments jsonb NOT NULL DEFAULT '[]',
      status text NOT NULL CHECK (status IN ('success', 'failed')),
      error text,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX sandbox_outbox_org_created_idx ON sandbox_outbox (organization_id, created_at DESC, id DESC)');
  await knex.raw(`
    INSERT INTO sandbox_outbox (organization_id, id, channel, recipient, subject, body, attachments, status, error, created_at)
    SELECT s.organization_id, overlay(s.id::text PLACING lpad(to_hex(m.position), 8, '0') FROM 29)::uuid, s.channel, m.recipient,
           s.subject, s.body, s.attachments, CASE WHEN m.error IS NULL THEN 'success' ELSE 'failed' END, m.error, s.created_at
    FROM sandbox_sends s
    CROSS JOIN LATERAL unnest(s.recipients, s.errors) WITH ORDINALITY AS m(recipient, error, position)`);
  await knex.raw('DROP TABLE sandbox_sends');
}
