import pg from 'pg';
import type { Statement as Named } from '../../src/db/statements.js';
import { deleteOrganization, TENANT_DELETES } from '../../src/modules/closure/sql.js';
import type { Herald } from '../../src/server.js';
import { heraldWithOrg, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization, type Statement } from '../helpers/statements.js';

/**
 * The closing of an organization stays with it: each tenant table's batch (on Citus one shard; on
 * Postgres every scan, the key lookup of the delete included, restricted by the organization) and
 * the organization's own row.
 */

let herald: Herald, org: Org;
beforeAll(async () => ({ herald, org } = await heraldWithOrg()));
afterAll(() => herald?.stop());

test('each batch of the closing names the organization and reads only its rows', async () => {
  const as = <P extends object>(st: Named<P, any>, params: P): Statement => ({ sql: st.text, bindings: st.order.map((k) => params[k]) });
  const statements = [...TENANT_DELETES.map(({ statement }) => as(statement, { orgId: org.orgId, limit: 2000 })), as(deleteOrganization, { orgId: org.orgId })];
  const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();
  try {
    await expectEachWithOrganization(explain, statements, org.orgId);
  } finally {
    await explain.end();
  }
});
