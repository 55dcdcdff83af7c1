import type { Knex } from 'knex';
import { MAX_LOG_RECIPIENTS } from '../../delivery/log-recipients.js';
import type { Channel } from '../../delivery/types.js';
import type { CampaignRow } from './dto.js';


/** Where a contact's address for each channel is; the phone and lower(email) indexes serve these in order. */
const ADDRESS: Record<Channel, { expr: string; present: string }> = {
  sms: { expr: 'c.phone', present: 'c.phone IS NOT NULL' },
  whatsapp: { expr: 'c.phone', present: 'c.phone IS NOT NULL' },
  email: { expr: 'lower(c.email)', present: 'c.email IS NOT NULL' },
};

export interface Audience {
  /** Recipients per channel. */
  counts: Partial<Record<Channel, number>>;
  /** What the batches cost at the channels' unit costs (each batch's cost rounded to the cent). */
  cost: number;
}

/**
 * Materialises a campaign's audience in one INSERT ... SELECT, as batches: the contacts it names
 * (all, chosen, or members of its groups) with an address for each channel, plus its manual
 * addresses, deduplicated per channel, numbered and cut into rows of at most 100
 * addresses (`campaign_batches`, one per channel and batch). Each batch is written holding the
 * credits it costs (`units`, per channel): the caller reserves their sum, or releases the batches'.
 */
export async function materialiseAudience(trx: Knex.Transaction, campaign: CampaignRow, units: Partial<Record<Channel, number>>): Promise<Audience> {
  const orgId = campaign.organization_id;
  const everyone = campaign.recipient_type === 'all';
  const manual: Record<Channel, string[]> = {
    email: campaign.manual_recipients.filter((r) => r.includes('@')),
    sms: campaign.manual_recipients.filter((r) => !r.includes('@')),
    whatsapp: campaign.manual_recipients.filter((r) => !r.includes('@')),
  };
  // One numbered audience per channel: the distinct contact addresses, read in the order of the
  // channel's (organization, address) index so that deduplicating them needs no hash or sort, then
  // the manual addresses that none of those contacts has. The two parts are disjoint, so nothing
  // deduplicates across them; a batch is any 100 of the numbered addresses. For `all` the contacts
  // filter is left out altogether. Every subquery filters its tables by the organization itself,
  // not only through correlation with an outer row: on Citus the whole SELECT is then one
  // organization's, run on its shard.
  const bindings: Knex.Value[] = [];
  const perChannel = campaign.channels.map((channel) => {
    const { expr, present } = ADDRESS[channel];
    const chosen = everyone
      ? ''
      : `AND (c.id = ANY(?::uuid[]) OR EXISTS (
           SELECT 1 FROM contact_groups cg
           WHERE cg.organization_id = ? AND cg.contact_id = c.id AND cg.group_id = ANY(?::uuid[])))`;
    const chosenBindings = everyone ? [] : [campaign.selected_contacts, orgId, campaign.selected_groups];
    bindings.push(channel, units[channel] ?? 0, orgId, ...chosenBindings);
    const parts = [`(SELECT DISTINCT ${expr} AS address FROM contacts c WHERE c.organization_id = ? AND ${present} ${chosen} ORDER BY 1)`];
    if (manual[channel].length) {
      bindings.push(manual[channel], orgId, ...chosenBindings);
      parts.push(`(SELECT DISTINCT m.address FROM unnest(?::text[]) AS m(address)
         WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.organization_id = ? AND ${expr} = m.address AND ${present} ${chosen}))`);
    }
    // Grouped per channel on the batch number alone: hashing one integer per address, not the
    // channel and unit as well, was a fifth of the statement.
    return `
      SELECT ?::text AS channel, ?::numeric AS unit, b, array_agg(address) AS addresses, count(*) AS n
      FROM (SELECT address, (row_number() OVER () - 1) / ${MAX_LOG_RECIPIENTS} AS b FROM (${parts.join(' UNION ALL ')}) distinct_addresses) numbered
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
    [orgId, campaign.id, ...bindings],
  );
  const rows = counts.rows as { channel: Channel; n: number; cost: number }[];
  return { counts: Object.fromEntries(rows.map((r) => [r.channel, r.n])), cost: Math.round(rows.reduce((sum, r) => sum + r.cost, 0) * 100) / 100 };
}
