import type { Knex } from 'knex';
import type { Channel } from '../../delivery/types.js';
import { dueSql, recipientZoneSql } from '../../lib/sending-hours.js';
import { cappedAudience } from './audience.js';
import type { FrequencyCap } from './caps.js';
import type { CampaignRow } from './dto.js';

/**
 * When a campaign's recipients may be sent (`lib/sending-hours.ts`), as the estimate and the preview
 * tell it before launch: the same rule and SQL the engine holds claimed batches to.
 */

/** A campaign's timing: its sending hours (its own, else its organization's) and local send time, with its organization's zone. */
export interface Timing {
  /** The campaigns' clock. */
  now: Date;
  orgZone: string;
  hours: string | null;
  localAt: string | null;
}

/**
 * A campaign's timing, or null when every recipient is due at once: no sending hours and no local
 * send time, or an automated campaign (its messages are transactional: they answer a contact's own
 * action, at any hour).
 */
export function timingOf(
  campaign: Pick<CampaignRow, 'type' | 'local_send_at'>,
  org: { time_zone: string; sending_hours: string | null },
  now: Date,
): Timing | null {
  if (campaign.type === 'automated' || (!org.sending_hours && !campaign.local_send_at)) return null;
  return { now, orgZone: org.time_zone, hours: org.sending_hours, localAt: campaign.local_send_at };
}

/** A campaign's timing read with its organization's settings (before launch: a run's are its campaign's). */
export async function readTiming(db: Knex | Knex.Transaction, campaign: CampaignRow, now: Date): Promise<Timing | null> {
  const org = (await db('organizations').where({ id: campaign.organization_id }).first('time_zone', 'sending_hours')) as {
    time_zone: string;
    sending_hours: string | null;
  };
  return timingOf(campaign, { time_zone: org.time_zone, sending_hours: campaign.sending_hours ?? org.sending_hours }, now);
}

/** A zone of an audience: its recipients, and when they would get the campaign launched now (null: at once). */
export interface ZoneTiming {
  timezone: string;
  recipients: number;
  sendsAt: string | null;
}

/** The timing's values, once each, as the row `p` that `ZONE` and `DUE` read. */
const PARAMS = '(SELECT ?::timestamptz AS now, ?::text AS hours, ?::timestamp AS local_at, ?::uuid AS org_id, ?::text AS org_zone) p';
const paramsOf = (timing: Timing, orgId: string) => [timing.now, timing.hours, timing.localAt, orgId, timing.orgZone];
const zoneOf = (channel: Channel) => recipientZoneSql(channel === 'email', { address: 'a.address', orgId: 'p.org_id', orgZone: 'p.org_zone' });
const DUE = dueSql({ zone: 'z.zone', now: 'p.now', hours: 'p.hours', localAt: 'p.local_at' }, 'd');

/**
 * A channel's audience (less the addresses its cap leaves out, when it bites) by zone, as launched
 * now would send it: per zone its recipients and when they are due (each address's zone looked up
 * in the channel's address index).
 */
export async function audienceTiming(
  db: Knex | Knex.Transaction,
  campaign: CampaignRow,
  channel: Channel,
  timing: Timing,
  cap: FrequencyCap | undefined,
): Promise<ZoneTiming[]> {
  const { sql, bindings } = cappedAudience(campaign, channel, cap);
  const rows = (
    await db.raw(
      `SELECT z.zone, count(*)::int AS n, min(d.due) AS due
       FROM ${PARAMS} CROSS JOIN (${sql}) a
       CROSS JOIN LATERAL (SELECT ${zoneOf(channel)} AS zone) z
       ${DUE}
       GROUP BY z.zone`,
      [...paramsOf(timing, campaign.organization_id), ...bindings],
    )
  ).rows as { zone: string; n: number; due: Date }[];
  return rows
    .map((r) => ({ timezone: r.zone, recipients: r.n, sendsAt: r.due.getTime() > timing.now.getTime() ? r.due.toISOString() : null }))
    .sort((a, b) => (a.sendsAt ?? '').localeCompare(b.sendsAt ?? '') || a.timezone.localeCompare(b.timezone));
}

/** When one address would get the campaign launched now (null: at once). */
export async function addressDue(db: Knex | Knex.Transaction, campaign: CampaignRow, channel: Channel, address: string, timing: Timing): Promise<string | null> {
  const row = (
    await db.raw(`SELECT d.due FROM ${PARAMS} CROSS JOIN (SELECT ?::text AS address) a CROSS JOIN LATERAL (SELECT ${zoneOf(channel)} AS zone) z ${DUE}`, [
      ...paramsOf(timing, campaign.organization_id),
      address,
    ])
  ).rows[0] as { due: Date };
  return row.due.getTime() > timing.now.getTime() ? row.due.toISOString() : null;
}
