import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Statement as Named } from '../../src/db/statements.js';
import { claimDue, insertRun, markQueued } from '../../src/modules/campaigns/runs.js';
import { duePerCampaign, fireStatement } from '../../src/modules/campaigns/triggers.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization, type Statement } from '../helpers/statements.js';

/**
 * The named statements of campaign types stay with their organization (on Citus one shard; on
 * Postgres every tenant scan filtered by it): recording triggers, reading what is due, claiming a
 * send's contacts and making a run. (The sweeper's reads of overdue runs and triggers are across
 * organizations on purpose.)
 */

let herald: Herald, org: Org;
beforeAll(async () => ({ herald, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

test('each campaign-type statement stays with its organization', async () => {
  const as = <P extends object>(st: Named<P, any>, params: P): Statement => ({ sql: st.text, bindings: st.order.map((k) => params[k]) });
  const campaignId = randomUUID();
  const contact = randomUUID();
  const statements = [
    as(fireStatement, { orgId: org.orgId, created: [contact], joined: JSON.stringify([{ contact_id: contact, group_id: randomUUID() }]) }),
    as(duePerCampaign, { orgId: org.orgId, campaignId: null }),
    as(duePerCampaign, { orgId: org.orgId, campaignId }),
    as(claimDue, { orgId: org.orgId, campaignId, limit: 10 }),
    as(markQueued, { orgId: org.orgId, campaignId, runId: randomUUID(), ids: [contact] }),
    as(insertRun, { orgId: org.orgId, parentId: campaignId, scheduledAt: new Date(), contacts: null }),
    as(insertRun, { orgId: org.orgId, parentId: campaignId, scheduledAt: new Date(), contacts: [contact] }),
  ];
  const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();
  try {
    await expectEachWithOrganization(explain, statements, org.orgId);
  } finally {
    await explain.end();
  }
});
