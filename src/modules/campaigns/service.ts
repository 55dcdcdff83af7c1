import type { Knex } from 'knex';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { idempotent } from '../../db/idempotency.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import * as credits from '../../delivery/credits.js';
import { notifyProgress } from '../../delivery/sql/progress.js';
import type { Channel } from '../../delivery/types.js';
import { badRequest, conflict, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { normaliseAddress } from '../../lib/addresses.js';
import * as v from '../../lib/validation.js';
import { listOf, operation } from '../../operation.js';
import { materialiseAudience } from './audience.js';
import { recipientUnits } from './costing.js';
import { messagesSchema, resolveMessages, asInput, type MessagesInput } from './messages.js';
import { openChunks, processChunk } from './batches.js';
import { toCampaignDto, type CampaignMessages, type CampaignRow } from './dto.js';
import { chunkJob, startJob, startJobKey } from './jobs.js';

const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;

const channels = z.array(z.enum(['email', 'sms', 'whatsapp'])).min(1).max(3).refine((cs) => new Set(cs).size === cs.length, 'must not repeat a channel');
const scheduleDate = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).nullable();

/** The channels a campaign sends on that have no message: each needs one. */
const withoutMessage = (chans: Channel[], messages: MessagesInput) => chans.filter((c) => !messages[c]);
const needsMessage = (c: Channel) => `is required for the ${c} channel`;

const createInput = z
  .strictObject({
    name: v.name(),
    description: z.string().trim().max(500).nullable().optional(),
    type: z.enum(['broadcast', 'targeted', 'automated', 'recurring']),
    channels,
    recipients: z
      .strictObject({
        contacts: z.array(v.id()).max(10_000).optional(),
        groups: z.array(v.id()).max(1000).optional(),
        manual: z.array(z.string().trim().min(1).max(320)).max(10_000).optional(),
      })
      .optional(),
    messages: messagesSchema,
    scheduleDate: scheduleDate.optional(),
  })
  .superRefine((input, zctx) => {
    for (const c of withoutMessage(input.channels, input.messages)) zctx.addIssue({ code: 'custom', path: ['messages', c], message: needsMessage(c) });
  }, v.whenPassed('channels', 'messages'));

const updateInput = z.strictObject({
  name: v.name().optional(),
  messages: messagesSchema.optional(),
  scheduleDate: scheduleDate.optional(),
});

function checkMessages(chans: Channel[], messages: MessagesInput) {
  const missing = withoutMessage(chans, messages);
  if (missing.length) {
    throw validationFailed(missing.map((c) => ({ field: `messages.${c}`, message: `messages.${c} ${needsMessage(c)}` })));
  }
}

/**
 * Announces, on the commit of `trx`, that the campaign's status or counters change in it: its
 * `campaignProgress` subscribers, in any API process, read it again.
 */
const announce = (trx: Knex.Transaction, orgId: string, campaignId: string) => run(trx, notifyProgress, { orgId, campaignId });

async function load(ctx: AuthedContext, id: string): Promise<CampaignRow> {
  return tenant(ctx.db, ctx.caller.orgId).owned<CampaignRow>('campaigns', id, ['*']);
}

/** Ids that are not the caller's (unknown or another organization's): a problem naming them. */
async function checkOwned(ctx: AuthedContext, table: 'contacts' | 'groups', field: string, ids: string[] | undefined): Promise<FieldProblem[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const found = new Set(
    (await tenant(ctx.db, ctx.caller.orgId).scoped(table).whereIn(`${table}.id`, unique).select(`${table}.id`)).map((r: { id: string }) => r.id),
  );
  const unknown = unique.filter((id) => !found.has(id));
  return unknown.length ? [{ field, message: `${field} contains unknown ids: ${unknown.join(', ')}` }] : [];
}

/** Manual recipients as sent to: a lower-case email or an E.164 phone (read with the organization's country). */
async function manualRecipients(ctx: AuthedContext, raw: string[] | undefined): Promise<{ addresses: string[]; problems: FieldProblem[] }> {
  if (!raw?.length) return { addresses: [], problems: [] };
  const org = await ctx.loaders.organizationById.load(ctx.caller.orgId);
  const addresses = new Set<string>();
  const bad: string[] = [];
  for (const given of new Set(raw)) {
    const address = normaliseAddress(given, { orgCountry: org?.country, dotlessDomains: !ctx.config.blockPrivateHosts });
    if (address) addresses.add(address);
    else bad.push(given);
  }
  const problems = bad.length ? [{ field: 'recipients.manual', message: `recipients.manual contains invalid addresses: ${bad.join(', ')}` }] : [];
  return { addresses: [...addresses], problems };
}

export const list = listOf(READ, 'campaigns', ['campaigns.*'], toCampaignDto);

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toCampaignDto(await load(ctx, id));
  },
});

export const create = operation({
  access: WRITE,
  input: createInput,
  async check(ctx, input) {
    const r = input.recipients ?? {};
    return [
      ...(await checkOwned(ctx, 'contacts', 'recipients.contacts', r.contacts)),
      ...(await checkOwned(ctx, 'groups', 'recipients.groups', r.groups)),
      ...(await manualRecipients(ctx, r.manual)).problems,
      ...(input.messages ? (await resolveMessages(ctx.db, ctx.caller.orgId, input.messages)).problems : []),
    ];
  },
  async run(ctx, input) {
    const r = input.recipients ?? {};
    const contacts = [...new Set(r.contacts)];
    const groups = [...new Set(r.groups)];
    // Checked in `check`; ids deleted since simply have no audience when the campaign starts.
    const manual = (await manualRecipients(ctx, r.manual)).addresses;
    const { messages } = await resolveMessages(ctx.db, ctx.caller.orgId, input.messages);
    // The interface's mapping: nothing named -> all; only groups -> group; anything else -> selected.
    const recipientType = !contacts.length && !groups.length && !manual.length ? 'all' : !contacts.length && !manual.length ? 'group' : 'selected';
    const [row] = await ctx.db('campaigns')
      .insert({
        organization_id: ctx.caller.orgId,
        name: input.name,
        description: input.description ?? null,
        type: input.type,
        channels: input.channels,
        recipient_type: recipientType,
        selected_contacts: contacts,
        selected_groups: groups,
        manual_recipients: manual,
        messages: JSON.stringify(messages),
        schedule_date: input.scheduleDate ?? null,
        created_by: ctx.caller.userId,
      })
      .returning('*');
    return toCampaignDto(row);
  },
});

export const update = operation({
  access: WRITE,
  input: updateInput,
  async run(ctx, input, { id }: { id: string }) {
    return ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const campaign = await t.owned<CampaignRow>('campaigns', id, ['*']);
      await t.scoped('campaigns').where('campaigns.id', id).forUpdate().first('id');
      const current = (await t.scoped('campaigns').where('campaigns.id', id).first()) as CampaignRow;
      if (current.status !== 'draft' && current.status !== 'scheduled') {
        throw conflict(`Only draft or scheduled campaigns can be updated; this one is ${current.status}`);
      }
      let messages: CampaignMessages | undefined;
      if (input.messages) {
        checkMessages(campaign.channels, input.messages);
        const resolved = await resolveMessages(trx, ctx.caller.orgId, input.messages, current.messages);
        if (resolved.problems.length) throw validationFailed(resolved.problems);
        messages = resolved.messages;
      }
      const [row] = await t
        .scoped('campaigns')
        .where('campaigns.id', id)
        .update({
          name: input.name,
          messages: messages ? JSON.stringify(messages) : undefined,
          schedule_date: input.scheduleDate,
          updated_at: nowMs(ctx.db),
        })
        .returning('*');
      if (current.status === 'scheduled' && input.scheduleDate !== undefined) {
        // A new date moves the start job; a date now past (or none) starts it at once.
        await ctx.queue.add(startJob(row as CampaignRow));
      }
      return toCampaignDto(row);
    });
  },
});

/**
 * Launch, from draft only. A future `scheduleDate` gives `scheduled` and a queued start at that time.
 * Otherwise the audience is materialised now: small ones are sent before answering (`completed` with
 * analytics), larger ones answer `active` and are sent by the workers.
 */
export const launch = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return idempotent(ctx.db, ctx.caller.orgId, ctx.idempotencyKey, `campaigns.launch:${id}`, {}, async () => {
      const campaign = await load(ctx, id);
      if (campaign.status !== 'draft') throw conflict(`Only draft campaigns can be launched; this one is ${campaign.status}`);
      if (campaign.schedule_date && campaign.schedule_date.getTime() > Date.now()) {
        const row = await ctx.db.transaction(async (trx) => {
          await announce(trx, ctx.caller.orgId, id);
          const [updated] = await tenant(trx, ctx.caller.orgId)
            .scoped('campaigns')
            .where({ 'campaigns.id': id, 'campaigns.status': 'draft' })
            .update({ status: 'scheduled', updated_at: nowMs(ctx.db) })
            .returning('*');
          if (!updated) throw conflict('Only draft campaigns can be launched');
          return updated as CampaignRow;
        });
        await ctx.queue.add(startJob(row));
        return toCampaignDto(row);
      }
      const started = await start(ctx, campaign, { checkCredits: true });
      await ctx.quotas.sendMessages(ctx.caller.orgId, started.total).catch(async (err) => {
        await rollbackStart(ctx, campaign);
        throw err;
      });
      if (started.total <= ctx.config.campaignInlineLimit) {
        for (const chunk of await openChunks(ctx.db, ctx.caller.orgId, id)) await processChunk(ctx, chunk);
      } else {
        await enqueueChunks(ctx, ctx.caller.orgId, id);
      }
      return toCampaignDto(await load(ctx, id));
    });
  },
});

interface StartDeps {
  db: AuthedContext['db'];
  config: AuthedContext['config'];
}

/**
 * Moves a draft or scheduled campaign to `active` with its audience materialised and its credits
 * reserved, in one transaction: sending then never waits on the organization's balance. An audience
 * of nobody is refused at launch (400), and so is one the balance does not cover (402); a scheduled
 * one simply completes, or, when the balance falls short, reserves batch by batch as it is sent
 * (batches the balance no longer covers then fail, uncharged).
 */
export async function start(deps: StartDeps, campaign: CampaignRow, opts: { checkCredits: boolean }): Promise<{ total: number }> {
  return deps.db.transaction(async (trx) => {
    const t = tenant(trx, campaign.organization_id);
    await announce(trx, campaign.organization_id, campaign.id);
    const organization = (await trx('organizations').where('id', campaign.organization_id).first('name')) as { name: string };
    // The texts of saved templates are copied now: what is launched is the template as it is.
    const { messages } = await resolveMessages(trx, campaign.organization_id, asInput(campaign.messages), campaign.messages);
    const [locked] = (await t
      .scoped('campaigns')
      .where('campaigns.id', campaign.id)
      .whereIn('campaigns.status', ['draft', 'scheduled'])
      .update({ status: 'active', messages: JSON.stringify(messages), started_at: trx.raw('now()'), updated_at: nowMs(deps.db) })
      .returning('*')) as CampaignRow[];
    if (!locked) throw conflict('Only draft campaigns can be launched');
    const units = await recipientUnits(trx, deps.config, locked, organization.name);
    const { counts, suppressed, cost } = await materialiseAudience(trx, locked, units);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (!total && opts.checkCredits) throw badRequest('The campaign has no eligible recipients');
    if (!(await credits.reserve(trx, campaign.organization_id, cost))) {
      if (opts.checkCredits) throw await credits.shortfall(trx, campaign.organization_id, cost, 'campaign');
      await t.scoped('campaign_batches').where('campaign_batches.campaign_id', campaign.id).update({ reserved: 0 });
    }
    const suppressedTotal = Object.values(suppressed).reduce((a, b) => a + b, 0);
    await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ total_recipients: total, suppressed: suppressedTotal });
    if (!total) await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ status: 'completed', completed_at: trx.raw('now()') });
    return { total };
  });
}

/** Undoes `start` when the launch is refused after it (the daily message quota): back to draft, credits released. */
async function rollbackStart(ctx: AuthedContext, campaign: CampaignRow) {
  await ctx.db.transaction(async (trx) => {
    const t = tenant(trx, campaign.organization_id);
    await announce(trx, campaign.organization_id, campaign.id);
    const batches = (await t.scoped('campaign_batches').where('campaign_batches.campaign_id', campaign.id).delete().returning('reserved')) as { reserved: string }[];
    await credits.release(trx, campaign.organization_id, batches.reduce((sum, b) => sum + Number(b.reserved), 0));
    await t.scoped('campaigns').where('campaigns.id', campaign.id).update({ status: 'draft', started_at: null, total_recipients: 0, suppressed: 0 });
  });
}

export async function enqueueChunks(deps: { db: AuthedContext['db']; queue: AuthedContext['queue'] }, orgId: string, campaignId: string) {
  await deps.queue.addMany((await openChunks(deps.db, orgId, campaignId)).map(chunkJob));
}

/** Cancel, from scheduled or active: the start job is removed and unsent recipients stay unsent and unpaid. */
export const cancel = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      await t.owned('campaigns', id, ['id']);
      await announce(trx, ctx.caller.orgId, id);
      const current = (await t.scoped('campaigns').where('campaigns.id', id).forUpdate().first()) as CampaignRow;
      if (current.status !== 'scheduled' && current.status !== 'active') {
        throw conflict(`Only scheduled or active campaigns can be canceled; this one is ${current.status}`);
      }
      const [updated] = await t
        .scoped('campaigns')
        .where('campaigns.id', id)
        .update({ status: 'canceled', updated_at: nowMs(ctx.db) })
        .returning('*');
      // Batches locked by a worker claiming them right now are skipped: that worker sends and settles
      // them. Waiting for them instead could deadlock, as settling locks batches before the campaign row.
      const unsent = (await t
        .scoped('campaign_batches')
        .where({ 'campaign_batches.campaign_id': id, 'campaign_batches.status': 'pending' })
        .select('campaign_batches.channel', 'campaign_batches.batch_no', 'campaign_batches.reserved')
        .forUpdate()
        .skipLocked()) as { channel: string; batch_no: number; reserved: string }[];
      if (unsent.length) {
        await t
          .scoped('campaign_batches')
          .where('campaign_batches.campaign_id', id)
          .whereIn(['campaign_batches.channel', 'campaign_batches.batch_no'], unsent.map((b) => [b.channel, b.batch_no]))
          .update({ status: 'canceled', reserved: 0 });
        // The unsent batches are never charged: what they held goes back.
        await credits.release(trx, ctx.caller.orgId, unsent.reduce((sum, b) => sum + Number(b.reserved), 0));
      }
      return updated as CampaignRow;
    });
    if (row.schedule_date) await ctx.queue.remove(startJobKey(row.id));
    return toCampaignDto(row);
  },
});

/** What a frontend shows while a campaign runs: recipients by state. */
export const progressOf = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await load(ctx, id);
    return progress(ctx, id);
  },
});

async function progress(ctx: AuthedContext, campaignId: string) {
  const row = await tenant(ctx.db, ctx.caller.orgId)
    .scoped('campaign_batches')
    .where('campaign_batches.campaign_id', campaignId)
    .first(
      ctx.db.raw('coalesce(sum(recipient_count), 0)::int AS total'),
      ctx.db.raw('coalesce(sum(sent), 0)::int AS sent'),
      ctx.db.raw('coalesce(sum(failed), 0)::int AS failed'),
      ctx.db.raw(`coalesce(sum(recipient_count) FILTER (WHERE status IN ('pending', 'sending')), 0)::int AS pending`),
      ctx.db.raw(`coalesce(sum(recipient_count) FILTER (WHERE status = 'canceled'), 0)::int AS canceled`),
    );
  return row as { total: number; sent: number; failed: number; pending: number; canceled: number };
}
