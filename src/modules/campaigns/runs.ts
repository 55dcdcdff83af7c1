import type { Knex } from 'knex';
import type { Deps } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { paginateAs, type PageRequest } from '../../db/pagination.js';
import { run, statement } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { addJobStatement, inTransaction } from '../../jobs/queue.js';
import { HttpError } from '../../lib/errors.js';
import { nextOccurrence } from '../../lib/recurrence.js';
import { toRunDto, type CampaignRow } from './dto.js';
import { runJob } from './jobs.js';
import { announce, enqueueCampaign, start } from './start.js';
import { wakeAutomations } from './triggers.js';

/**
 * Runs: the sends of recurring and automated campaigns. A run is a campaign row of its own
 * (`parent_id` naming its campaign) that copies the campaign's channels and messages and goes
 * through the one send path (`start`, batches, settle): its audience is read when it starts, its
 * credits reserved then (a run they do not cover fails whole), its logs carry its id, and its own
 * counters are its analytics; the campaign's are their sums.
 */

/** The time as campaigns read it (`Deps.clock`: a fake one in tests). */
export const clockNow = (deps: Pick<Deps, 'clock'>): Date => (deps.clock ? deps.clock() : new Date());

/** When a recurring campaign's rule starts: its `scheduleDate` when that was later than its launch, else the launch. */
export function anchorOf(row: Pick<CampaignRow, 'schedule_date' | 'started_at'>): Date {
  const launched = row.started_at ?? new Date();
  return row.schedule_date && row.schedule_date > launched ? row.schedule_date : launched;
}

/**
 * A run of campaign `:parentId` due at `:scheduledAt`, a copy of its campaign; with `:contacts`, to
 * those contacts only (an automated campaign's wave). A recurring run that exists already (its
 * campaign and time are its identity) is not made again: nothing is returned.
 */
export const insertRun = statement<{ orgId: string; parentId: string; scheduledAt: Date; contacts: string[] | null }, CampaignRow>(
  'herald_campaign_run_insert',
  `INSERT INTO campaigns (organization_id, parent_id, name, description, type, channels, status, recipient_type, selected_contacts,
                          selected_groups, manual_recipients, messages, schedule_date, created_by, exempt_from_caps)
   SELECT p.organization_id, p.id, p.name, p.description, p.type, p.channels, 'scheduled',
          CASE WHEN :contacts::uuid[] IS NULL THEN p.recipient_type ELSE 'selected' END,
          coalesce(:contacts::uuid[], p.selected_contacts),
          CASE WHEN :contacts::uuid[] IS NULL THEN p.selected_groups ELSE '{}' END,
          CASE WHEN :contacts::uuid[] IS NULL THEN p.manual_recipients ELSE '{}' END,
          p.messages, :scheduledAt::timestamptz, p.created_by, p.exempt_from_caps
   FROM campaigns p WHERE p.organization_id = :orgId AND p.id = :parentId
   ON CONFLICT (organization_id, parent_id, schedule_date) WHERE parent_id IS NOT NULL AND type = 'recurring' DO NOTHING
   RETURNING *`,
);

/** Starts a run made by `fireRun` or `sendDue` (or left `scheduled` by a process that died: the sweeper's start job). */
export async function startRun(deps: Pick<Deps, 'db' | 'config' | 'queue'>, runRow: CampaignRow): Promise<void> {
  try {
    const { total } = await start(deps, runRow, { checkCredits: false });
    if (total) await enqueueCampaign(deps, runRow);
  } catch (err) {
    // Canceled with its campaign before it started: nothing to send.
    if (err instanceof HttpError && err.statusCode === 409) return;
    throw err;
  }
}

/**
 * Fires a recurring campaign's run due at `scheduledAt` (the run job). In one transaction, with the
 * campaign's row locked: the run is made (once: a second firing of the same time, by a duplicated
 * job or a second worker, finds the campaign's next run moved on, or the run already there), the
 * next time of the rule after this one (or after now, when this one fires late: runs a stopped
 * worker missed are not all sent at once) is recorded and its job queued. Then the run starts.
 */
export async function fireRun(deps: Deps, ref: { orgId: string; campaignId: string; scheduledAt: Date }): Promise<CampaignRow | null> {
  const { orgId, campaignId, scheduledAt } = ref;
  const now = clockNow(deps);
  if (scheduledAt.getTime() > now.getTime() + 1000) {
    // Early (a clock that differs from the queue's): back in the queue for its time.
    await deps.queue.add(runJob(orgId, campaignId, scheduledAt, now));
    return null;
  }
  const fired = await deps.db.transaction(async (trx) => {
    const t = tenant(trx, orgId);
    const parent = (await t.scoped('campaigns').where('campaigns.id', campaignId).forUpdate().first()) as CampaignRow | undefined;
    if (!parent || parent.type !== 'recurring' || parent.status !== 'active' || !parent.recurrence) return null;
    if (parent.next_run_at?.getTime() !== scheduledAt.getTime()) return null;
    const [made] = await run(trx, insertRun, { orgId, parentId: campaignId, scheduledAt, contacts: null });
    const next = nextOccurrence(parent.recurrence, anchorOf(parent), new Date(Math.max(scheduledAt.getTime(), now.getTime())));
    await t.scoped('campaigns').where('campaigns.id', campaignId).update({ next_run_at: next, updated_at: nowMs(deps.db) });
    if (next) await run(trx, addJobStatement, inTransaction(runJob(orgId, campaignId, next, now)));
    await announce(trx, orgId, campaignId);
    return made ?? null;
  });
  if (fired) await startRun(deps, fired);
  return fired;
}

/** Contacts of an automated campaign that are due, claimed for one run (others claiming skip them). */
export const claimDue = statement<{ orgId: string; campaignId: string; limit: number }, { contact_id: string }>(
  'herald_campaign_triggers_claim',
  `SELECT contact_id FROM campaign_triggers
   WHERE organization_id = :orgId AND campaign_id = :campaignId AND status = 'pending' AND due_at <= now()
   ORDER BY due_at, contact_id LIMIT :limit
   FOR UPDATE SKIP LOCKED`,
);

export const markQueued = statement<{ orgId: string; campaignId: string; runId: string; ids: string[] }>(
  'herald_campaign_triggers_queued',
  `UPDATE campaign_triggers SET status = 'queued', run_id = :runId
   WHERE organization_id = :orgId AND campaign_id = :campaignId AND contact_id = ANY(:ids::uuid[])`,
);

/** Contacts one automated run sends to at most; more due make more runs. */
export const WAVE_SIZE = 10_000;

/**
 * Sends an automated campaign's due contacts (the automation job): each wave of up to `WAVE_SIZE`
 * is claimed, made a run and marked queued in one transaction (a canceled campaign claims none),
 * then started: consent is read as the run's audience is, at this moment. Then the job is queued
 * again for the next contact still pending.
 */
export async function sendDue(deps: Deps, orgId: string, campaignId: string): Promise<number> {
  let runs = 0;
  for (;;) {
    const wave = await deps.db.transaction(async (trx) => {
      const parent = (await tenant(trx, orgId).scoped('campaigns').where('campaigns.id', campaignId).forShare().first('status', 'type')) as
        | Pick<CampaignRow, 'status' | 'type'>
        | undefined;
      if (!parent || parent.type !== 'automated' || parent.status !== 'active') return null;
      const due = (await run(trx, claimDue, { orgId, campaignId, limit: WAVE_SIZE })).map((r) => r.contact_id);
      if (!due.length) return null;
      const [made] = await run(trx, insertRun, { orgId, parentId: campaignId, scheduledAt: new Date(), contacts: due });
      await run(trx, markQueued, { orgId, campaignId, runId: made!.id, ids: due });
      await announce(trx, orgId, campaignId);
      return { made: made!, full: due.length === WAVE_SIZE };
    });
    if (!wave) break;
    runs++;
    await startRun(deps, wave.made);
    if (!wave.full) break;
  }
  await wakeAutomations(deps.db, orgId, campaignId);
  return runs;
}

/** A campaign's runs, newest first. */
export function listRuns(db: Knex | Knex.Transaction, orgId: string, campaignId: string, page: PageRequest) {
  return paginateAs(tenant(db, orgId).scoped('campaigns').where('campaigns.parent_id', campaignId).select('campaigns.*'), 'campaigns', page, toRunDto);
}

export interface PendingSendDto {
  /** The list's keyset position (the contact and when it was triggered); `pendingSendView` leaves them out. */
  _id: string;
  createdAt: string;
  contactId: string;
  name: string | null;
  triggeredAt: string;
  dueAt: string;
}

/** An automated campaign's contacts still waiting for their delay, the most recently triggered first. */
export function listPending(db: Knex | Knex.Transaction, orgId: string, campaignId: string, page: PageRequest) {
  const query = tenant(db, orgId)
    .scoped('campaign_triggers')
    .where({ 'campaign_triggers.campaign_id': campaignId, 'campaign_triggers.status': 'pending' })
    .leftJoin('contacts', (j) => j.on('contacts.organization_id', 'campaign_triggers.organization_id').andOn('contacts.id', 'campaign_triggers.contact_id'))
    .select('campaign_triggers.contact_id as id', 'campaign_triggers.created_at', 'campaign_triggers.due_at', 'contacts.name');
  return paginateAs(
    query,
    'campaign_triggers',
    page,
    (r: { id: string; created_at: Date; due_at: Date; name: string | null }): PendingSendDto => ({
      _id: r.id,
      createdAt: r.created_at.toISOString(),
      contactId: r.id,
      name: r.name,
      triggeredAt: r.created_at.toISOString(),
      dueAt: r.due_at.toISOString(),
    }),
    {
      orderBy: [
        { column: 'campaign_triggers.created_at', order: 'desc' },
        { column: 'campaign_triggers.contact_id', order: 'desc' },
      ],
      after: (q, key) => q.whereRaw('(campaign_triggers.created_at, campaign_triggers.contact_id) < (?::timestamptz, ?::uuid)', [key.createdAt, key.id]),
    },
  );
}

/** A pending send as REST shows it. */
export const pendingSendView = ({ _id, createdAt, ...shown }: PendingSendDto) => shown;

/**
 * The sweeper's part for campaign types: recurring campaigns whose next run is overdue by a lease
 * (its job was lost) get the job again (firing checks the time, so a duplicate does nothing);
 * automated campaigns with contacts overdue by a lease are woken; recurring campaigns with no run
 * left and none still sending complete.
 */
const overdueRecurring = statement<{ leaseSeconds: number }, { organization_id: string; id: string; next_run_at: Date }>(
  'herald_campaign_runs_overdue',
  `SELECT organization_id, id, next_run_at FROM campaigns
   WHERE status = 'active' AND type = 'recurring' AND parent_id IS NULL AND next_run_at < now() - make_interval(secs => :leaseSeconds)
   LIMIT 1000`,
);

const overdueAutomated = statement<{ leaseSeconds: number }, { organization_id: string; id: string }>(
  'herald_campaign_triggers_overdue',
  `SELECT a.organization_id, a.id FROM campaigns a
   WHERE a.status = 'active' AND a.type = 'automated' AND a.parent_id IS NULL
     AND EXISTS (SELECT 1 FROM campaign_triggers t WHERE t.organization_id = a.organization_id AND t.campaign_id = a.id
                   AND t.status = 'pending' AND t.due_at < now() - make_interval(secs => :leaseSeconds))
   LIMIT 1000`,
);

const completeFinished = statement<Record<string, never>, { organization_id: string; id: string }>(
  'herald_campaign_recurring_complete',
  `UPDATE campaigns p SET status = 'completed', completed_at = now(), updated_at = date_trunc('milliseconds', now())
   WHERE p.status = 'active' AND p.type = 'recurring' AND p.parent_id IS NULL AND p.next_run_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM campaigns r WHERE r.organization_id = p.organization_id AND r.parent_id = p.id
                       AND r.status IN ('scheduled', 'active'))
   RETURNING p.organization_id, p.id`,
);

export async function sweepRuns(deps: Deps): Promise<void> {
  const now = clockNow(deps);
  const recurring = await run(deps.db, overdueRecurring, { leaseSeconds: deps.config.campaignLeaseSeconds });
  if (recurring.length) {
    deps.log.warn({ campaigns: recurring.length }, 'requeueing overdue recurring runs');
    await deps.queue.addMany(recurring.map((c) => runJob(c.organization_id, c.id, c.next_run_at, now)));
  }
  const automated = await run(deps.db, overdueAutomated, { leaseSeconds: deps.config.campaignLeaseSeconds });
  for (const a of automated) await wakeAutomations(deps.db, a.organization_id, a.id);
  await run(deps.db, completeFinished, {});
}
