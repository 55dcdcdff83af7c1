import type { Knex } from 'knex';

/**
 * A campaign's audience is kept per batch instead of per recipient: one row per channel and batch
 * of at most 100 addresses (an array), which is the unit workers claim, lease, send and settle, and
 * whose message log is written when it settles. Batches in flight are carried over: a batch with an
 * unsettled log is `sending` under that log's lease and keeps the credits the log holds.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE campaign_batches (
      organization_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      channel text NOT NULL CHECK (channel IN ('sms', 'email', 'whatsapp')),
      batch_no integer NOT NULL,
      addresses text[] NOT NULL,
      recipient_count integer NOT NULL CHECK (recipient_count = cardinality(addresses)),
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'settled', 'canceled')),
      attempts integer NOT NULL DEFAULT 0,
      reserved numeric(14, 2) NOT NULL DEFAULT 0,
      sent integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      claimed_at timestamptz,
      settled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, campaign_id, channel, batch_no),
      FOREIGN KEY (organization_id, campaign_id) REFERENCES campaigns (organization_id, id) ON DELETE CASCADE
    )`);
  // Recipients of one batch share their state (a batch is claimed and settled as a whole); a batch
  // whose recipients appear in an unsettled campaign log was being sent when the code changed.
  await knex.raw(`
    WITH in_flight AS (
      SELECT l.organization_id, l.campaign_id, l.channel, r->>'recipient' AS address, l.reserved, l.updated_at
      FROM message_logs l, json_array_elements(l.recipients) r
      WHERE l.campaign_id IS NOT NULL AND l.settled_at IS NULL)
    INSERT INTO campaign_batches (organization_id, campaign_id, channel, batch_no, addresses, recipient_count, status, attempts,
                                  reserved, sent, failed, claimed_at, settled_at, created_at)
    SELECT cr.organization_id, cr.campaign_id, cr.channel, cr.batch_no, array_agg(cr.address ORDER BY cr.address), count(*),
           CASE WHEN bool_or(cr.status IN ('sent', 'failed')) THEN 'settled'
                WHEN bool_or(i.address IS NOT NULL) THEN 'sending'
                WHEN bool_or(cr.status = 'canceled') THEN 'canceled'
                ELSE 'pending' END,
           max(cr.attempts), coalesce(max(i.reserved), 0),
           count(*) FILTER (WHERE cr.status = 'sent'), count(*) FILTER (WHERE cr.status = 'failed'),
           max(i.updated_at), CASE WHEN bool_or(cr.status IN ('sent', 'failed')) THEN max(cr.updated_at) END, min(cr.updated_at)
    FROM campaign_recipients cr
    LEFT JOIN in_flight i
      ON i.organization_id = cr.organization_id AND i.campaign_id = cr.campaign_id AND i.channel = cr.channel AND i.address = cr.address
    GROUP BY cr.organization_id, cr.campaign_id, cr.channel, cr.batch_no`);
  await knex.raw('DROP TABLE campaign_recipients');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE campaign_recipients (
      organization_id uuid NOT NULL,
      campaign_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      channel text NOT NULL,
      address text NOT NULL,
      contact_id uuid,
      batch_no integer NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'canceled')),
      attempts integer NOT NULL DEFAULT 0,
      claimed_at timestamptz,
      error text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, campaign_id, id),
      UNIQUE (organization_id, campaign_id, channel, address),
      FOREIGN KEY (organization_id, campaign_id) REFERENCES campaigns (organization_id, id) ON DELETE CASCADE
    ) WITH (fillfactor = 50)`);
  await knex.raw('CREATE INDEX campaign_recipients_chunk_idx ON campaign_recipients (organization_id, campaign_id, channel, batch_no)');
  // A settled batch's recipients take their outcome from its log, and each its contact again (the
  // batches do not keep it). Batches being sent give their reservation back: the old code claims
  // them afresh, reserving again.
  await knex.raw(`
    WITH outcomes AS (
      SELECT DISTINCT ON (m.organization_id, m.campaign_id, m.channel, e->>'recipient')
             m.organization_id, m.campaign_id, m.channel, e->>'recipient' AS address, e->>'status' AS status, e->>'error' AS error
      FROM message_logs m, json_array_elements(m.recipients) e
      WHERE m.campaign_id IS NOT NULL AND m.settled_at IS NOT NULL
      ORDER BY m.organization_id, m.campaign_id, m.channel, e->>'recipient', m.settled_at)
    INSERT INTO campaign_recipients (organization_id, campaign_id, channel, address, contact_id, batch_no, status, attempts, error, updated_at)
    SELECT b.organization_id, b.campaign_id, b.channel, a.address,
           CASE WHEN b.channel = 'email'
                THEN (SELECT c.id FROM contacts c WHERE c.organization_id = b.organization_id AND lower(c.email) = a.address AND c.email IS NOT NULL LIMIT 1)
                ELSE (SELECT c.id FROM contacts c WHERE c.organization_id = b.organization_id AND c.phone = a.address AND c.phone IS NOT NULL LIMIT 1) END,
           b.batch_no,
           CASE b.status WHEN 'settled' THEN CASE WHEN o.status = 'failed' THEN 'failed' ELSE 'sent' END
                         WHEN 'canceled' THEN 'canceled' ELSE 'pending' END,
           b.attempts, CASE WHEN b.status = 'settled' THEN o.error END, coalesce(b.settled_at, b.claimed_at, b.created_at)
    FROM campaign_batches b
    CROSS JOIN LATERAL unnest(b.addresses) AS a(address)
    LEFT JOIN outcomes o
      ON o.organization_id = b.organization_id AND o.campaign_id = b.campaign_id AND o.channel = b.channel AND o.address = a.address`);
  // (A batch carried over by \`up\` with its unsettled log still holds through that log.)
  await knex.raw(`
    UPDATE organizations o SET credits = o.credits + h.held
    FROM (
      SELECT b.organization_id, sum(b.reserved) AS held FROM campaign_batches b
      WHERE b.status = 'sending' AND NOT EXISTS (
        SELECT 1 FROM message_logs l
        WHERE l.organization_id = b.organization_id AND l.campaign_id = b.campaign_id AND l.channel = b.channel AND l.settled_at IS NULL
          AND EXISTS (SELECT 1 FROM json_array_elements(l.recipients) r WHERE r->>'recipient' = b.addresses[1]))
      GROUP BY b.organization_id) h
    WHERE o.id = h.organization_id AND h.held > 0`);
  await knex.raw('DROP TABLE campaign_batches');
}
