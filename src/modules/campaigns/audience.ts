import type { Knex } from 'knex';
import { erasureKeySql, tokenSql } from '../erasure/tokens.js';
import { MAX_LOG_RECIPIENTS } from '../../delivery/log-recipients.js';
import type { Channel } from '../../delivery/types.js';
import { reachedSql, type FrequencyCap, type FrequencyCaps, type Sql } from './caps.js';
import type { CampaignRow } from './dto.js';

/**
 * Where a contact's address for each channel is; the phone and lower(email) indexes serve these in
 * order. `left` is "this contact left the channel" (consent), written as the partial indexes of
 * those contacts are (see consent/service.ts `leftChannel`), so the few of them are read from there.
 */
const ADDRESS: Record<Channel, { expr: (alias: string) => string; present: (alias: string) => string; left: (alias: string) => string }> = {
  sms: {
    expr: (a) => `${a}.phone`,
    present: (a) => `${a}.phone IS NOT NULL`,
    left: (a) => `${a}.unsubscribed ? 'sms' AND (${a}.unsubscribed -> 'sms') IS NOT NULL`,
  },
  whatsapp: {
    expr: (a) => `${a}.phone`,
    present: (a) => `${a}.phone IS NOT NULL`,
    left: (a) => `${a}.unsubscribed ? 'whatsapp' AND (${a}.unsubscribed -> 'whatsapp') IS NOT NULL`,
  },
  email: {
    expr: (a) => `lower(${a}.email)`,
    present: (a) => `${a}.email IS NOT NULL`,
    left: (a) => `${a}.unsubscribed ? 'email' AND (${a}.unsubscribed -> 'email') IS NOT NULL`,
  },
};

export interface Audience {
  /** Recipients per channel. */
  counts: Partial<Record<Channel, number>>;
  /** Addresses left out per channel: a contact with them unsubscribed from it, or they are on the suppression list. */
  suppressed: Partial<Record<Channel, number>>;
  /** Addresses left out per channel because they reached its frequency cap. */
  capped: Partial<Record<Channel, number>>;
  /** What the batches cost at the channels' unit costs (each batch's cost rounded to the cent). */
  cost: number;
  /** The same per channel. */
  costs: Partial<Record<Channel, number>>;
}

const manualOf = (campaign: CampaignRow, channel: Channel) => campaign.manual_recipients.filter((r) => (channel === 'email') === r.includes('@'));

/** "The contact `c` is one the campaign names" (all, chosen, or members of its groups), as SQL. */
function chosen(campaign: CampaignRow, alias: string): Sql {
  if (campaign.recipient_type === 'all') return { sql: '', bindings: [] };
  return {
    sql: `AND (${alias}.id = ANY(?::uuid[]) OR EXISTS (
            SELECT 1 FROM contact_groups cg
            WHERE cg.organization_id = ? AND cg.contact_id = ${alias}.id AND cg.group_id = ANY(?::uuid[])))`,
    bindings: [campaign.selected_contacts, campaign.organization_id, campaign.selected_groups],
  };
}

/** The `?` of knex raw SQL is a binding: the key-exists operator is escaped. */
const escapeExists = (sql: string) => sql.replace(/ \? '/g, " \\? '");

/**
 * The distinct addresses a campaign sends to on one channel: those of the contacts it names, then
 * the manual addresses none of those contacts has, less every address of a contact that left the
 * channel. Contact addresses come in the order of the channel's (organization, address) index, so
 * deduplicating them needs no hash or sort; the two parts are disjoint, so nothing deduplicates
 * across them. Every subquery filters its tables by the organization itself, not only through
 * correlation with an outer row: on Citus the whole SELECT is one organization's, run on its shard.
 */
export function audienceAddresses(campaign: CampaignRow, channel: Channel): Sql {
  const orgId = campaign.organization_id;
  const { expr, present, left } = ADDRESS[channel];
  const inChosen = chosen(campaign, 'c');
  // Left the channel, or (email) on the organization's suppression list, as itself or erased (its
  // token: computed only for an organization that has erased someone, see erasure/tokens.ts).
  const listed = (address: string) =>
    channel === 'email'
      ? ` AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.organization_id = ? AND s.channel = 'email' AND s.address IN (${address}, ${tokenSql(address, erasureKeySql('?'))}))`
      : '';
  const notLeft = (address: string) => `NOT EXISTS (SELECT 1 FROM contacts u WHERE u.organization_id = ? AND ${expr('u')} = ${address} AND ${escapeExists(left('u'))})${listed(address)}`;
  const leftBindings = channel === 'email' ? [orgId, orgId, orgId] : [orgId];
  const bindings: Knex.Value[] = [orgId, ...inChosen.bindings, ...leftBindings];
  const parts = [
    `(SELECT DISTINCT ${expr('c')} AS address FROM contacts c
      WHERE c.organization_id = ? AND ${present('c')} ${inChosen.sql} AND ${notLeft(expr('c'))} ORDER BY 1)`,
  ];
  const manual = manualOf(campaign, channel);
  if (manual.length) {
    bindings.push(manual, orgId, ...inChosen.bindings, ...leftBindings);
    parts.push(`(SELECT DISTINCT m.address FROM unnest(?::text[]) AS m(address)
       WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.organization_id = ? AND ${expr('c')} = m.address AND ${present('c')} ${inChosen.sql})
         AND ${notLeft('m.address')})`);
  }
  return { sql: parts.join(' UNION ALL '), bindings };
}

/**
 * How many of the addresses a campaign names on one channel are left out because a contact with
 * the address unsubscribed from it: read from the few contacts that left (their partial index),
 * each checked against the campaign's choice.
 */
export function suppressedAddresses(campaign: CampaignRow, channel: Channel): Sql {
  const orgId = campaign.organization_id;
  const { expr, present, left } = ADDRESS[channel];
  const everyone = campaign.recipient_type === 'all';
  const inChosen = chosen(campaign, 'c');
  const named = everyone
    ? 'true'
    : `(${expr('u')} = ANY(?::text[]) OR EXISTS (SELECT 1 FROM contacts c WHERE c.organization_id = ? AND ${expr('c')} = ${expr('u')} ${inChosen.sql}))`;
  const bindings: Knex.Value[] = [orgId, ...(everyone ? [] : [manualOf(campaign, channel), orgId, ...inChosen.bindings])];
  return {
    sql: `SELECT count(DISTINCT ${expr('u')})::int AS n FROM contacts u WHERE u.organization_id = ? AND ${present('u')} AND ${escapeExists(left('u'))} AND ${named}`,
    bindings,
  };
}

/**
 * How many email addresses a campaign names are left out because they are on the organization's
 * suppression list (and not already left out as unsubscribed): read from the list, each checked
 * against the campaign's choice.
 */
export function listedAddresses(campaign: CampaignRow): Sql {
  const orgId = campaign.organization_id;
  const { expr, present, left } = ADDRESS.email;
  const inChosen = chosen(campaign, 'c');
  const everyone = campaign.recipient_type === 'all';
  const named = `(${everyone ? 'false' : 's.address = ANY(?::text[])'} OR EXISTS (SELECT 1 FROM contacts c WHERE c.organization_id = ? AND ${expr('c')} = s.address AND ${present('c')} ${inChosen.sql}))`;
  // Addresses listed under their token (erased): the campaign's own addresses whose token is listed,
  // counted only for an organization that has erased someone (a token computed per address).
  const token = tokenSql('a.address', 'k.key');
  const erased = `SELECT count(DISTINCT a.address)::int FROM (SELECT ${erasureKeySql('?')} AS key) k,
      LATERAL (SELECT ${expr('c')} AS address FROM contacts c WHERE k.key IS NOT NULL AND c.organization_id = ? AND ${present('c')} ${inChosen.sql}
               UNION SELECT m FROM unnest(?::text[]) AS m WHERE k.key IS NOT NULL) a
      WHERE EXISTS (SELECT 1 FROM suppressions s WHERE s.organization_id = ? AND s.channel = 'email' AND s.address = ${token})
        AND NOT EXISTS (SELECT 1 FROM contacts u WHERE u.organization_id = ? AND ${expr('u')} = a.address AND ${escapeExists(left('u'))})`;
  return {
    sql: `SELECT (SELECT count(*)::int FROM suppressions s
          WHERE s.organization_id = ? AND s.channel = 'email' AND ${named}
            AND NOT EXISTS (SELECT 1 FROM contacts u WHERE u.organization_id = ? AND ${expr('u')} = s.address AND ${escapeExists(left('u'))})) + (${erased}) AS n`,
    bindings: [
      orgId, ...(everyone ? [] : [manualOf(campaign, 'email')]), orgId, ...inChosen.bindings, orgId,
      orgId, orgId, ...inChosen.bindings, everyone ? [] : manualOf(campaign, 'email'), orgId, orgId,
    ],
  };
}

/** Per channel, the addresses left out: unsubscribed, and (email) on the suppression list. */
export async function suppressionCounts(db: Knex | Knex.Transaction, campaign: CampaignRow): Promise<Partial<Record<Channel, { unsubscribed: number; listed: number }>>> {
  const parts = campaign.channels.map((channel) => suppressedAddresses(campaign, channel));
  const listed = campaign.channels.includes('email') ? listedAddresses(campaign) : null;
  const result = await db.raw(
    `SELECT ${[...parts.map((p, i) => `(${p.sql}) AS c${i}`), ...(listed ? [`(${listed.sql}) AS listed`] : [])].join(', ')}`,
    [...parts.flatMap((p) => p.bindings), ...(listed?.bindings ?? [])],
  );
  const row = result.rows[0] as Record<string, number>;
  return Object.fromEntries(campaign.channels.map((channel, i) => [channel, { unsubscribed: row[`c${i}`] ?? 0, listed: channel === 'email' ? (row.listed ?? 0) : 0 }]));
}

/** The suppressed count of each of the campaign's channels (unsubscribed and listed together), in one statement. */
export async function suppressedCounts(db: Knex | Knex.Transaction, campaign: CampaignRow): Promise<Partial<Record<Channel, number>>> {
  const counts = await suppressionCounts(db, campaign);
  return Object.fromEntries(Object.entries(counts).map(([channel, c]) => [channel, c.unsubscribed + c.listed]));
}

/** A channel's audience less the addresses that reached its cap (`caps.ts`), as SQL; the audience itself when no cap bites. */
export function cappedAudience(campaign: CampaignRow, channel: Channel, cap: FrequencyCap | undefined): Sql {
  const addresses = audienceAddresses(campaign, channel);
  if (!cap) return addresses;
  const reached = reachedSql(campaign, channel, cap);
  return {
    sql: `SELECT d.address FROM (${addresses.sql}) d WHERE d.address NOT IN (${reached.sql})`,
    bindings: [...addresses.bindings, ...reached.bindings],
  };
}

/** Per channel whose cap bites, how many addresses of its audience reached the cap. */
export async function cappedCounts(db: Knex | Knex.Transaction, campaign: CampaignRow, caps: FrequencyCaps): Promise<Partial<Record<Channel, number>>> {
  const counts: Partial<Record<Channel, number>> = {};
  for (const [channel, cap] of Object.entries(caps) as [Channel, FrequencyCap][]) {
    const addresses = audienceAddresses(campaign, channel);
    const reached = reachedSql(campaign, channel, cap);
    const row = (
      await db.raw(`SELECT count(*)::int AS n FROM (${addresses.sql}) d WHERE d.address IN (${reached.sql})`, [...addresses.bindings, ...reached.bindings])
    ).rows[0] as { n: number };
    counts[channel] = row.n;
  }
  return counts;
}

/**
 * Materialises a campaign's audience in one INSERT ... SELECT, as batches: its addresses per
 * channel (`audienceAddresses`, less those that reached a cap that bites: `caps`), numbered and cut
 * into rows of at most 100 addresses (`campaign_batches`, one per channel and batch). Each batch is
 * written holding the credits it costs (`units`, per channel): the caller reserves their sum, or
 * releases the batches'.
 */
export async function materialiseAudience(
  trx: Knex.Transaction,
  campaign: CampaignRow,
  units: Partial<Record<Channel, number>>,
  caps: FrequencyCaps = {},
): Promise<Audience> {
  const bindings: Knex.Value[] = [];
  const perChannel = campaign.channels.map((channel) => {
    const addresses = cappedAudience(campaign, channel, caps[channel]);
    bindings.push(channel, units[channel] ?? 0, ...addresses.bindings);
    // Grouped per channel on the batch number alone: hashing one integer per address, not the
    // channel and unit as well, was a fifth of the statement.
    return `
      SELECT ?::text AS channel, ?::numeric AS unit, b, array_agg(address) AS addresses, count(*) AS n
      FROM (SELECT address, (row_number() OVER () - 1) / ${MAX_LOG_RECIPIENTS} AS b FROM (${addresses.sql}) distinct_addresses) numbered
      GROUP BY b`;
  });
  // The audience is deduplicated in memory rather than spilled to disk. On Citus the SELECT runs on
  // a worker, which a SET LOCAL reaches only once the transaction propagates them (one round trip
  // still; on plain Postgres the citus setting is an inert placeholder).
  await trx.raw("SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL work_mem = '64MB'");
  const counts = await trx.raw(
    `WITH inserted AS (
       INSERT INTO campaign_batches (organization_id, campaign_id, channel, batch_no, addresses, recipient_count, reserved)
       SELECT ?, ?, channel, b, addresses, n, round(unit * n, 2)
       FROM (${perChannel.join(' UNION ALL ')}) per_channel
       RETURNING channel, recipient_count, reserved)
     SELECT channel, sum(recipient_count)::int AS n, sum(reserved)::float AS cost FROM inserted GROUP BY channel`,
    [campaign.organization_id, campaign.id, ...bindings],
  );
  const rows = counts.rows as { channel: Channel; n: number; cost: number }[];
  return {
    counts: Object.fromEntries(rows.map((r) => [r.channel, r.n])),
    suppressed: await suppressedCounts(trx, campaign),
    capped: await cappedCounts(trx, campaign, caps),
    cost: Math.round(rows.reduce((sum, r) => sum + r.cost, 0) * 100) / 100,
    costs: Object.fromEntries(rows.map((r) => [r.channel, r.cost])),
  };
}

/**
 * A campaign's audience size per channel, as `materialiseAudience` would make it, without writing
 * anything: one count per channel, run side by side on the pool's connections (on a transaction,
 * one after another).
 */
export async function audienceCounts(db: Knex | Knex.Transaction, campaign: CampaignRow): Promise<Partial<Record<Channel, number>>> {
  const counts = await Promise.all(
    campaign.channels.map(async (channel) => {
      const { sql, bindings } = audienceAddresses(campaign, channel);
      const row = (await db.raw(`SELECT count(*)::int AS n FROM (${sql}) a`, bindings)).rows[0] as { n: number };
      return [channel, row.n] as const;
    }),
  );
  return Object.fromEntries(counts);
}
