import type { Knex } from 'knex';

/**
 * Personalised messages in the sandbox outbox: a delivery call whose recipients each have their own
 * text keeps it beside them, aligned with `recipients` (`bodies`, `subjects`; empty when the call's
 * `body` and `subject` are every recipient's), and each recipient's email headers (`headers`, a JSON
 * array aligned with `recipients`, or `[]`), such as `List-Unsubscribe`. The view reads them per
 * message.
 */
const VIEW = `
  CREATE VIEW sandbox_outbox AS
  SELECT s.organization_id, overlay(s.id::text PLACING lpad(to_hex(m.position), 8, '0') FROM 29)::uuid AS id,
         s.id AS send_id, m.position::int AS position, s.channel, m.recipient, coalesce(m.subject, s.subject) AS subject,
         coalesce(m.body, s.body) AS body, s.attachments, coalesce(s.headers -> (m.position::int - 1), '{}') AS headers,
         CASE WHEN m.error IS NULL THEN 'success' ELSE 'failed' END AS status, m.error, s.created_at
  FROM sandbox_sends s
  CROSS JOIN LATERAL unnest(s.recipients, s.errors, s.bodies, s.subjects) WITH ORDINALITY AS m(recipient, error, body, subject, position)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP VIEW sandbox_outbox');
  await knex.raw(`
    ALTER TABLE sandbox_sends
      ADD COLUMN bodies text[] NOT NULL DEFAULT '{}' CHECK (cardinality(bodies) IN (0, cardinality(recipients))),
      ADD COLUMN subjects text[] NOT NULL DEFAULT '{}' CHECK (cardinality(subjects) IN (0, cardinality(recipients))),
      ADD COLUMN headers jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(headers) = 'array')`);
  await knex.raw(VIEW);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP VIEW sandbox_outbox');
  await knex.raw('ALTER TABLE sandbox_sends DROP COLUMN bodies, DROP COLUMN subjects, DROP COLUMN headers');
  await knex.raw(`
    CREATE VIEW sandbox_outbox AS
    SELECT s.organization_id, overlay(s.id::text PLACING lpad(to_hex(m.position), 8, '0') FROM 29)::uuid AS id,
           s.id AS send_id, m.position::int AS position, s.channel, m.recipient, s.subject, s.body, s.attachments,
           CASE WHEN m.error IS NULL THEN 'success' ELSE 'failed' END AS status, m.error, s.created_at
    FROM sandbox_sends s
    CROSS JOIN LATERAL unnest(s.recipients, s.errors) WITH ORDINALITY AS m(recipient, error, position)`);
}
