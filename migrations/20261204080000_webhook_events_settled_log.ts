import type { Knex } from 'knex';

/**
 * A message event of a settled log (`message.sent`, `message.failed`: one per log of up to 100
 * recipients) names its log in `settled_log_id` instead of carrying a copy of its recipients: a
 * settled log's recipients and provider ids never change, so the event's recipients are read from
 * the log whenever it is delivered or shown (`delivery/outbox.ts`). Building and storing that copy
 * (about 7 KB of JSON per log) was half of a campaign chunk's settle once an endpoint took the
 * events. No foreign key: a log is never deleted but with its organization, which takes its events
 * too, and the key would cost each event a lookup in the settle.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_events ADD COLUMN settled_log_id uuid');
}

/** Back to copies: each such event's recipients are written into its data from its log first. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE webhook_events e
    SET data = e.data || jsonb_build_object('recipients', (
      SELECT coalesce(json_agg(CASE WHEN e.type = 'message.sent'
                                    THEN json_strip_nulls(json_build_object('recipient', CASE WHEN json_typeof(r) = 'string' THEN r #>> '{}' ELSE r->>'recipient' END,
                                                                            'position', p, 'providerMessageId', m.provider_ids[p]))
                                    ELSE json_build_object('recipient', r->>'recipient', 'position', p, 'error', r->>'error') END ORDER BY p), '[]')
      FROM json_array_elements(m.recipients) WITH ORDINALITY AS x(r, p)
      WHERE CASE WHEN e.type = 'message.sent' THEN json_typeof(r) = 'string' OR r->>'status' = 'success'
                 ELSE json_typeof(r) = 'object' AND r->>'status' = 'failed' END))
    FROM message_logs m
    WHERE e.settled_log_id IS NOT NULL AND m.organization_id = e.organization_id AND m.id = e.settled_log_id`);
  await knex.raw('ALTER TABLE webhook_events DROP COLUMN settled_log_id');
}
