import { deleteOrganization, TENANT_DELETES } from '../../src/modules/closure/sql.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Org } from '../helpers/herald.js';
import { expectStatementsStayWith, named, type Statement } from '../helpers/statements.js';

/**
 * The closing of an organization stays with it: each tenant table's batch (on Citus one shard; on
 * Postgres every scan, the key lookup of the delete included, restricted by the organization) and
 * the organization's own row.
 */

let herald: Herald, org: Org;
beforeAll(async () => ({ herald, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

test('each batch of the closing names the organization and reads only its rows', async () => {
  const statements = [...TENANT_DELETES.map(({ statement }) => named(statement, { orgId: org.orgId, limit: 2000 })), named(deleteOrganization, { orgId: org.orgId })];
  await expectStatementsStayWith(statements, org.orgId);
});
