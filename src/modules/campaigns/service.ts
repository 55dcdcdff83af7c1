import type { Knex } from 'knex';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { idempotent } from '../../db/idempotency.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import * as credits from '../../delivery/credits.js';
import type { Channel } from '../../delivery/types.js';
import { badRequest, conflict, notFound, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { normaliseAddress } from '../../lib/addresses.js';
import * as v from '../../lib/validation.js';
import { operation } from '../../operation.js';
import { messagesSchema, resolveMessages, type MessagesInput } from './messages.js';
import { sendNow } from './batches.js';
import { toCampaignDto, type CampaignMessages, type CampaignRow, type TriggerEvent } from './dto.js';
import { automationJobKey, runJob, runJobKey, startJob, startJobKey } from './jobs.js';
import { announce, enqueueCampaign, rollbackStart, start } from './start.js';
import { anchorOf, clockNow, listPending, listRuns } from './runs.js';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { addJobStatement, inTransaction, removeJobStatement } from '../../jobs/queue.js';
import { checkRecurrence, nextOccurrence, type Recurrence } from '../../lib/recurrence.js';
import { Duration } from 'luxon';
import { record, type AuditEntryInput } from '../audit/record.js';
import { sendingOf } from './sending.js';
import { firstComing, lastComing, localDateTime, sendingHours } from '../../lib/sending-hours.js';

const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;

const recurrence = z.strictObject({ rule: z.string().trim().min(1).max(500), timezone: z.string().trim().min(1).max(64) });
const TRIGGER_EVENTS = ['contact.created', 'contact.added_to_group'] as const;
const trigger = z.strictObject({ event: z.enum(TRIGGER_EVENTS), groupId: v.id().nullable().optional() });
/** The longest delay an automated campaign may wait. */
const MAX_DELAY_DAYS = 366;
const delay = z
  .string()
  .trim()
  .max(64)
  .refine((d) => {
    const parsed = Duration.fromISO(d);
    return parsed.isValid && parsed.as('days') >= 0 && parsed.as('days') <= MAX_DELAY_DAYS;
  }, `must be an ISO 8601 duration from PT0S to P${MAX_DELAY_DAYS}D (PT30M, PT2H, P1D)`);

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
    localSendAt: localDateTime().optional(),
    sendingHours: sendingHours().optional(),
    exemptFromCaps: z.boolean({ error: 'must be true or false' }).optional(),
    recurrence: recurrence.optional(),
    trigger: trigger.optional(),
    delay: delay.optional(),
  })
  .superRefine((input, zctx) => {
    for (const c of withoutMessage(input.channels, input.messages)) zctx.addIssue({ code: 'custom', path: ['messages', c], message: needsMessage(c) });
  }, v.whenPassed('channels', 'messages'))
  .superRefine((input, zctx) => {
    // The message is given without its field, which the validation error puts before it.
    for (const problem of typeProblems(input.type, input)) {
      zctx.addIssue({ code: 'custom', path: problem.field.split('.'), message: problem.message.replace(new RegExp(`^${problem.field.replace('.', '\\.')} `), '') });
    }
  }, v.whenPassed('type', 'recurrence', 'trigger', 'delay', 'recipients', 'scheduleDate', 'localSendAt'));

type TypeFields = { scheduleDate?: string | null; localSendAt?: string | null; recurrence?: unknown; trigger?: { event: TriggerEvent; groupId?: string | null }; delay?: string; recipients?: object };

/** What a campaign of `type` must and must not carry (the type's own fields; an automated campaign's trigger chooses its contacts). */
function typeProblems(type: string, input: TypeFields): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const only = (field: string, owner: string) => problems.push({ field, message: `${field} is only for ${owner} campaigns` });
  if (type === 'recurring' && !input.recurrence) problems.push({ field: 'recurrence', message: 'recurrence is required for a recurring campaign' });
  if (type !== 'recurring' && input.recurrence) only('recurrence', 'recurring');
  if (type === 'automated' && !input.trigger) problems.push({ field: 'trigger', message: 'trigger is required for an automated campaign' });
  if (type !== 'automated' && input.trigger) only('trigger', 'automated');
  if (type !== 'automated' && input.delay !== undefined) only('delay', 'automated');
  if ((type === 'automated' || type === 'recurring') && input.localSendAt) only('localSendAt', 'broadcast and targeted');
  if (input.localSendAt && input.scheduleDate) problems.push({ field: 'localSendAt', message: 'localSendAt and scheduleDate cannot both be given: a local send time sets the start itself' });
  if (type === 'automated' && input.scheduleDate) problems.push({ field: 'scheduleDate', message: 'scheduleDate is not for automated campaigns: they answer their trigger from launch' });
  if (input.trigger) {
    const needsGroup = input.trigger.event === 'contact.added_to_group';
    if (needsGroup && !input.trigger.groupId) problems.push({ field: 'trigger.groupId', message: 'trigger.groupId is required for contact.added_to_group' });
    if (!needsGroup && input.trigger.groupId) problems.push({ field: 'trigger.groupId', message: 'trigger.groupId is only for contact.added_to_group' });
  }
  if (type === 'automated' && input.recipients && Object.values(input.recipients).some((list) => (list as unknown[] | undefined)?.length)) {
    problems.push({ field: 'recipients', message: 'recipients is not for automated campaigns: the trigger chooses the contacts' });
  }
  return problems;
}

/** The rule as stored, or the problem with it (checked against the campaigns' clock). */
function checkedRecurrence(ctx: AuthedContext, given: Recurrence | undefined): { recurrence?: Recurrence; problems: FieldProblem[] } {
  if (!given) return { problems: [] };
  const checked = checkRecurrence(given, clockNow(ctx));
  if (checked.ok) return { recurrence: checked.recurrence, problems: [] };
  const field = checked.problem.startsWith('timezone') ? 'recurrence.timezone' : 'recurrence.rule';
  return { problems: [{ field, message: `recurrence.${checked.problem}` }] };
}

/** A local send time that has already passed in every zone (it last comes at UTC-12). */
function passedLocalTime(ctx: AuthedContext, localSendAt: string | null | undefined): FieldProblem[] {
  if (!localSendAt || lastComing(localSendAt) > clockNow(ctx)) return [];
  return [{ field: 'localSendAt', message: 'localSendAt has passed in every time zone' }];
}

/**
 * The start of a campaign with a local send time: when that time first comes anywhere (UTC+14); each
 * recipient then waits for it in their own zone.
 */
const startOfLocal = (localSendAt: string) => firstComing(localSendAt).toISOString();

/** The stored delay: the ISO duration as luxon writes it (`PT0S` when none). */
const storedDelay = (given: string | undefined) => Duration.fromISO(given ?? 'PT0S').toISO() ?? 'PT0S';

const updateInput = z.strictObject({
  name: v.name().optional(),
  messages: messagesSchema.optional(),
  scheduleDate: scheduleDate.optional(),
  localSendAt: localDateTime().optional(),
  sendingHours: sendingHours().optional(),
  exemptFromCaps: z.boolean({ error: 'must be true or false' }).optional(),
  recurrence: recurrence.optional(),
  trigger: trigger.optional(),
  delay: delay.optional(),
});

function checkMessages(chans: Channel[], messages: MessagesInput) {
  const missing = withoutMessage(chans, messages);
  if (missing.length) {
    throw validationFailed(missing.map((c) => ({ field: `messages.${c}`, message: `messages.${c} ${needsMessage(c)}` })));
  }
}

/**
 * The sums of a campaign's runs, as a column (`run_totals`, JSON), added to its own counters in its
 * analytics. A recurring or automated campaign's runs are its sends. A one-off campaign's runs are
 * resends to its failed recipients (`resend.ts`): each recipient is counted once, so what a resend
 * sent moves from `failed` to `sent`, and one that fails again stays counted as failed. Its runs are
 * read through their own index, filtered by the organization itself.
 */
const runTotals = (db: Knex | Knex.Transaction, orgId: string) =>
  db.raw(
    `CASE WHEN campaigns.type IN ('recurring', 'automated') THEN (
       SELECT json_build_object('sent', coalesce(sum(r.sent), 0), 'delivered', coalesce(sum(r.delivered), 0), 'failed', coalesce(sum(r.failed), 0),
                                'opened', coalesce(sum(r.opened), 0), 'clicked', coalesce(sum(r.clicked), 0), 'suppressed', coalesce(sum(r.suppressed), 0),
                                'capped', coalesce(sum(r.capped), 0), 'bounced', coalesce(sum(r.bounced), 0), 'complained', coalesce(sum(r.complained), 0),
                                'total', coalesce(sum(r.total_recipients), 0))
       FROM campaigns r WHERE r.organization_id = ? AND r.parent_id = campaigns.id)
     WHEN campaigns.type = 'broadcast' AND campaigns.status = 'completed' THEN (
       SELECT json_build_object('sent', sum(r.sent), 'delivered', sum(r.delivered), 'failed', -sum(r.sent),
                                'opened', sum(r.opened), 'clicked', sum(r.clicked), 'suppressed', 0, 'capped', 0, 'total', 0,
                                'bounced', sum(r.bounced), 'complained', sum(r.complained))
       FROM campaigns r WHERE r.organization_id = ? AND r.parent_id = campaigns.id HAVING count(*) > 0) END AS run_totals`,
    [orgId, orgId],
  );

/** A campaign (never a run: those are reached through their campaign) with its runs' sums. */
async function load(ctx: AuthedContext, id: string, db: Knex | Knex.Transaction = ctx.db): Promise<CampaignRow> {
  const row = await tenant(db, ctx.caller.orgId).owned<CampaignRow>('campaigns', id, ['campaigns.*', runTotals(db, ctx.caller.orgId) as unknown as string]);
  if (row.parent_id) throw notFound();
  return row;
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

export const list = operation({
  access: READ,
  run: (ctx, _input: undefined, page: PageRequest) =>
    paginateAs(
      tenant(ctx.db, ctx.caller.orgId).scoped('campaigns').whereNull('campaigns.parent_id').select('campaigns.*', runTotals(ctx.db, ctx.caller.orgId)),
      'campaigns',
      page,
      toCampaignDto,
    ),
});

/** A recurring or automated campaign's runs, newest first. */
export const runs = operation({
  access: READ,
  async run(ctx, _input: undefined, { id, ...page }: { id: string } & PageRequest) {
    await load(ctx, id);
    return listRuns(ctx.db, ctx.caller.orgId, id, page);
  },
});

/** An automated campaign's contacts waiting for their delay. */
export const pendingSends = operation({
  access: READ,
  async run(ctx, _input: undefined, { id, ...page }: { id: string } & PageRequest) {
    await load(ctx, id);
    return listPending(ctx.db, ctx.caller.orgId, id, page);
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await load(ctx, id);
    return { ...toCampaignDto(row), sending: await sendingOf(ctx.db, row) };
  },
});

/** How a campaign is being sent (GraphQL's fields of it, on a campaign read without them). */
export const sendingFor = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return sendingOf(ctx.db, await load(ctx, id));
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
      ...(input.recurrence?.rule && input.recurrence.timezone ? checkedRecurrence(ctx, input.recurrence as Recurrence).problems : []),
      ...(input.trigger?.groupId ? await checkOwned(ctx, 'groups', 'trigger.groupId', [input.trigger.groupId]) : []),
      ...passedLocalTime(ctx, input.localSendAt),
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
        schedule_date: input.localSendAt ? startOfLocal(input.localSendAt) : (input.scheduleDate ?? null),
        local_send_at: input.localSendAt ?? null,
        sending_hours: input.sendingHours ?? null,
        exempt_from_caps: input.exemptFromCaps ?? false,
        recurrence: input.recurrence ? JSON.stringify(checkedRecurrence(ctx, input.recurrence).recurrence) : null,
        trigger_event: input.trigger?.event ?? null,
        trigger_group_id: input.trigger?.groupId ?? null,
        trigger_delay: input.type === 'automated' ? storedDelay(input.delay) : null,
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
      const campaign = await load(ctx, id, trx);
      await t.scoped('campaigns').where('campaigns.id', id).forUpdate().first('id');
      const current = (await t.scoped('campaigns').where('campaigns.id', id).first()) as CampaignRow;
      if (current.status !== 'draft' && current.status !== 'scheduled') {
        throw conflict(`Only draft or scheduled campaigns can be updated; this one is ${current.status}`);
      }
      const typed = input.recurrence !== undefined || input.trigger !== undefined || input.delay !== undefined;
      if (typed && current.status !== 'draft') throw conflict(`Only draft campaigns can change their recurrence, trigger or delay; this one is ${current.status}`);
      const problems = [
        ...typeProblems(current.type, { recurrence: input.recurrence, trigger: input.trigger, delay: input.delay, localSendAt: input.localSendAt, scheduleDate: input.scheduleDate }),
        ...passedLocalTime(ctx, input.localSendAt),
        ...checkedRecurrence(ctx, input.recurrence).problems,
        ...(input.trigger?.groupId ? await checkOwned(ctx, 'groups', 'trigger.groupId', [input.trigger.groupId]) : []),
      ];
      if (problems.length) throw validationFailed(problems);
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
          // One of the two sets the start, and the other gives way.
          ...(input.localSendAt !== undefined && {
            local_send_at: input.localSendAt,
            schedule_date: input.localSendAt ? startOfLocal(input.localSendAt) : (input.scheduleDate ?? null),
          }),
          ...(input.localSendAt === undefined && input.scheduleDate !== undefined && { schedule_date: input.scheduleDate, local_send_at: null }),
          sending_hours: input.sendingHours,
          exempt_from_caps: input.exemptFromCaps,
          recurrence: input.recurrence ? JSON.stringify(checkedRecurrence(ctx, input.recurrence).recurrence) : undefined,
          trigger_event: input.trigger?.event,
          trigger_group_id: input.trigger ? (input.trigger.groupId ?? null) : undefined,
          trigger_delay: input.delay !== undefined ? storedDelay(input.delay) : undefined,
          updated_at: nowMs(ctx.db),
        })
        .returning('*');
      if (current.status === 'scheduled' && (input.scheduleDate !== undefined || input.localSendAt !== undefined)) {
        // A new date moves the start job; a date now past (or none) starts it at once.
        await ctx.queue.add(startJob(row as CampaignRow));
      }
      return toCampaignDto(row);
    });
  },
});

/** The audit entry of a launch or a cancel (platform.md's audit log). */
const campaignEntry = (action: AuditEntryInput['action'], campaign: CampaignRow, details: Record<string, unknown>): AuditEntryInput => ({
  action,
  resourceType: 'campaign',
  resourceId: campaign.id,
  details: { name: campaign.name, type: campaign.type, ...details },
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
      if (campaign.type === 'recurring' || campaign.type === 'automated') return toCampaignDto(await activate(ctx, campaign));
      if (campaign.schedule_date && campaign.schedule_date.getTime() > Date.now()) {
        const row = await ctx.db.transaction(async (trx) => {
          await announce(trx, ctx.caller.orgId, id);
          const [updated] = await tenant(trx, ctx.caller.orgId)
            .scoped('campaigns')
            .where({ 'campaigns.id': id, 'campaigns.status': 'draft' })
            .update({ status: 'scheduled', updated_at: nowMs(ctx.db) })
            .returning('*');
          if (!updated) throw conflict('Only draft campaigns can be launched');
          await record(trx, ctx, campaignEntry('campaign.launched', campaign, { status: 'scheduled', scheduleDate: campaign.schedule_date!.toISOString() }));
          return updated as CampaignRow;
        });
        await ctx.queue.add(startJob(row));
        return toCampaignDto(row);
      }
      const started = await start(ctx, campaign, {
        checkCredits: true,
        also: (trx, { total }) => record(trx, ctx, campaignEntry('campaign.launched', campaign, { status: 'active', recipients: total })),
      });
      await ctx.quotas.sendMessages(ctx.caller.orgId, started.total).catch(async (err: Error) => {
        await rollbackStart(ctx, campaign, (trx) => record(trx, ctx, campaignEntry('campaign.launch_reverted', campaign, { reason: err.message })));
        throw err;
      });
      if (started.total <= ctx.config.campaignInlineLimit) await sendNow(ctx, campaign, started.total);
      else await enqueueCampaign(ctx, campaign);
      return toCampaignDto(await load(ctx, id));
    });
  },
});

/**
 * Launches a recurring or automated campaign: it becomes `active` and stays so. A recurring one
 * records its first run time (the first of its rule from `scheduleDate`, or from now) and queues its
 * run job, in the same transaction; an automated one starts answering its trigger.
 */
async function activate(ctx: AuthedContext, campaign: CampaignRow): Promise<CampaignRow> {
  const now = clockNow(ctx);
  return ctx.db.transaction(async (trx) => {
    let next: Date | null = null;
    if (campaign.type === 'recurring') {
      const anchor = anchorOf({ schedule_date: campaign.schedule_date, started_at: now });
      next = nextOccurrence(campaign.recurrence!, anchor, new Date(anchor.getTime() - 1));
      if (!next) throw validationFailed([{ field: 'recurrence.rule', message: 'recurrence.rule never fires: it has no run after now' }]);
    }
    const [updated] = (await tenant(trx, ctx.caller.orgId)
      .scoped('campaigns')
      .where({ 'campaigns.id': campaign.id, 'campaigns.status': 'draft' })
      .update({ status: 'active', started_at: now, next_run_at: next, updated_at: nowMs(ctx.db) })
      .returning('*')) as CampaignRow[];
    if (!updated) throw conflict('Only draft campaigns can be launched');
    if (next) await run(trx, addJobStatement, inTransaction(runJob(campaign.organization_id, campaign.id, next, now)));
    await announce(trx, ctx.caller.orgId, campaign.id);
    await record(trx, ctx, campaignEntry('campaign.launched', campaign, { status: 'active', ...(next && { nextRunAt: next.toISOString() }) }));
    return updated;
  });
}

/**
 * Cancel, from scheduled or active: the start job is removed and unsent recipients stay unsent and
 * unpaid. A recurring campaign runs no more (its next run job goes) and an automated one sends to
 * no one more (its pending contacts are dropped); a run of either still sending stops as a campaign does.
 */
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
      if (current.parent_id) throw notFound();
      const [updated] = await t
        .scoped('campaigns')
        .where('campaigns.id', id)
        .update({ status: 'canceled', updated_at: nowMs(ctx.db) })
        .returning('*');
      const runIds = (
        (await t
          .scoped('campaigns')
          .where('campaigns.parent_id', id)
          .whereIn('campaigns.status', ['scheduled', 'active'])
          .update({ status: 'canceled', updated_at: nowMs(ctx.db) })
          .returning('id')) as { id: string }[]
      ).map((r) => r.id);
      if (current.type === 'automated') {
        await t.scoped('campaign_triggers').where({ 'campaign_triggers.campaign_id': id, 'campaign_triggers.status': 'pending' }).update({ status: 'canceled' });
        await run(trx, removeJobStatement, { jobKey: automationJobKey(id) });
      }
      if (current.type === 'recurring') await run(trx, removeJobStatement, { jobKey: runJobKey(id) });
      // Batches locked by a worker claiming them right now are skipped: that worker sends and settles
      // them. Waiting for them instead could deadlock, as settling locks batches before the campaign row.
      const unsent = (await t
        .scoped('campaign_batches')
        .whereIn('campaign_batches.campaign_id', [id, ...runIds])
        .where('campaign_batches.status', 'pending')
        .select('campaign_batches.campaign_id', 'campaign_batches.channel', 'campaign_batches.batch_no', 'campaign_batches.reserved')
        .forUpdate()
        .skipLocked()) as { campaign_id: string; channel: string; batch_no: number; reserved: string }[];
      if (unsent.length) {
        await t
          .scoped('campaign_batches')
          .whereIn(
            ['campaign_batches.campaign_id', 'campaign_batches.channel', 'campaign_batches.batch_no'],
            unsent.map((b) => [b.campaign_id, b.channel, b.batch_no]),
          )
          .update({ status: 'canceled', reserved: 0 });
        // The unsent batches are never charged: what they held goes back.
        await credits.release(trx, ctx.caller.orgId, unsent.reduce((sum, b) => sum + Number(b.reserved), 0));
      }
      await record(trx, ctx, campaignEntry('campaign.canceled', current, { from: current.status }));
      return updated as CampaignRow;
    });
    if (row.schedule_date) await ctx.queue.remove(startJobKey(row.id));
    return toCampaignDto(row);
  },
});

/** What a frontend shows while a campaign runs: recipients by state, and how it is being sent. */
export const progressOf = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await load(ctx, id);
    return { ...(await progress(ctx, id, row.type === 'broadcast')), ...(await sendingOf(ctx.db, row)) };
  },
});

type Progress = { total: number; sent: number; failed: number; pending: number; waiting: number; nextOpeningAt: string | null; canceled: number };

/**
 * Recipients by state. A recurring or automated campaign's recipients are its runs'. A one-off
 * campaign's runs resend to recipients it counts as failed: each is counted once, as the resend
 * leaves it (sent, or pending while it is being resent; failed again, or not resent, it stays failed).
 */
async function progress(ctx: AuthedContext, campaignId: string, resends: boolean): Promise<Progress> {
  if (resends) {
    const [own, runs] = await Promise.all([batchCounts(ctx, campaignId, false), batchCounts(ctx, campaignId, true)]);
    const openings = [own.nextOpeningAt, runs.nextOpeningAt].filter((at): at is string => at !== null).sort();
    return {
      total: own.total,
      sent: own.sent + runs.sent,
      failed: own.failed - runs.sent - runs.pending,
      pending: own.pending + runs.pending,
      waiting: own.waiting + runs.waiting,
      nextOpeningAt: openings[0] ?? null,
      canceled: own.canceled,
    };
  }
  return batchCounts(ctx, campaignId, null);
}

/** The batches' counts of the campaign alone (`runs` false), of its runs alone (true), or of both (null). */
async function batchCounts(ctx: AuthedContext, campaignId: string, runs: boolean | null): Promise<Progress> {
  const own = runs === true ? '' : 'SELECT ?::uuid';
  const children = runs === false ? '' : 'SELECT c.id FROM campaigns c WHERE c.organization_id = ? AND c.parent_id = ?::uuid';
  const bindings = [...(own ? [campaignId] : []), ...(children ? [ctx.caller.orgId, campaignId] : [])];
  // Waiting: in batches due later on the campaigns' clock (their recipients' sending hours or local time).
  const now = clockNow(ctx);
  const row = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('campaign_batches')
    .whereRaw(`campaign_batches.campaign_id = ANY(ARRAY(${[own, children].filter(Boolean).join(' UNION ALL ')}))`, bindings)
    .first(
      ctx.db.raw('coalesce(sum(recipient_count), 0)::int AS total'),
      ctx.db.raw('coalesce(sum(sent), 0)::int AS sent'),
      ctx.db.raw('coalesce(sum(failed), 0)::int AS failed'),
      ctx.db.raw(`coalesce(sum(recipient_count) FILTER (WHERE status IN ('pending', 'sending')), 0)::int AS pending`),
      ctx.db.raw(`coalesce(sum(recipient_count) FILTER (WHERE status = 'pending' AND due_at > ?), 0)::int AS waiting`, [now]),
      ctx.db.raw(`min(due_at) FILTER (WHERE status = 'pending' AND due_at > ?) AS next_opening_at`, [now]),
      ctx.db.raw(`coalesce(sum(recipient_count) FILTER (WHERE status = 'canceled'), 0)::int AS canceled`),
    )) as Omit<Progress, 'nextOpeningAt'> & { next_opening_at: Date | null };
  const { next_opening_at, ...counts } = row;
  return { ...counts, nextOpeningAt: next_opening_at?.toISOString() ?? null };
}
