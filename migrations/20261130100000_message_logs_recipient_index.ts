import type { Knex } from 'knex';

/**
 * `GET /message-logs?recipient=`: the addresses of each log, indexed per organization (GIN, leading
 * with organization_id through btree_gin). The expression is the JSON strings of the stored
 * recipients, their JSON text cut at its double quotes (src/delivery/log-recipients.ts,
 * `logAddressesSql`, spells the same expression for the queries the index answers): built-in
 * immutable functions only, so it runs on Citus as it is, and a text[] answers `@>` exactly, so a
 * search never reads a log's JSON (a jsonb containment index is lossy: every log it finds is parsed
 * again). fastupdate is off: with a pending list, a campaign's concurrent log writers queue on the
 * list and wait for its merges, which cost more than writing the entries in place. ANALYZE gives the
 * planner the addresses' frequencies at once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX message_logs_org_recipients_idx ON message_logs USING gin (organization_id, string_to_array(recipients::text, '"')) WITH (fastupdate = off)`);
  await knex.raw('ANALYZE message_logs');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX message_logs_org_recipients_idx');
}
