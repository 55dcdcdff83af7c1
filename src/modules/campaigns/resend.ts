import type { Knex } from 'knex';
import type { CampaignEstimate } from './dry-run.js';
import type { AuthedContext } from '../../context.js';
import { round2 } from '../../delivery/credits.js';
import * as credits from '../../delivery/credits.js';
import { run, statement } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { CHANNELS, type Channel } from '../../delivery/types.js';
import { badRequest, conflict, notFound } from '../../lib/errors.js';
import { operation } from '../../operation.js';
import { record } from '../audit/record.js';
import { audienceCounts, suppressionCounts } from './audience.js';
import { sendNow } from './batches.js';
import { recipientUnits } from './costing.js';
import { toRunDto, type CampaignRow } from './dto.js';
import { launchTexts } from './messages.js';
import { enqueueCampaign, start } from './start.js';

/**
 * Resend to the failed: a finished one-off campaign's recipients whose last attempt failed for a
 * reason worth another try (a provider down, refused credentials, credits short; not an invalid
 * address, not a final answer about the recipient, not a message that cannot be sent) get the
 * campaign's messages again, as runs of the campaign (one per channel with such recipients). A
 * contact who has unsubscribed since is left out, as at any launch. The campaign's analytics count
 * each recipient once: a resent recipient that succeeds moves from `failed` to `sent`
 * (`service.ts`, `runTotals`). The estimate is counted with the statements a launch uses.
 */

const WRITE = { role: 'admin', apiKeys: true } as const;
const READ = { role: 'any', apiKeys: true } as const;

/**
 * Per channel, the addresses whose last attempt in the campaign (its own logs and its runs', test
 * sends aside) failed and is not among its log's final failures.
 */
const failedToResend = statement<{ orgId: string; campaignIds: string[] }, { channel: Channel; recipient: string }>(
  'herald_campaign_failed_to_resend',
  `WITH entries AS (
     SELECT m.channel, m.created_at, m.id, e.position::int AS position, m.final_failures,
            coalesce(e.r->>'recipient', e.r #>> '{}') AS recipient, coalesce(e.r->>'status', 'success') AS status
     FROM message_logs m, json_array_elements(m.recipients) WITH ORDINALITY AS e(r, position)
     WHERE m.organization_id = :orgId AND m.campaign_id = ANY(:campaignIds::uuid[]) AND NOT m.test),
   last AS (
     SELECT DISTINCT ON (channel, recipient) channel, recipient, status, position, final_failures
     FROM entries ORDER BY channel, recipient, created_at DESC, id DESC)
   SELECT channel, recipient FROM last
   WHERE status = 'failed' AND NOT (position = ANY(coalesce(final_failures, '{}')))
   ORDER BY channel, recipient`,
);

/** A campaign's resend: the run each channel would be, as a campaign row not yet written. */
interface Plan {
  campaign: CampaignRow;
  organizationName: string;
  runs: CampaignRow[];
}

async function plan(ctx: AuthedContext, db: Knex | Knex.Transaction, id: string, lock = false): Promise<Plan> {
  const t = tenant(db, ctx.caller.orgId);
  const campaign = await t.owned<CampaignRow>('campaigns', id, ['*'], { forUpdate: lock });
  if (campaign.parent_id) throw notFound();
  if (campaign.type !== 'broadcast') throw badRequest('Only one-off campaigns are resent to their failed recipients (a recurring or automated campaign sends again by itself)');
  if (campaign.status !== 'completed') throw conflict(`Only a completed campaign is resent to its failed recipients; this one is ${campaign.status}`);
  const runs = (await t.scoped('campaigns').where('campaigns.parent_id', id).select('id', 'status')) as Pick<CampaignRow, 'id' | 'status'>[];
  if (runs.some((r) => !['completed', 'failed', 'canceled'].includes(r.status))) throw conflict('A resend of this campaign is still being sent');
  const failed = await run(db, failedToResend, { orgId: ctx.caller.orgId, campaignIds: [id, ...runs.map((r) => r.id)] });
  const { messages, organizationName } = await launchTexts(db, campaign);
  const byChannel = new Map<Channel, string[]>();
  for (const f of failed) if (campaign.messages[f.channel]) byChannel.set(f.channel, [...(byChannel.get(f.channel) ?? []), f.recipient]);
  const prospective = CHANNELS.filter((c) => byChannel.has(c)).map(
    (channel): CampaignRow => ({
      ...campaign,
      parent_id: campaign.id,
      channels: [channel],
      messages: { [channel]: messages[channel] } as CampaignRow['messages'],
      // Its addresses alone: no contact chosen, no group.
      recipient_type: 'selected',
      selected_contacts: [],
      selected_groups: [],
      manual_recipients: byChannel.get(channel)!,
      status: 'draft',
    }),
  );
  return { campaign: { ...campaign, messages }, organizationName, runs: prospective };
}

/** A resend's estimate, shaped as a campaign's (`dry-run.ts`). */
export type ResendEstimate = CampaignEstimate;

async function estimateOf(ctx: AuthedContext, db: Knex | Knex.Transaction, p: Plan): Promise<ResendEstimate> {
  const channels = await Promise.all(
    p.runs.map(async (r) => {
      const channel = r.channels[0] as Channel;
      const [counts, suppressed, units] = await Promise.all([audienceCounts(db, r), suppressionCounts(db, r), recipientUnits(db, ctx.config, r, p.organizationName)]);
      const recipients = counts[channel] ?? 0;
      const unitCost = units[channel] ?? 0;
      // A resend is never capped (its recipients were counted by the campaign); its timing is not told.
      return { channel, recipients, suppressed: suppressed[channel] ?? { unsubscribed: 0, listed: 0 }, capped: 0, zones: [], unitCost, cost: round2(unitCost * recipients) };
    }),
  );
  return {
    channels,
    recipients: channels.reduce((sum, c) => sum + c.recipients, 0),
    suppressed: channels.reduce((sum, c) => sum + c.suppressed.unsubscribed + c.suppressed.listed, 0),
    capped: 0,
    waiting: 0,
    nextOpeningAt: null,
    cost: round2(channels.reduce((sum, c) => sum + c.cost, 0)),
    balance: await credits.balance(db, ctx.caller.orgId),
  };
}

/** `GET /campaigns/:id/resend-failed`: whom a resend would reach, per channel, and what it would cost. */
export const estimate = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }): Promise<ResendEstimate> {
    return estimateOf(ctx, ctx.db, await plan(ctx, ctx.db, id));
  },
});

/**
 * `POST /campaigns/:id/resend-failed`: the runs, launched as a campaign is (credits reserved first:
 * 402 when they fall short; a small one sent before the answer), with an audit entry.
 */
export const resend = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const written = await ctx.db.transaction(async (trx) => {
      const p = await plan(ctx, trx, id, true);
      const { recipients, cost, balance } = await estimateOf(ctx, trx, p);
      if (!recipients) throw badRequest('No recipient of this campaign failed for a reason worth another try');
      if (balance < cost) throw await credits.shortfall(trx, ctx.caller.orgId, cost, 'resend');
      const rows: CampaignRow[] = [];
      for (const r of p.runs) {
        const [row] = (await trx('campaigns')
          .insert({
            organization_id: ctx.caller.orgId,
            parent_id: id,
            name: r.name,
            description: r.description,
            type: 'broadcast',
            channels: r.channels,
            status: 'draft',
            recipient_type: 'selected',
            selected_contacts: [],
            selected_groups: [],
            manual_recipients: r.manual_recipients,
            messages: JSON.stringify(r.messages),
            created_by: p.campaign.created_by,
          })
          .returning('*')) as CampaignRow[];
        rows.push(row!);
      }
      await record(trx, ctx, { action: 'campaign.resent', resourceType: 'campaign', resourceId: id, details: { name: p.campaign.name, recipients, cost } });
      return rows;
    });
    const runs: CampaignRow[] = [];
    for (const row of written) {
      try {
        const started = await start(ctx, row, { checkCredits: true });
        if (started.total <= ctx.config.campaignInlineLimit) await sendNow(ctx, row, started.total);
        else await enqueueCampaign(ctx, row);
      } catch (err) {
        // Not started (the credits fall short): the run and those after it are not kept.
        await tenant(ctx.db, ctx.caller.orgId).scoped('campaigns').whereIn('campaigns.id', written.slice(written.indexOf(row)).map((r) => r.id)).where('campaigns.status', 'draft').delete();
        throw err;
      }
      runs.push(await tenant(ctx.db, ctx.caller.orgId).owned<CampaignRow>('campaigns', row.id, ['*']));
    }
    return { runs: runs.map(toRunDto) };
  },
});
