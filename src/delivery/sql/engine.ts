import { statement } from '../../db/statements.js';

/**
 * The delivery engine's statements on its own tables (`send_queue`, `send_turns`, `send_pace`: see
 * their migration). They live on the coordinator and are never joined with a tenant table, so on
 * Citus every one of them runs there, in one step, whatever the number of organizations.
 */

/**
 * A credential's rate now, in messages a second (null: unpaced): its setting, or, after the
 * provider's throttling answers, the slowed rate growing back every second by a tenth of itself (at
 * least one message a second) up to the setting. A slowed rate of an unpaced credential that has
 * grown past 10,000 a second is unpaced again.
 */
const grown = (p: string) => `(${p}.slowed_rate + greatest(1, ${p}.slowed_rate * 0.1) * extract(epoch FROM now() - ${p}.slowed_at))::float8`;
const effective = (p: string, configured: string) => `(
  CASE WHEN ${p}.slowed_rate IS NULL THEN ${configured}
       WHEN ${configured} IS NULL AND ${grown(p)} >= 10000 THEN NULL
       ELSE least(coalesce(${configured}, 'Infinity'::float8), ${grown(p)}) END)`;

/**
 * Reserves the time to send `n` messages on a credential, by the generic cell rate algorithm: `tat`
 * is when its next message may go, and a reservation moves it on by `n / rate`. Bulk work reserves
 * only once `tat` has come, and sends at once: its messages go no closer together than the rate
 * however late a process is to send them (a reservation late by up to `slackSeconds` keeps its
 * place, so the rate is kept on average). When `tat` has not come, nothing changes, `waited_at`
 * records that bulk work waits for the rate, and `start_ms` says how long until it has. A
 * transactional reservation is always taken, and starts up to `aheadSeconds` before `tat`: it waits
 * at most that long for the bulk work of its credential, which then waits for it. Answers the rate
 * (null: unpaced, send at once), whether the time was reserved, and `start_ms`: how long until the
 * reserved start, or, not reserved, until bulk work may try again. The time is read once the
 * credential's row is locked.
 */
export const reservePace = statement<
  {
    orgId: string;
    channel: string;
    configured: number | null;
    n: number;
    transactional: boolean;
    aheadSeconds: number;
    slackSeconds: number;
  },
  { rate: number | null; reserved: boolean; start_ms: number }
>(
  'herald_pace_reserve',
  `WITH cur AS (
     SELECT p.tat, ${effective('p', ':configured::float8')} AS rate
     FROM send_pace p WHERE p.organization_id = :orgId AND p.channel = :channel
     FOR UPDATE),
   v AS (
     SELECT cur.tat, clock_timestamp() AS now, CASE WHEN cur.tat IS NULL THEN :configured::float8 ELSE cur.rate END AS rate
     FROM (SELECT 1) one LEFT JOIN cur ON true),
   d AS (
     SELECT v.rate, coalesce(v.tat, v.now) AS tat, v.now,
            v.rate IS NOT NULL AND (:transactional::boolean OR coalesce(v.tat, v.now) <= v.now) AS reserved,
            CASE WHEN :transactional::boolean AND v.tat > v.now + make_interval(secs => :aheadSeconds::float8)
                 THEN v.tat - make_interval(secs => :aheadSeconds::float8) ELSE v.now END AS start
     FROM v),
   w AS (
     INSERT INTO send_pace AS p (organization_id, channel, configured, tat, waited_at)
     SELECT :orgId, :channel, :configured::float8,
            CASE WHEN d.reserved THEN greatest(d.tat, d.now - make_interval(secs => :slackSeconds::float8)) + make_interval(secs => :n::float8 / d.rate)
                 ELSE d.tat END,
            CASE WHEN d.rate IS NOT NULL AND NOT d.reserved THEN d.now END
     FROM d
     ON CONFLICT (organization_id, channel) DO UPDATE
       SET configured = EXCLUDED.configured, tat = EXCLUDED.tat, waited_at = coalesce(EXCLUDED.waited_at, p.waited_at))
   SELECT d.rate, d.reserved,
          (extract(epoch FROM CASE WHEN d.reserved THEN d.start ELSE d.tat END - d.now) * 1000)::float8 AS start_ms
   FROM d`,
);

/**
 * The provider answered a credential's messages with throttling: its rate is halved (from its
 * current one, or, unpaced, from `observed`, what this process sent in the last second), at most
 * once a second however many answers say so, never below `floor`. Answers the new rate.
 */
export const slowPace = statement<
  {
    orgId: string;
    channel: string;
    configured: number | null;
    observed: number;
    floor: number;
  },
  { rate: number }
>(
  'herald_pace_slow',
  `INSERT INTO send_pace AS p (organization_id, channel, configured, slowed_rate, slowed_at, throttled_at, throttles)
   VALUES (:orgId, :channel, :configured::float8, greatest(:floor::float8, least(coalesce(:configured::float8, 'Infinity'::float8), :observed::float8) * 0.5), now(), now(), 1)
   ON CONFLICT (organization_id, channel) DO UPDATE SET
     configured = EXCLUDED.configured,
     throttled_at = now(),
     throttles = p.throttles + 1,
     slowed_rate = CASE WHEN p.slowed_at > now() - interval '1 second' THEN p.slowed_rate
                        ELSE greatest(:floor::float8, coalesce(${effective('p', 'EXCLUDED.configured')}, :observed::float8) * 0.5) END,
     slowed_at = CASE WHEN p.slowed_at > now() - interval '1 second' THEN p.slowed_at ELSE now() END
   RETURNING p.slowed_rate AS rate`,
);

/** An organization's credentials as the engine paces them now, per channel: for what a campaign shows. */
export const paceOf = statement<
  { orgId: string },
  {
    channel: string;
    rate: number | null;
    throttled_at: Date | null;
    waited_at: Date | null;
    throttles: number;
  }
>(
  'herald_pace_of',
  `SELECT split_part(p.channel, ':', 1) AS channel, ${effective('p', 'p.configured')} AS rate, p.throttled_at, p.waited_at, p.throttles::int AS throttles
   FROM send_pace p WHERE p.organization_id = :orgId`,
);

/**
 * Queues a campaign's (or run's) channels for sending, or, queued already, marks work added
 * (`touched_at`), so that a worker that has just found the row empty keeps it. The organization gets
 * its turn row. Wakes idle workers on commit.
 */
export const enqueueSends = statement<{ rows: string }>(
  'herald_send_enqueue',
  `WITH v AS (SELECT * FROM json_to_recordset(:rows::json) AS t(organization_id uuid, campaign_id uuid, channel text, lane smallint)),
   -- An organization that had nothing queued is served next, before every organization served
   -- already and, of those that arrived before it and are not served yet, first (its turn time is
   -- now mirrored before 1970): a small campaign waits for about one turn per slot, not for a round
   -- of every organization with work queued.
   turns AS (
     INSERT INTO send_turns AS t (organization_id, turn_at)
     SELECT DISTINCT organization_id, timestamptz 'epoch' - (now() - timestamptz 'epoch') FROM v
     ON CONFLICT (organization_id) DO UPDATE SET turn_at = EXCLUDED.turn_at
       WHERE NOT EXISTS (SELECT 1 FROM send_queue q WHERE q.organization_id = t.organization_id)),
   queued AS (
     INSERT INTO send_queue AS q (organization_id, campaign_id, channel, lane)
     SELECT organization_id, campaign_id, channel, lane FROM v
     ON CONFLICT (campaign_id, channel) DO UPDATE SET touched_at = clock_timestamp(), ready_at = least(q.ready_at, now()), lane = EXCLUDED.lane
     RETURNING 1)
   SELECT pg_notify('herald_send', ''), (SELECT count(*) FROM queued)::int AS queued`,
);

/**
 * Takes a turn: the row to serve next, of the transactional lane first (served longest ago), else
 * of the organization served longest ago, its row served longest ago, among rows not waiting for
 * their rate. Each step follows an index (`send_queue_lane`, `send_turns_turn`, then the
 * organization's rows), so a claim reads a few rows whatever the number of organizations queued. The
 * row is locked while it is picked, so two workers picking at once take different rows (or the same
 * one after the other); both are then served at once, which is how one organization alone uses every
 * slot. Answers nothing when nothing is ready.
 */
export const takeTurn = statement<
  Record<string, never>,
  {
    organization_id: string;
    campaign_id: string;
    channel: string;
    lane: number;
    taken_at: Date;
  }
>(
  'herald_send_take_turn',
  `WITH urgent AS (
     SELECT q.campaign_id, q.channel, q.organization_id FROM send_queue q
     WHERE q.lane = 0 AND q.ready_at <= now()
     ORDER BY q.served_at LIMIT 1
     FOR UPDATE SKIP LOCKED),
   org AS (
     SELECT t.organization_id FROM send_turns t
     WHERE NOT EXISTS (SELECT 1 FROM urgent)
       AND EXISTS (SELECT 1 FROM send_queue q WHERE q.organization_id = t.organization_id AND q.lane = 1 AND q.ready_at <= now())
     ORDER BY t.turn_at LIMIT 1
     FOR UPDATE SKIP LOCKED),
   bulk AS (
     SELECT q.campaign_id, q.channel, q.organization_id FROM send_queue q JOIN org ON q.organization_id = org.organization_id
     WHERE q.lane = 1 AND q.ready_at <= now()
     ORDER BY q.served_at LIMIT 1
     FOR UPDATE OF q SKIP LOCKED),
   pick AS (SELECT * FROM urgent UNION ALL SELECT * FROM bulk),
   turned AS (UPDATE send_turns t SET turn_at = clock_timestamp() FROM pick WHERE t.organization_id = pick.organization_id)
   UPDATE send_queue q SET served_at = clock_timestamp()
   FROM pick WHERE q.campaign_id = pick.campaign_id AND q.channel = pick.channel
   RETURNING q.organization_id, q.campaign_id, q.channel, q.lane, clock_timestamp() AS taken_at`,
);

/** How long until the first row waiting for its rate is ready (null: none waits). */
export const nextReady = statement<Record<string, never>, { wait_ms: number | null }>(
  'herald_send_next_ready',
  `SELECT (extract(epoch FROM min(ready_at) - now()) * 1000)::float8 AS wait_ms FROM send_queue`,
);

/** A row's work waits for its credential's rate until `:waitMs` from now. */
export const deferTurn = statement<{
  campaignId: string;
  channel: string;
  waitMs: number;
}>(
  'herald_send_defer',
  `UPDATE send_queue SET ready_at = greatest(ready_at, now() + make_interval(secs => :waitMs::float8 / 1000))
   WHERE campaign_id = :campaignId AND channel = :channel`,
);

/** A row found with nothing left to claim is removed, unless work was added since `:since`. */
export const dropTurn = statement<{
  campaignId: string;
  channel: string;
  since: Date;
}>('herald_send_drop', `DELETE FROM send_queue WHERE campaign_id = :campaignId AND channel = :channel AND touched_at < :since`);

/** The queue by lane, for `/metrics`: rows ready to be served, and rows waiting for their rate. */
export const queueDepth = statement<Record<string, never>, { lane: number; ready: number; waiting: number }>(
  'herald_send_queue_depth',
  `SELECT lane, count(*) FILTER (WHERE ready_at <= now())::int AS ready, count(*) FILTER (WHERE ready_at > now())::int AS waiting
   FROM send_queue GROUP BY lane`,
);
