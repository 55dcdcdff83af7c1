import type { Knex } from 'knex';
import type { Db } from '../../db/database.js';
import { jsonRows, run, statement } from '../../db/statements.js';
import type { TriggerEvent } from './dto.js';
import { AUTOMATION_TASK, automationJobKey } from './jobs.js';

/**
 * The one home of automated campaigns' triggers. Whatever creates a contact or puts one in a group
 * (a create or update through the API, a bulk action, an import's merge) records, in its own
 * transaction, each active automated campaign it triggers for each such contact: one row per
 * campaign and contact (`campaign_triggers`, keyed by both, so a contact is triggered once per
 * campaign however often it meets the trigger), due at the trigger time plus the campaign's delay.
 * After the commit, `wakeAutomations` queues one job per triggered campaign at its earliest due
 * time; that job sends every due contact as one run (`runs.ts`), so an import of 10,000 contacts
 * is a handful of jobs, not 10,000.
 */

/**
 * SQL: records the triggers of `event` for the contacts of `source` (a CTE or subquery with
 * `contact_id`, and `group_id` for `contact.added_to_group`) in organization `:orgId`; returns one
 * row per trigger recorded. With no active automated campaign of the event, it reads one index
 * entry and writes nothing.
 */
export const triggerSql = (source: string, event: TriggerEvent) => `
  INSERT INTO campaign_triggers (organization_id, campaign_id, contact_id, due_at)
  SELECT :orgId, a.id, s.contact_id, now() + a.trigger_delay::interval
  FROM campaigns a JOIN ${source} s ON ${event === 'contact.added_to_group' ? 'a.trigger_group_id = s.group_id' : 'true'}
  WHERE a.organization_id = :orgId AND a.status = 'active' AND a.type = 'automated' AND a.parent_id IS NULL
    AND a.trigger_event = '${event}'
  ON CONFLICT DO NOTHING
  RETURNING campaign_id`;

/** Records the triggers of contacts created (`created`) and of contacts that joined groups (`joined`: `jsonRows` of `{ contact_id, group_id }`). */
export const fireStatement = statement<{ orgId: string; created: string[]; joined: string }, { fired: number }>(
  'herald_campaign_triggers_fire',
  `WITH created AS (SELECT unnest(:created::uuid[]) AS contact_id),
        joined AS (SELECT * FROM json_to_recordset(:joined::json) AS j(contact_id uuid, group_id uuid)),
        by_creation AS (${triggerSql('created', 'contact.created')}),
        by_group AS (${triggerSql('joined', 'contact.added_to_group')})
   SELECT ((SELECT count(*) FROM by_creation) + (SELECT count(*) FROM by_group))::int AS fired`,
);

export interface Joined {
  contact_id: string;
  group_id: string;
}

/**
 * Records, in the caller's transaction, the triggers of contacts just created and of memberships
 * just added; answers how many were recorded (call `wakeAutomations` after the commit when any).
 */
export async function fire(trx: Knex.Transaction | Db, orgId: string, created: string[], joined: Joined[] = []): Promise<number> {
  if (!created.length && !joined.length) return 0;
  const [row] = await run(trx, fireStatement, { orgId, created, joined: jsonRows(joined) });
  return row?.fired ?? 0;
}

/** Per active automated campaign of the organization, its earliest pending trigger. */
export const duePerCampaign = statement<{ orgId: string; campaignId: string | null }, { id: string; due: Date }>(
  'herald_campaign_triggers_due',
  `SELECT a.id, d.due FROM campaigns a
   CROSS JOIN LATERAL (SELECT min(t.due_at) AS due FROM campaign_triggers t
                       WHERE t.organization_id = :orgId AND t.campaign_id = a.id AND t.status = 'pending') d
   WHERE a.organization_id = :orgId AND a.status = 'active' AND a.type = 'automated' AND a.parent_id IS NULL
     AND (:campaignId::uuid IS NULL OR a.id = :campaignId::uuid) AND d.due IS NOT NULL`,
);

/**
 * One job per campaign at its earliest due time; a waiting job keeps its (earlier) time, and one
 * already running gets another after it. Reads no table of Herald's: on Citus it runs on the
 * coordinator, where the queue is.
 */
const addAutomationJobs = statement<{ orgId: string; ids: string[]; dues: Date[] }>(
  'herald_campaign_triggers_wake',
  `SELECT graphile_worker.add_job('${AUTOMATION_TASK}', json_build_object('orgId', :orgId::text, 'campaignId', d.id::text), run_at := d.due,
                                  job_key := '${automationJobKey('')}' || d.id::text, job_key_mode := 'preserve_run_at', max_attempts := 10)
   FROM unnest(:ids::uuid[], :dues::timestamptz[]) AS d(id, due)`,
);

/** Queues the sends of the organization's automated campaigns (of one, with `campaignId`) with contacts pending. */
export async function wakeAutomations(db: Db, orgId: string, campaignId: string | null = null): Promise<void> {
  const due = await run(db, duePerCampaign, { orgId, campaignId });
  if (due.length) await run(db, addAutomationJobs, { orgId, ids: due.map((d) => d.id), dues: due.map((d) => d.due) });
}
