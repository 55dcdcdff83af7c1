import { statement } from '../../db/statements.js';
import { dueSql, recipientZoneSql } from '../../lib/sending-hours.js';
import { ANY_ENDPOINT, campaignEventDataSql, HANDED, logEventsSql, outboxWrites, WEBHOOK_ENDPOINTS, WOKEN, type HandedJson, type Woken } from '../outbox.js';
import { allSucceededSql } from '../log-recipients.js';
import { ANNOUNCED, announceCounted } from './progress.js';
import { countSettledLogs } from './stats.js';

/**
 * The statements of campaign batches (`campaign_batches`: one row per channel and batch of at most
 * 100 addresses, each sent and settled once into the log whose id derives from it). Credits move in
 * `../credits.ts`, in the same transaction as these.
 */

interface CampaignChannelKey {
  orgId: string;
  campaignId: string;
  channel: string;
}

interface ChunkKey extends CampaignChannelKey {
  /** The first and last batch numbers of the batches concerned. */
  first: number;
  last: number;
}

/**
 * Claims up to `:limit` claimable batches of an active campaign's channel (`pending`, or `sending`
 * under a lease that ran out: its worker died), the first by number from `:from`, for this worker, holding what
 * they cost. Rows another worker is claiming are skipped, so of two workers only one gets a batch.
 * With `heldOnly`, only batches already holding their whole cost are claimed (launch reserved it: no
 * credits move, so the claim needs no transaction), and `needing` counts those left because they
 * need more. Without it, every claimable batch is claimed and `extra` says what each needs beyond
 * what it held: the caller reserves the sum in the same transaction, and rolls the claim back when
 * the balance does not cover it. A row with a null `batch_no` only carries `needing`. `:from` (the
 * batch after the last one this process claimed) spares reading the batches already settled; the
 * status is in no index, so claiming and settling a batch update it in place.
 */
export const claimBatches = statement<
  CampaignChannelKey & { leaseSeconds: number; unitCost: number; heldOnly: boolean; limit: number; from: number; now: Date },
  { needing: number; batch_no: number | null; extra: number; reserved: number; addresses: string }
>(
  'herald_batches_claim',
  `WITH candidates AS (
     SELECT b.batch_no, greatest(round(:unitCost::numeric * b.recipient_count, 2) - b.reserved, 0) AS extra
     FROM campaign_batches b
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no >= :from
       AND (b.status = 'pending' OR (b.status = 'sending' AND b.claimed_at < now() - make_interval(secs => :leaseSeconds)))
       AND (b.due_at IS NULL OR b.due_at <= :now::timestamptz)
       AND EXISTS (SELECT 1 FROM campaigns c WHERE c.organization_id = :orgId AND c.id = :campaignId AND c.status = 'active')
     ORDER BY b.batch_no
     LIMIT :limit
     FOR UPDATE OF b SKIP LOCKED),
   claimed AS (
     UPDATE campaign_batches b
     SET status = 'sending', claimed_at = now(), attempts = b.attempts + 1, reserved = b.reserved + candidates.extra
     FROM candidates
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel
       AND b.batch_no = candidates.batch_no AND (NOT :heldOnly::boolean OR candidates.extra = 0)
     RETURNING b.batch_no, candidates.extra, b.reserved, b.addresses)
   -- Addresses as JSON text: parsed natively, much faster than an array literal. Converted here, not
   -- in RETURNING: Citus runs no function that is not immutable in a RETURNING clause.
   SELECT n.needing, claimed.batch_no, claimed.extra, claimed.reserved, array_to_json(claimed.addresses)::text AS addresses FROM
     (SELECT count(*) FILTER (WHERE :heldOnly::boolean AND extra > 0)::int AS needing FROM candidates) n
     LEFT JOIN claimed ON true`,
);

/**
 * Adds to what claimed batches hold, when their rendered messages cost more than was reserved for
 * them (personalised SMS needing more segments): in the transaction that reserves the sum.
 */
export const holdMore = statement<Omit<ChunkKey, 'first' | 'last'> & { batches: string }>(
  'herald_batches_hold_more',
  `WITH v AS (SELECT * FROM json_to_recordset(:batches::json) AS t(batch_no int, extra numeric))
   UPDATE campaign_batches b SET reserved = b.reserved + v.extra
   FROM v
   WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no = v.batch_no AND b.status = 'sending'`,
);

/**
 * Launch: a channel's batches priced again at `:unit` a recipient (a price worked out beside the
 * launch that differs from the one they were written at); answers what they then hold in all.
 */
export const repriceBatches = statement<{ orgId: string; campaignId: string; channel: string; unit: number }, { cost: number | null }>(
  'herald_batches_reprice',
  `WITH repriced AS (
     UPDATE campaign_batches SET reserved = round(:unit::numeric * recipient_count, 2)
     WHERE organization_id = :orgId AND campaign_id = :campaignId AND channel = :channel
     RETURNING reserved)
   SELECT sum(reserved)::float AS cost FROM repriced`,
);

/** Extends the lease of batches this worker is still sending. */
export const renewBatchLease = statement<Omit<ChunkKey, 'first' | 'last'> & { batchNos: number[] }>(
  'herald_batches_renew_lease',
  `UPDATE campaign_batches SET claimed_at = now()
   WHERE organization_id = :orgId AND campaign_id = :campaignId AND channel = :channel AND status = 'sending' AND batch_no = ANY(:batchNos::int[])`,
);

/**
 * Settles claimed batches still `sending` (one settled meanwhile, by a worker that took it over or by
 * the sweeper, is left alone, and so are its log and counters), writes their logs and counts the
 * campaign, completing it when every recipient is settled; answers what the settled batches held and
 * did not spend, and their recipients sent and failed. Row locks are taken batches, then the campaign row, so the campaign row is held only
 * until the commit (`cancel`, which locks the campaign row first, skips batches locked here). A
 * campaign it counts is announced to the API processes (`./progress.ts`).
 */
export const settleBatches = statement<
  ChunkKey & {
    senderUserId: string | null;
    /**
     * `jsonRows` of `{ batch_no, log_id, recipients (JSON text; null: every recipient succeeded), sent, failed, cost, network,
     * provider_ids (null when the provider gave none), carriers, final_failures, preview, length, unit_cost }` (the last three: the log's message, per batch as a personalised one differs).
     */
    batches: string;
    /** `outbox.handOverLease`: above 0, the events' deliveries are leased to this process, which posts them (`handed`). */
    handOverSeconds: number;
  },
  { refund: number; announced: number; sent: number; failed: number; handed: HandedJson | null } & Woken
>(
  'herald_batches_settle',
  `WITH ${WEBHOOK_ENDPOINTS},
        v AS (SELECT * FROM json_to_recordset(:batches::json)
                AS t(batch_no int, log_id uuid, recipients json, sent int, failed int, cost numeric, network text,
                      provider_ids text[], carriers uuid[], final_failures int[], preview text, length int, unit_cost numeric)),
        settled AS (
          UPDATE campaign_batches b SET status = 'settled', sent = v.sent, failed = v.failed, settled_at = now()
          FROM v
          -- The range of the batches settled (a chunk's, at most) bounds the scan of the campaign's
          -- batches to theirs, whatever plan the join gets: without it, settling a chunk read every
          -- batch row of the campaign (1,000 for 100,000 recipients) to find its 63.
          WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no BETWEEN :first AND :last
            AND b.batch_no = v.batch_no AND b.status = 'sending'
          -- Columns only (Citus runs no function that is not immutable in RETURNING): the log's
          -- recipients are worked out where it is written.
          RETURNING v.log_id, v.sent, v.failed, v.cost, v.network, b.reserved - v.cost AS refund, v.recipients, b.addresses,
                    v.provider_ids, v.carriers, v.final_failures, v.preview, v.length, v.unit_cost),
        logged AS (
          INSERT INTO message_logs AS m (organization_id, id, channel, sender_user_id, campaign_id, network, recipients, pending_count,
                                         success_count, failed_count, message_preview, message_length, unit_cost, reserved, cost, settled_at,
                                         updated_at, provider_ids, carriers, final_failures)
          SELECT :orgId, s.log_id, :channel, :senderUserId::uuid, :campaignId, s.network, coalesce(s.recipients, ${allSucceededSql('s.addresses')}),
                 0, s.sent, s.failed, s.preview, s.length, s.unit_cost, s.cost, s.cost, now(), date_trunc('milliseconds', now()), s.provider_ids, s.carriers, s.final_failures
          FROM settled s
          -- A log claimed before batches were kept per batch row is settled in place (from EXCLUDED
          -- only: Citus calls no function that is not immutable in ON CONFLICT DO UPDATE).
          ON CONFLICT (organization_id, id) DO UPDATE
            SET network = EXCLUDED.network, recipients = EXCLUDED.recipients, pending_count = 0, success_count = EXCLUDED.success_count,
                failed_count = EXCLUDED.failed_count, reserved = EXCLUDED.reserved, cost = EXCLUDED.cost, settled_at = EXCLUDED.settled_at,
                updated_at = EXCLUDED.updated_at, provider_ids = EXCLUDED.provider_ids, carriers = EXCLUDED.carriers,
                final_failures = EXCLUDED.final_failures
            WHERE m.settled_at IS NULL
          RETURNING m.id, m.campaign_id, m.channel, m.test, m.success_count, m.failed_count, m.settled_at, m.cost, m.created_at),
        -- The daily rollup counts the logs in this statement (see \`./stats.ts\` for why here).
        stats AS (${countSettledLogs('logged')}),
        -- The completion time is selected here, as Citus calls no function that is not immutable
        -- inside a CASE of an UPDATE. \`logs\` reads \`logged\`, so that the logs (and their recipient
        -- index entries) are written before \`counted\` takes the campaign's row: Postgres runs a
        -- data-modifying step when its rows are first read, and the row is held from then until the
        -- commit, so the campaign's other settles wait for as short a time as can be.
        n AS (SELECT coalesce(sum(sent), 0) AS sent, coalesce(sum(failed), 0) AS failed, coalesce(sum(refund), 0) AS refund, now() AS settled_at,
                     (SELECT count(*) FROM logged) AS logs
              FROM settled),
        counted AS (
          UPDATE campaigns c SET sent = c.sent + n.sent, failed = c.failed + n.failed,
                 status = CASE WHEN c.status = 'active' AND c.sent + n.sent + c.failed + n.failed >= c.total_recipients THEN 'completed' ELSE c.status END,
                 completed_at = CASE WHEN c.status = 'active' AND c.sent + n.sent + c.failed + n.failed >= c.total_recipients THEN n.settled_at ELSE c.completed_at END,
                 updated_at = date_trunc('milliseconds', now())
          FROM n WHERE c.organization_id = :orgId AND c.id = :campaignId AND n.sent + n.failed > 0
          RETURNING c.id, c.parent_id, c.name, c.status, c.completed_at, c.sent, c.delivered, c.failed, c.opened, c.clicked, c.bounced, c.complained, c.suppressed),
        ${announceCounted()},
        wh_source AS (
          SELECT * FROM ${logEventsSql('logged')} AS sent
          UNION ALL
          SELECT 'campaign.completed', c.completed_at, NULL::uuid, ${campaignEventDataSql('c')}
          FROM counted c, n WHERE ${ANY_ENDPOINT} AND c.status = 'completed' AND c.completed_at = n.settled_at),
        ${outboxWrites('wh_source', 's.settled_log_id', true)}
   SELECT n.refund, n.sent, n.failed, ${WOKEN}, ${HANDED}, ${ANNOUNCED} FROM n`,
);

/** A campaign's batches per channel: how many in all (the chunk size follows), and those still to send. */
export const batchesPerChannel = statement<{ orgId: string; campaignId: string }, { channel: string; batches: number; open: number[] | null }>(
  'herald_batches_per_channel',
  `SELECT channel, count(*)::int AS batches,
          array_agg(batch_no ORDER BY batch_no) FILTER (WHERE status IN ('pending', 'sending')) AS open
   FROM campaign_batches WHERE organization_id = :orgId AND campaign_id = :campaignId
   GROUP BY channel ORDER BY channel`,
);

/**
 * Per channel of each active campaign: its batch count (the chunk size follows from it) and the
 * batches still unsettled a lease after they were made or came due (never claimed: their job was lost) or
 * claimed (by a worker that died), across organizations. Per active campaign: status is not
 * indexed, so never a scan of every campaign's batches.
 */
export const stalledBatches = statement<
  { leaseSeconds: number; limit: number },
  { organization_id: string; campaign_id: string; type: string; channel: string; batches: number; stalled: number[] }
>(
  'herald_batches_stalled',
  `SELECT c.organization_id, c.id AS campaign_id, c.type, s.channel, s.batches, s.stalled
   FROM campaigns c
   CROSS JOIN LATERAL (
     SELECT channel, count(*)::int AS batches,
            array_agg(batch_no ORDER BY batch_no) FILTER (
              WHERE (status = 'pending' AND coalesce(due_at, created_at) < now() - make_interval(secs => :leaseSeconds))
                 OR (status = 'sending' AND claimed_at < now() - make_interval(secs => :leaseSeconds))) AS stalled
     FROM campaign_batches WHERE organization_id = c.organization_id AND campaign_id = c.id
     GROUP BY channel) s
   WHERE c.status = 'active' AND s.stalled IS NOT NULL
   LIMIT :limit`,
);

/**
 * Batches of canceled campaigns that a worker was sending when it died: nobody takes them over (the
 * campaign is no longer active), so once their lease has run out the sweeper settles them as failed.
 */
export const interruptedBatches = statement<
  { leaseSeconds: number; limit: number },
  { organization_id: string; campaign_id: string; channel: string; batch_no: number; addresses: string[]; reserved: number; messages: unknown; created_by: string | null }
>(
  'herald_batches_interrupted',
  `SELECT b.organization_id, b.campaign_id, b.channel, b.batch_no, b.addresses, b.reserved, c.messages, c.created_by
   FROM campaigns c
   JOIN campaign_batches b ON b.organization_id = c.organization_id AND b.campaign_id = c.id
   WHERE c.status = 'canceled' AND b.status = 'sending' AND b.claimed_at < now() - make_interval(secs => :leaseSeconds)
   LIMIT :limit`,
);

interface DueKey extends CampaignChannelKey {
  batchNos: number[];
  /** The campaigns' clock. */
  now: Date;
  /** The organization's zone, for an address no contact with a zone has. */
  orgZone: string;
  /** The sending hours (`HH:MM-HH:MM`), null for any time. */
  hours: string | null;
  /** The local send time (wall clock), null for none. */
  localAt: string | null;
}

/**
 * Of claimed batches, the recipients not due yet (`lib/sending-hours.ts`): the batch, the
 * recipient's position in it (from 1) and when it is due. Each address's zone is looked up in the
 * channel's address index.
 */
const dueLater = (byEmail: boolean) =>
  statement<DueKey, { batch_no: number; pos: number; due: Date }>(
    `herald_batches_due_later_${byEmail ? 'email' : 'phone'}`,
    `SELECT b.batch_no, x.pos::int AS pos, d.due
     FROM campaign_batches b
     CROSS JOIN LATERAL unnest(b.addresses) WITH ORDINALITY AS x(address, pos)
     CROSS JOIN LATERAL (SELECT ${recipientZoneSql(byEmail, { address: 'x.address', orgId: ':orgId', orgZone: ':orgZone' })} AS zone) z
     ${dueSql({ zone: 'z.zone', now: ':now::timestamptz', hours: ':hours::text', localAt: ':localAt::timestamp' }, 'd')}
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no = ANY(:batchNos::int[])
       AND b.status = 'sending' AND d.due > :now::timestamptz`,
  );
export const dueLaterByPhone = dueLater(false);
export const dueLaterByEmail = dueLater(true);

/**
 * Moves recipients of claimed batches (still `sending`) that are not due yet into new batches,
 * `pending` until then: grouped by when they are due, at most 100 a batch, numbered after the
 * channel's last. The batches they leave keep the rest (a batch left empty goes) and give up the
 * credits of those moved, worked out to the cent per batch; the new batches share exactly that sum,
 * in proportion to what each recipient held. Run after `lockCampaign` in the same transaction, so
 * the numbers taken are the channel's last. Answers the batches left (`reserved`, what each holds
 * now; `kept` false: it went).
 */
export const holdRecipients = statement<
  CampaignChannelKey & { held: string },
  { batch_no: number; reserved: number; kept: boolean }
>(
  'herald_batches_hold',
  `WITH h AS (SELECT * FROM json_to_recordset(:held::json) AS t(batch_no int, pos int, due timestamptz)),
   src AS (
     SELECT b.batch_no, b.reserved, b.recipient_count, b.addresses FROM campaign_batches b
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel
       AND b.batch_no IN (SELECT DISTINCT batch_no FROM h) AND b.status = 'sending'),
   moved AS (
     SELECT h.batch_no, h.pos, h.due, s.addresses[h.pos] AS address, s.reserved / s.recipient_count AS share
     FROM h JOIN src s ON s.batch_no = h.batch_no),
   taken AS (
     SELECT s.batch_no, s.reserved, round(s.reserved * count(*) / s.recipient_count, 2) AS given,
            ARRAY(SELECT u.a FROM unnest(s.addresses) WITH ORDINALITY AS u(a, p)
                  WHERE u.p NOT IN (SELECT m2.pos FROM moved m2 WHERE m2.batch_no = s.batch_no) ORDER BY u.p) AS kept
     FROM src s JOIN moved m ON m.batch_no = s.batch_no
     GROUP BY s.batch_no, s.reserved, s.recipient_count, s.addresses),
   top AS (
     SELECT coalesce(max(batch_no), 0) AS top FROM campaign_batches
     WHERE organization_id = :orgId AND campaign_id = :campaignId AND channel = :channel),
   chunked AS (
     SELECT m.*, (row_number() OVER (PARTITION BY m.due ORDER BY m.batch_no, m.pos) - 1) / 100 AS chunk FROM moved m),
   grouped AS (
     SELECT top.top + dense_rank() OVER (ORDER BY c.due, c.chunk) AS batch_no, c.due, c.batch_no AS src_no, c.pos, c.address, c.share
     FROM chunked c, top),
   fresh AS (
     SELECT g.batch_no, min(g.due) AS due, array_agg(g.address ORDER BY g.src_no, g.pos) AS addresses, sum(g.share) AS share
     FROM grouped g GROUP BY g.batch_no),
   shares AS (
     SELECT f.*, sum(f.share) OVER (ORDER BY f.batch_no) AS upto, sum(f.share) OVER () AS whole, (SELECT sum(given) FROM taken) AS given
     FROM fresh f),
   inserted AS (
     INSERT INTO campaign_batches (organization_id, campaign_id, channel, batch_no, addresses, recipient_count, reserved, due_at)
     SELECT :orgId, :campaignId, :channel, s.batch_no, s.addresses, cardinality(s.addresses),
            CASE WHEN s.whole > 0 THEN round(s.given * s.upto / s.whole, 2) - round(s.given * (s.upto - s.share) / s.whole, 2) ELSE 0 END,
            s.due
     FROM shares s),
   emptied AS (
     DELETE FROM campaign_batches b USING taken t
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no = t.batch_no
       AND cardinality(t.kept) = 0
     RETURNING b.batch_no),
   kept AS (
     UPDATE campaign_batches b SET addresses = t.kept, recipient_count = cardinality(t.kept), reserved = t.reserved - t.given
     FROM taken t
     WHERE b.organization_id = :orgId AND b.campaign_id = :campaignId AND b.channel = :channel AND b.batch_no = t.batch_no
       AND cardinality(t.kept) > 0
     RETURNING b.batch_no, b.reserved)
   SELECT batch_no, reserved::float8 AS reserved, true AS kept FROM kept
   UNION ALL SELECT batch_no, 0, false FROM emptied`,
);

/** Takes the campaign's row lock (as settling does), so that one worker at a time numbers new batches of it. */
export const lockCampaign = statement<{ orgId: string; campaignId: string }>(
  'herald_batches_lock_campaign',
  'SELECT 1 FROM campaigns WHERE organization_id = :orgId AND id = :campaignId FOR NO KEY UPDATE',
);

/** When the first batch of a campaign's channel that waits comes due (null: none waits). */
export const nextDue = statement<{ orgId: string; campaignId: string; channel: string; now: Date }, { due: Date | null }>(
  'herald_batches_next_due',
  `SELECT min(due_at) AS due FROM campaign_batches
   WHERE organization_id = :orgId AND campaign_id = :campaignId AND channel = :channel AND status = 'pending' AND due_at > :now::timestamptz`,
);

/** The zones of an organization's contacts that have one (each once). */
export const contactZones = statement<{ orgId: string }, { zones: string[] | null }>(
  'herald_contacts_zones',
  'SELECT array_agg(DISTINCT time_zone) AS zones FROM contacts WHERE organization_id = :orgId AND time_zone IS NOT NULL',
);

/** Whether a message to each of `zones` may go at `now` under the sending hours `hours` (no local send time). */
export const zonesOpen = statement<{ zones: string[]; now: Date; hours: string }, { open: boolean }>(
  'herald_zones_open',
  `SELECT coalesce(bool_and(d.due <= :now::timestamptz), true) AS open
   FROM unnest(:zones::text[]) AS z(zone)
   ${dueSql({ zone: 'z.zone', now: ':now::timestamptz', hours: ':hours::text', localAt: 'NULL::timestamp' }, 'd')}`,
);
