import type { Knex } from 'knex';

/**
 * The delivery engine's scheduling state, kept on the coordinator (tables only the engine reads,
 * never joined with a tenant table):
 *
 * - `send_queue`: one row per campaign (or run) and channel with batches to send. Workers take
 *   turns from it across organizations: the transactional lane (automated sends) before the bulk
 *   one, then the organization served longest ago (`send_turns.turn_at`), then its row served
 *   longest ago (`served_at`); a row waiting on its credential's rate is skipped until `ready_at`.
 *   `touched_at` is when work was last added, so a worker that found the row empty removes it only
 *   when nothing was added since it looked.
 * - `send_pace`: one row per organization and channel (a channel credential): the rate it is sent
 *   at (`configured`, its own setting or the provider's default), the theoretical time its next
 *   message may go (`tat`, the generic cell rate algorithm), and what the provider's throttling
 *   answers made of it (`slowed_rate` since `slowed_at`, growing back by a tenth of itself a second).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE send_queue (
      organization_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      channel text NOT NULL,
      lane smallint NOT NULL DEFAULT 1,
      ready_at timestamptz NOT NULL DEFAULT now(),
      served_at timestamptz NOT NULL DEFAULT '-infinity',
      touched_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (campaign_id, channel)
    )`);
  await knex.raw('CREATE INDEX send_queue_organization ON send_queue (organization_id)');
  await knex.raw('CREATE INDEX send_queue_ready ON send_queue (ready_at)');
  await knex.raw('CREATE INDEX send_queue_lane ON send_queue (lane, served_at)');
  await knex.raw(`
    CREATE TABLE send_turns (
      organization_id uuid PRIMARY KEY,
      turn_at timestamptz NOT NULL DEFAULT '-infinity'
    )`);
  await knex.raw('CREATE INDEX send_turns_turn ON send_turns (turn_at)');
  await knex.raw(`
    CREATE TABLE send_pace (
      organization_id uuid NOT NULL,
      channel text NOT NULL,
      configured double precision,
      tat timestamptz NOT NULL DEFAULT now(),
      slowed_rate double precision,
      slowed_at timestamptz,
      throttled_at timestamptz,
      waited_at timestamptz,
      throttles bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (organization_id, channel)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE send_pace');
  await knex.raw('DROP TABLE send_turns');
  await knex.raw('DROP TABLE send_queue');
}
