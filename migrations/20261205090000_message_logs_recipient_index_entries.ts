import type { Knex } from 'knex';

/**
 * The recipients index of `GET /message-logs?recipient=` (20261130100000) made each log's entries
 * from its JSON text cut at every double quote: a campaign log of 100 addresses gave 201 pieces
 * (each address, and a comma between two), which GIN sorts, in the database's collation, to find
 * the 103 distinct ones, for every log a settle writes (about a third of a 100,000-recipient
 * campaign's settles). The quotes, comma, quote between two JSON strings are now one quote before
 * the cut, so the same log gives 102 pieces, its addresses (in order) between the brackets; and the
 * pieces compare bytewise (`COLLATE "C"`): an address is only ever looked up whole, never ordered.
 * Every JSON string still comes out whole, as before (`logAddressesSql`, which spells the same
 * expression for the searches, says why). Writing a campaign's entries takes about a quarter less
 * (bench/log-search keeps the searches' figures).
 */
const NEW = `string_to_array(replace(recipients::text, '","', '"'), '"') COLLATE "C"`;
const OLD = `string_to_array(recipients::text, '"')`;

async function rebuild(knex: Knex, expression: string): Promise<void> {
  await knex.raw('DROP INDEX message_logs_org_recipients_idx');
  await knex.raw(
    `CREATE INDEX message_logs_org_recipients_idx ON message_logs USING gin (organization_id, (${expression})) WITH (fastupdate = on, gin_pending_list_limit = 65536)`,
  );
}

export async function up(knex: Knex): Promise<void> {
  await rebuild(knex, NEW);
  // The planner's statistics of the new expression (the addresses' frequencies), at once.
  await knex.raw('ANALYZE message_logs');
}

export async function down(knex: Knex): Promise<void> {
  await rebuild(knex, OLD);
}
