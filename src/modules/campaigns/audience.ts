import type { Knex } from 'knex';
import type { Channel } from '../../delivery/types.js';
import type { CampaignRow } from './dto.js';

export const BATCH_SIZE = 100;

/**
 * Materialises a campaign's audience in one INSERT ... SELECT: the contacts it names (all, chosen,
 * or members of its groups) with an address for each channel, plus its manual addresses, deduplicated
 * per channel and numbered into batches of at most 100. Returns the number of recipients per channel.
 */
export async function materialiseAudience(trx: Knex.Transaction, campaign: CampaignRow): Promise<Record<string, number>> {
  const orgId = campaign.organization_id;
  const everyone = campaign.recipient_type === 'all';
  const manualEmails = campaign.manual_recipients.filter((r) => r.includes('@'));
  const manualPhones = campaign.manual_recipients.filter((r) => !r.includes('@'));
  // The audience is sorted (deduplicated and numbered) in memory rather than spilled to disk.
  await trx.raw("SET LOCAL work_mem = '64MB'");
  const counts = await trx.raw(
    `
    WITH inserted AS (
    INSERT INTO campaign_recipients (organization_id, campaign_id, channel, address, contact_id, batch_no)
    SELECT :orgId, :campaignId, channel, address, contact_id,
           (row_number() OVER (PARTITION BY channel ORDER BY address) - 1) / :batch
    FROM (
      SELECT DISTINCT ON (channel, address) channel, address, contact_id
      FROM (
        SELECT ch.channel, CASE WHEN ch.channel = 'email' THEN lower(c.email) ELSE c.phone END AS address, c.id AS contact_id
        FROM contacts c
        CROSS JOIN unnest(:channels::text[]) AS ch(channel)
        WHERE c.organization_id = :orgId
          AND (:everyone OR c.id = ANY(:contacts::uuid[]) OR EXISTS (
            SELECT 1 FROM contact_groups cg
            WHERE cg.organization_id = c.organization_id AND cg.contact_id = c.id AND cg.group_id = ANY(:groups::uuid[])))
        UNION ALL
        SELECT 'email', m.address, NULL FROM unnest(:emails::text[]) AS m(address) WHERE 'email' = ANY(:channels::text[])
        UNION ALL
        SELECT ch.channel, m.address, NULL
        FROM unnest(:phones::text[]) AS m(address)
        CROSS JOIN unnest(:channels::text[]) AS ch(channel)
        WHERE ch.channel IN ('sms', 'whatsapp')
      ) candidates
      WHERE address IS NOT NULL
      ORDER BY channel, address, contact_id NULLS LAST
    ) audience
    RETURNING channel)
    SELECT channel, count(*)::int AS n FROM inserted GROUP BY channel`,
    {
      orgId,
      campaignId: campaign.id,
      batch: BATCH_SIZE,
      channels: campaign.channels,
      everyone,
      contacts: campaign.selected_contacts,
      groups: campaign.selected_groups,
      emails: manualEmails,
      phones: manualPhones,
    },
  );
  return Object.fromEntries(counts.rows.map((r: { channel: Channel; n: number }) => [r.channel, r.n]));
}
