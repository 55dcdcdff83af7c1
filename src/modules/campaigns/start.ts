import type { Knex } from 'knex';
import type { Deps } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import * as credits from '../../delivery/credits.js';
import { emit, wake } from '../../delivery/outbox.js';
import { repriceBatches } from '../../delivery/sql/batches.js';
import { notifyProgress } from '../../delivery/sql/progress.js';
import type { Channel } from '../../delivery/types.js';
import { badRequest, conflict } from '../../lib/errors.js';
import { materialiseAudience, type Audience } from './audience.js';
import { openWork } from './batches.js';
import { bitingCaps, configuredCaps, lockCaps } from './caps.js';
import { enqueue } from '../../delivery/scheduler.js';
import { priceAside, recipientUnits, type Units } from './costing.js';
import type { CampaignRow } from './dto.js';
import { launchTexts } from './messages.js';

type StartDeps = Pick<Deps, 'db' | 'config'>;

/**
 * Announces, on the commit of `trx`, that the campaign's status or counters change in it: its
 * `campaignProgress` subscribers, in any API process, read it again.
 */
export const announce = (trx: Knex.Transaction, orgId: string, campaignId: string) => run(trx, notifyProgress, { orgId, campaignId });

/**
 * Moves a draft or scheduled campaign (or run) to `active` with its audience materialised and its
 * credits reserved, in one transaction: sending then never waits on the organization's balance. An
 * audience of nobody is refused at launch (400), and so is one the balance does not cover (402); a
 * scheduled one simply completes, or, when the balance falls short, reserves batch by batch as it is
 * sent (batches the balance no longer covers then fail, uncharged). A run of a recurring or
 * automated campaign the balance does not cover is not sent at all: it fails, with the shortfall as
 * its reason and a `campaign.failed` event.
 */
export async function start(
  deps: StartDeps,
  campaign: CampaignRow,
  opts: {
    checkCredits: boolean;
    /** More writes of the launch, in its transaction (its audit entry). */
    also?: (trx: Knex.Transaction, started: { total: number }) => Promise<unknown>;
  },
): Promise<{ total: number }> {
  // A personalised SMS is priced at its longest render beside the transaction (`priceAside`);
  // awaited there, so a launch refused before then leaves it to finish unobserved.
  const aside = priceAside(deps, campaign);
  aside?.catch(() => {});
  let woken: string[] = [];
  const result = await deps.db.transaction(async (trx) => {
    const t = tenant(trx, campaign.organization_id);
    await announce(trx, campaign.organization_id, campaign.id);
    if (campaign.parent_id) await announce(trx, campaign.organization_id, campaign.parent_id);
    // The texts of saved templates are copied now: what is launched is the template as it is.
    const { messages, organizationName } = await launchTexts(trx, campaign);
    const [locked] = (await t
      .scoped('campaigns')
      .where('campaigns.id', campaign.id)
      .whereIn('campaigns.status', ['draft', 'scheduled'])
      .update({ status: 'active', messages: JSON.stringify(messages), started_at: trx.raw('now()'), updated_at: nowMs(deps.db) })
      .returning('*')) as CampaignRow[];
    if (!locked) throw conflict('Only draft campaigns can be launched');
    const units = await recipientUnits(trx, deps.config, locked, organizationName, { longest: !aside });
    // Capped launches of the organization one after another: each counts those before it.
    const configured = await configuredCaps(trx, locked);
    if (Object.keys(configured).length) await lockCaps(trx, campaign.organization_id);
    const audience = await materialiseAudience(trx, locked, units, await bitingCaps(trx, locked, configured));
    const { counts, suppressed } = audience;
    const capped = Object.values(audience.capped).reduce((a, b) => a + b, 0);
    const cost = aside ? await priceAgain(trx, locked, audience, units, await aside) : audience.cost;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (!total && opts.checkCredits) throw badRequest('The campaign has no eligible recipients');
    const suppressedTotal = Object.values(suppressed).reduce((a, b) => a + b, 0);
    if (!(await credits.reserve(trx, campaign.organization_id, cost))) {
      if (opts.checkCredits) throw await credits.shortfall(trx, campaign.organization_id, cost, 'campaign');
      if (locked.parent_id) {
        woken = await failRun(trx, locked, (await credits.shortfall(trx, campaign.organization_id, cost, 'run')).message, { total, suppressed: suppressedTotal });
        return { total: 0 };
      }
      await t.scoped('campaign_batches').where('campaign_batches.campaign_id', campaign.id).update({ reserved: 0 });
    }
    await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ total_recipients: total, suppressed: suppressedTotal, capped });
    if (!total) await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ status: 'completed', completed_at: trx.raw('now()') });
    await opts.also?.(trx, { total });
    return { total };
  });
  await wake(deps.db, campaign.organization_id, woken);
  return result;
}

/**
 * What the audience costs once the price worked out beside the launch is in: the batches of a
 * channel it prices differently (a longer render that takes another segment) are priced again.
 */
async function priceAgain(trx: Knex.Transaction, campaign: CampaignRow, audience: Audience, written: Units, priced: Units): Promise<number> {
  let cost = audience.cost;
  for (const [channel, unit] of Object.entries(priced) as [Channel, number][]) {
    if (unit === written[channel] || !audience.counts[channel]) continue;
    const [row] = await run(trx, repriceBatches, { orgId: campaign.organization_id, campaignId: campaign.id, channel, unit });
    cost += (row?.cost ?? 0) - (audience.costs[channel] ?? 0);
  }
  return Math.round(cost * 100) / 100;
}

/**
 * A run not sent at all: its batches go, it is `failed` with `reason`, and a `campaign.failed` event
 * (naming the campaign, the run and the reason) is stored for the webhooks. Answers the endpoints
 * to wake after the commit.
 */
async function failRun(trx: Knex.Transaction, runRow: CampaignRow, reason: string, audience: { total: number; suppressed: number }): Promise<string[]> {
  const t = tenant(trx, runRow.organization_id);
  await t.scoped('campaign_batches').where('campaign_batches.campaign_id', runRow.id).delete();
  const [failed] = (await t
    .scoped('campaigns')
    .where('campaigns.id', runRow.id)
    .update({
      status: 'failed',
      failure_reason: reason,
      total_recipients: audience.total,
      suppressed: audience.suppressed,
      completed_at: trx.raw('now()'),
      updated_at: trx.raw("date_trunc('milliseconds', now())"),
    })
    .returning(['id', 'parent_id', 'name', 'schedule_date', 'completed_at'])) as CampaignRow[];
  return emit(trx, runRow.organization_id, [
    {
      type: 'campaign.failed',
      occurredAt: failed!.completed_at!,
      data: {
        campaignId: failed!.parent_id,
        runId: failed!.id,
        name: failed!.name,
        scheduledAt: failed!.schedule_date?.toISOString() ?? null,
        reason,
      },
    },
  ]);
}

/** Undoes `start` when the launch is refused after it (the daily message quota): back to draft, credits released. */
export async function rollbackStart(deps: StartDeps, campaign: CampaignRow, also?: (trx: Knex.Transaction) => Promise<unknown>) {
  await deps.db.transaction(async (trx) => {
    await also?.(trx);
    const t = tenant(trx, campaign.organization_id);
    await announce(trx, campaign.organization_id, campaign.id);
    const batches = (await t.scoped('campaign_batches').where('campaign_batches.campaign_id', campaign.id).delete().returning('reserved')) as { reserved: string }[];
    await credits.release(trx, campaign.organization_id, batches.reduce((sum, b) => sum + Number(b.reserved), 0));
    await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ status: 'draft', started_at: null, total_recipients: 0, suppressed: 0 });
  });
}

/** Queues a started campaign's (or run's) channels for the dispatchers (`delivery/scheduler.ts`). */
export async function enqueueCampaign(deps: Pick<Deps, 'db'>, campaign: Pick<CampaignRow, 'organization_id' | 'id' | 'type'>) {
  await enqueue(deps.db, await openWork(deps.db, campaign));
}
