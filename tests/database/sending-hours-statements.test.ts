import { claimBatches, contactZones, dueLaterByEmail, dueLaterByPhone, holdRecipients, lockCampaign, nextDue } from '../../src/delivery/sql/batches.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Client, type Credential, type Org } from '../helpers/herald.js';
import { expectStatementsStayWith, named, type Statement, tenantStatementsOf } from '../helpers/statements.js';

/**
 * Sending hours, local send times and frequency caps stay with their organization (on Citus one
 * shard per statement; on Postgres every tenant scan filtered by it): the statements a launch issues
 * while it holds recipients back for their hours and leaves capped ones out (claiming, reading who
 * is due, moving them into later batches, the next due time, the contacts' zones, the caps' counts),
 * and those of the estimate, the preview and the progress that tell it.
 */

let herald: Herald, api: Client, org: Org, cred: Credential;
beforeAll(async () => {
  ({ herald, api, org } = await heraldWithOrg());
  cred = { token: org.token };
});
afterAll(() => herald?.stop());

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

test("each statement of sending hours and caps names the organization and reads only its rows", async () => {
  // A window that is closed now in Nairobi (the organization's zone, and its contacts'): from two to three hours ahead.
  const hour = (new Date().getUTCHours() + 3) % 24;
  const at = (h: number) => `${String(h % 24).padStart(2, '0')}:00`;
  await ok(api.put('/organizations/current', { sendingHours: `${at(hour + 2)}-${at(hour + 3)}`, frequencyCaps: { sms: { messages: 1, days: 7 } } }, cred));
  const ann = await ok(api.post('/contacts', { name: 'Ann', phone: '0712300101', email: 'ann.hours@example.com' }, cred), 201);
  await ok(api.post('/contacts', { name: 'Ben', phone: '0712300102', email: 'ben.hours@example.com', timezone: 'Asia/Tokyo' }, cred), 201);
  const body = { type: 'broadcast', channels: ['sms', 'email'], messages: { sms: { content: 'Hi' }, email: { subject: 'Hi', content: 'Hello' } } };

  const statements: Statement[] = [];
  const record = async <T>(request: () => Promise<T>) => {
    const captured = await tenantStatementsOf(herald.db, request);
    statements.push(...captured.statements);
    return captured.result;
  };
  const first = await ok(api.post('/campaigns', { name: 'First', ...body }, cred), 201);
  await record(() => ok(api.get(`/campaigns/${first._id}/estimate`, cred)));
  await record(() => ok(api.post(`/campaigns/${first._id}/preview`, { contactId: ann._id }, cred)));
  await record(() => ok(api.post(`/campaigns/${first._id}/launch`, undefined, cred)));
  const progress = await record(() => ok(api.get(`/campaigns/${first._id}/progress`, cred)));
  expect(progress.waiting).toBeGreaterThan(0);
  const second = await ok(api.post('/campaigns', { name: 'Second', ...body }, cred), 201);
  const estimate = await record(() => ok(api.get(`/campaigns/${second._id}/estimate`, cred)));
  expect(estimate.capped).toBe(2);

  // The statements that hold recipients back run on the pool's connections, named: each as the engine calls it.
  const key = { orgId: org.orgId, campaignId: first._id, channel: 'sms' };
  const due = { ...key, batchNos: [1, 2], now: new Date(), orgZone: 'Africa/Nairobi', hours: '08:00-20:00', localAt: '2026-12-05T09:00:00' };
  statements.push(
    named(claimBatches, { ...key, leaseSeconds: 60, unitCost: 1, heldOnly: true, limit: 16, from: 0, now: new Date() }),
    named(dueLaterByPhone, due),
    named(dueLaterByEmail, { ...due, channel: 'email' }),
    named(holdRecipients, { ...key, held: JSON.stringify([{ batch_no: 1, pos: 1, due: new Date() }]) }),
    named(lockCampaign, { orgId: org.orgId, campaignId: first._id }),
    named(nextDue, { ...key, now: new Date() }),
    named(contactZones, { orgId: org.orgId }),
  );
  // The caps' counts were among the requests' statements.
  expect(statements.some((s) => s.sql.includes('HAVING count(*) >='))).toBe(true);

  await expectStatementsStayWith(statements, org.orgId);
});
