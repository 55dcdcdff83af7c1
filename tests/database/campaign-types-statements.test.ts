import { randomUUID } from 'node:crypto';
import { claimDue, insertRun, markQueued } from '../../src/modules/campaigns/runs.js';
import { duePerCampaign, fireStatement } from '../../src/modules/campaigns/triggers.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Org } from '../helpers/herald.js';
import { expectStatementsStayWith, named, type Statement } from '../helpers/statements.js';

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
  const campaignId = randomUUID();
  const contact = randomUUID();
  const statements = [
    named(fireStatement, { orgId: org.orgId, created: [contact], joined: JSON.stringify([{ contact_id: contact, group_id: randomUUID() }]) }),
    named(duePerCampaign, { orgId: org.orgId, campaignId: null }),
    named(duePerCampaign, { orgId: org.orgId, campaignId }),
    named(claimDue, { orgId: org.orgId, campaignId, limit: 10 }),
    named(markQueued, { orgId: org.orgId, campaignId, runId: randomUUID(), ids: [contact] }),
    named(insertRun, { orgId: org.orgId, parentId: campaignId, scheduledAt: new Date(), contacts: null }),
    named(insertRun, { orgId: org.orgId, parentId: campaignId, scheduledAt: new Date(), contacts: [contact] }),
  ];
  await expectStatementsStayWith(statements, org.orgId);
});
