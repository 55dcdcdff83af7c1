import type { Knex } from 'knex';
import { z } from 'zod';
import type { Channel } from '../../delivery/types.js';
import type { CampaignRow } from './dto.js';

/**
 * Frequency caps, the one home of the rule: per organization and channel, at most `messages`
 * campaign messages to one address in the last `days` days. A campaign's audience is capped when it
 * starts: an address that already had that many from the organization's campaigns started in the
 * period is left out (`capped`, never charged). Those campaigns are the ones whose batches hold
 * their audience, so the count is read from there and nothing per recipient is written. Automated
 * campaigns (transactional: they answer a contact's own action), resends of a campaign's failures,
 * test sends and single sends are never capped and never count; a campaign an admin marks
 * `exemptFromCaps` (a service notice) is not capped and does not count either.
 */

export interface FrequencyCap {
  messages: number;
  days: number;
}
export type FrequencyCaps = Partial<Record<Channel, FrequencyCap>>;

const cap = z.strictObject({ messages: z.number().int().min(1).max(1000), days: z.number().int().min(1).max(365) });

/** The caps as input takes them: a channel left out, or null, is not capped. */
export const frequencyCapsInput = () =>
  z.strictObject({ sms: cap.nullable().optional(), email: cap.nullable().optional(), whatsapp: cap.nullable().optional() });

/** The caps as stored and shown: only the channels capped, in channel order. */
export const storedCaps = (given: Partial<Record<Channel, FrequencyCap | null | undefined>>): FrequencyCaps =>
  Object.fromEntries((['email', 'sms', 'whatsapp'] as const).flatMap((c) => (given[c] ? [[c, { messages: given[c]!.messages, days: given[c]!.days }]] : [])));

/** "The campaign `alias` counts against the caps": a one-off campaign or a recurring campaign's run, not exempt. */
const countedSql = (alias: string) =>
  `((${alias}.type IN ('broadcast', 'targeted') AND ${alias}.parent_id IS NULL) OR (${alias}.type = 'recurring' AND ${alias}.parent_id IS NOT NULL))
   AND NOT ${alias}.exempt_from_caps`;

/** Whether a campaign (or run) is held to the caps: as counted, the same campaigns. */
export const isCapped = (campaign: Pick<CampaignRow, 'type' | 'parent_id' | 'exempt_from_caps'>) =>
  !campaign.exempt_from_caps && (campaign.parent_id === null ? campaign.type === 'broadcast' || campaign.type === 'targeted' : campaign.type === 'recurring');

export interface Sql {
  sql: string;
  bindings: Knex.Value[];
}

/** The campaigns started in a cap's period other than this one, as SQL over `campaigns c`. */
const inPeriod = (campaign: CampaignRow, days: number): Sql => ({
  sql: `c.organization_id = ? AND c.id <> ? AND c.started_at > now() - make_interval(days => ?) AND ${countedSql('c')}`,
  bindings: [campaign.organization_id, campaign.id, days],
});

/** The addresses of a channel that had `messages` or more from the campaigns in the period: each campaign's batches hold each address once. */
export function reachedSql(campaign: CampaignRow, channel: Channel, cap: FrequencyCap): Sql {
  const period = inPeriod(campaign, cap.days);
  return {
    sql: `SELECT a.address FROM campaigns c
          JOIN campaign_batches b ON b.organization_id = c.organization_id AND b.campaign_id = c.id
          CROSS JOIN LATERAL unnest(b.addresses) AS a(address)
          WHERE ${period.sql} AND b.organization_id = ? AND b.channel = ? AND b.status <> 'canceled'
          GROUP BY a.address HAVING count(*) >= ?`,
    bindings: [...period.bindings, campaign.organization_id, channel, cap.messages],
  };
}

/** The caps of its organization on a campaign's channels, when the campaign is held to caps. */
export async function configuredCaps(db: Knex | Knex.Transaction, campaign: CampaignRow): Promise<FrequencyCaps> {
  if (!isCapped(campaign)) return {};
  const org = (await db('organizations').where({ id: campaign.organization_id }).first('frequency_caps')) as { frequency_caps: FrequencyCaps } | undefined;
  return Object.fromEntries(Object.entries(org?.frequency_caps ?? {}).filter(([channel]) => campaign.channels.includes(channel as Channel)));
}

/**
 * Of a campaign's caps (`configuredCaps`), those that can hold its audience back: the organization
 * started at least `messages` counted campaigns on the channel in the period (fewer, and nobody can
 * have reached the cap: nothing more is read). At launch, call it under `lockCaps`.
 */
export async function bitingCaps(db: Knex | Knex.Transaction, campaign: CampaignRow, caps: FrequencyCaps): Promise<FrequencyCaps> {
  const biting: FrequencyCaps = {};
  for (const [channel, cap] of Object.entries(caps) as [Channel, FrequencyCap][]) {
    const period = inPeriod(campaign, cap.days);
    const row = (
      await db.raw(
        `SELECT count(*)::int AS n FROM (SELECT 1 FROM campaigns c WHERE ${period.sql} AND ? = ANY(c.channels) AND c.started_at IS NOT NULL LIMIT ?) recent`,
        [...period.bindings, channel, cap.messages],
      )
    ).rows[0] as { n: number };
    if (row.n >= cap.messages) biting[channel] = cap;
  }
  return biting;
}

/**
 * Launches of one organization's capped campaigns one at a time, to the end of their transaction:
 * a launch counts the campaigns started before it, committed. (An advisory lock: taken where the
 * transaction runs, on Citus its coordinator.)
 */
export const lockCaps = (trx: Knex.Transaction, orgId: string) => trx.raw(`SELECT pg_advisory_xact_lock(hashtext('herald.caps'), hashtext(?))`, [orgId]);
