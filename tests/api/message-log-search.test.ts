import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { createApiKey, heraldWithOrgs, signupOrg, type Client, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization, isCitus, tenantStatementsOf } from '../helpers/statements.js';

/**
 * `GET /message-logs?recipient=` and `messageLogs(filter: { recipient })`: every log of the
 * organization that has the address among its recipients, whatever its status there, the address
 * read as a send reads it; combined with the other filters and paged like the rest of the list.
 */

let herald: Herald, api: Client, org: Org, other: Org;
/** Log ids by what they were: `sms1` (three numbers, one failing), `email` (two addresses, one failing), `single`, `campaign`. */
const ids: Record<string, string> = {};
let campaignId = '';

const logsOf = (body: { _id: string }[]) => body.map((l) => l._id).sort();
const search = (o: Org, query: string) => api.get(`/message-logs?${query}`, { token: o.token });

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2));
  const send = async (o: Org, body: object) => {
    const res = await api.post('/notifications/send', body, { token: o.token });
    expect(res.status).toBe(200);
  };
  const newest = async (o: Org) => (await search(o, 'limit=1')).body[0]._id as string;
  // Numbers in Kenya's national format (both organizations' country); 0712340000 fails in the sandbox.
  await send(org, { type: 'sms', to: ['0712345678', '0712000111', '0712340000'], message: 'First' });
  ids.sms1 = await newest(org);
  await send(org, { type: 'email', to: ['Jo@Example.com', 'b@fail.invalid'], subject: 'Hi', message: 'Hello' });
  ids.email = await newest(org);
  await send(org, { type: 'sms', to: '+254712345678', message: 'Second' });
  ids.single = await newest(org);
  // A campaign's log is written by the campaign's own statements.
  for (const phone of ['0712345678', '0712340000']) {
    expect((await api.post('/contacts', { name: `C ${phone}`, phone }, { token: org.token })).status).toBe(201);
  }
  const created = await api.post('/campaigns', { name: 'Search', type: 'broadcast', channels: ['sms'], messages: { sms: { content: 'Campaign' } } }, { token: org.token });
  campaignId = created.body._id;
  expect((await api.post(`/campaigns/${campaignId}/launch`, undefined, { token: org.token })).body.status).toBe('completed');
  ids.campaign = await newest(org);
  // The other organization sends to the same addresses.
  await send(other, { type: 'sms', to: ['0712345678', '0712340000'], message: 'Theirs' });
  await send(other, { type: 'email', to: 'jo@example.com', subject: 'Hi', message: 'Theirs' });
});
afterAll(() => herald?.stop());

describe('GET /message-logs?recipient=', () => {
  test('a number in national format, read with the organization’s country: every log that has it, whole, newest first', async () => {
    const res = await search(org, 'recipient=0712345678');
    expect(res.status).toBe(200);
    expect(res.body.map((l: any) => l._id)).toEqual([ids.campaign, ids.single, ids.sms1]);
    expect(res.headers.get('x-total-count')).toBe('3');
    // The logs come whole: the first send's other recipients with their outcomes.
    const first = res.body.find((l: any) => l._id === ids.sms1);
    expect(first.recipients).toEqual([
      expect.objectContaining({ recipient: '+254712345678', status: 'success' }),
      expect.objectContaining({ recipient: '+254712000111', status: 'success' }),
      expect.objectContaining({ recipient: '+254712340000', status: 'failed' }),
    ]);
    for (const written of ['%2B254712345678', '254712345678', '0712%20345%20678', '%2B254%20(712)%20345-678']) {
      expect(logsOf((await search(org, `recipient=${written}`)).body)).toEqual(logsOf(res.body));
    }
  });

  test('an email address in any case, as the send stored it (lower case)', async () => {
    const res = await search(org, 'recipient=JO%40EXAMPLE.COM');
    expect(res.status).toBe(200);
    expect(res.body.map((l: any) => l._id)).toEqual([ids.email]);
    expect(res.body[0].recipients[0]).toMatchObject({ recipient: 'jo@example.com', status: 'success' });
  });

  test('a recipient that failed (stored with its error) is found too, in ad hoc and campaign logs', async () => {
    const phone = await search(org, 'recipient=0712340000');
    expect(phone.body.map((l: any) => l._id)).toEqual([ids.campaign, ids.sms1]);
    for (const log of phone.body) expect(log.recipients).toContainEqual(expect.objectContaining({ recipient: '+254712340000', status: 'failed' }));
    const email = await search(org, 'recipient=b%40fail.invalid');
    expect(email.body.map((l: any) => l._id)).toEqual([ids.email]);
    expect(email.body[0].recipients[1]).toMatchObject({ recipient: 'b@fail.invalid', status: 'failed', error: expect.any(String) });
  });

  test('a failed recipient written by SQL (json_build_object, the sweeper’s form) is found', async () => {
    const o = await signupOrg(api);
    await herald.db.raw(
      `INSERT INTO message_logs (organization_id, channel, recipients, pending_count, failed_count, message_preview, message_length, unit_cost, settled_at)
       VALUES (?, 'sms', json_build_array('+254712345611', json_build_object('recipient', '+254712345612', 'status', 'failed', 'error', 'Blocked "+254712345613" here')),
               0, 1, 'x', 1, 1, now())`,
      [o.orgId],
    );
    for (const n of ['0712345611', '0712345612']) expect((await search(o, `recipient=${n}`)).body).toHaveLength(1);
    // An address in an error text is not a recipient.
    expect((await search(o, 'recipient=0712345613')).body).toEqual([]);
  });

  test('an address no log has: an empty list', async () => {
    const res = await search(org, 'recipient=0799999999');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers.get('x-total-count')).toBe('0');
  });

  test('combined with the other filters (all apply)', async () => {
    const ids_ = async (query: string) => (await search(org, `recipient=0712345678&${query}`)).body.map((l: any) => l._id);
    expect(await ids_('channel=sms')).toEqual([ids.campaign, ids.single, ids.sms1]);
    expect(await ids_('channel=email')).toEqual([]);
    expect(await ids_(`campaignId=${campaignId}`)).toEqual([ids.campaign]);
    // `status` keeps its meaning: logs with at least one recipient in that status (the address's own is in the log).
    expect(await ids_('status=failed')).toEqual([ids.campaign, ids.sms1]);
    expect(await ids_('dateFrom=2000-01-01&dateTo=2999-12-31')).toEqual([ids.campaign, ids.single, ids.sms1]);
    expect(await ids_(`dateFrom=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
  });

  test('paged like the rest: limit, cursor, X-Total-Count and Link', async () => {
    const first = await search(org, 'recipient=0712345678&limit=2');
    expect(first.body.map((l: any) => l._id)).toEqual([ids.campaign, ids.single]);
    expect(first.headers.get('x-total-count')).toBe('3');
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(next).toContain('recipient=0712345678');
    const second = await api.get(next!, { token: org.token });
    expect(second.body.map((l: any) => l._id)).toEqual([ids.sms1]);
    expect(second.headers.get('x-total-count')).toBe('3');
    expect(second.headers.get('link')).toBeNull();
  });

  test('tenant isolation: another organization’s logs with the same address never appear, and it finds its own', async () => {
    const mine = [ids.sms1, ids.email, ids.single, ids.campaign];
    for (const address of ['0712345678', '0712340000', 'jo%40example.com']) {
      const theirs = await search(other, `recipient=${address}`);
      expect(theirs.status).toBe(200);
      expect(theirs.body).toHaveLength(1);
      expect(mine).not.toContain(theirs.body[0]._id);
      expect(theirs.body[0].senderOrgId).toBe(other.orgId);
      for (const log of (await search(org, `recipient=${address}`)).body) expect(log.senderOrgId).toBe(org.orgId);
    }
  });

  test('neither an email address nor a phone number: 400 naming `recipient`, in the same answer as other problems', async () => {
    for (const bad of ['garbage', '', '12', 'jo%40', '%40example.com', 'x'.repeat(300)]) {
      const res = await search(org, `recipient=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: 'recipient must be a valid email address or phone number',
        details: [{ field: 'recipient', message: 'recipient must be a valid email address or phone number' }],
      });
    }
    const both = await search(org, 'recipient=nope&channel=fax');
    expect(both.status).toBe(400);
    expect(both.body.details.map((d: any) => d.field).sort()).toEqual(['channel', 'recipient']);
    expect((await search(org, 'recipient=a&recipient=b')).status).toBe(400);
    expect((await search(org, 'recipient=%00')).status).toBe(400);
  });

  test('any role and API keys may search; no credential is 401', async () => {
    const { key } = await createApiKey(api, org, 'user');
    const res = await api.get('/message-logs?recipient=0712345678', { apiKey: key });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(3);
    expect((await api.get('/message-logs?recipient=0712345678')).status).toBe(401);
  });
});

describe('messageLogs(filter: { recipient }) (GraphQL)', () => {
  const QUERY = `query Search($filter: MessageLogFilter, $first: Int, $after: String) {
    messageLogs(filter: $filter, first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor } edges { node { _id senderOrgId recipients { recipient status } } }
    }
  }`;

  test('the same logs as REST, paged', async () => {
    const rest = await search(org, 'recipient=0712345678');
    const res = await api.gql(QUERY, { filter: { recipient: '0712 345 678' } }, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.messageLogs.totalCount).toBe(3);
    expect(res.body.data.messageLogs.edges.map((e: any) => e.node._id)).toEqual(rest.body.map((l: any) => l._id));
    const page = await api.gql(QUERY, { filter: { recipient: '+254712345678', channel: 'sms' }, first: 2 }, { token: org.token });
    expect(page.body.data.messageLogs.pageInfo.hasNextPage).toBe(true);
    const rest2 = await api.gql(QUERY, { filter: { recipient: '+254712345678', channel: 'sms' }, first: 2, after: page.body.data.messageLogs.pageInfo.endCursor }, { token: org.token });
    expect(rest2.body.data.messageLogs.edges.map((e: any) => e.node._id)).toEqual([ids.sms1]);
    const theirs = await api.gql(QUERY, { filter: { recipient: 'JO@example.com' } }, { token: other.token });
    expect(theirs.body.data.messageLogs.edges.map((e: any) => e.node.senderOrgId)).toEqual([other.orgId]);
  });

  test('a bad address is BAD_REQUEST naming `recipient`', async () => {
    const res = await api.gql(QUERY, { filter: { recipient: 'not an address' } }, { token: org.token });
    expect(res.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400, details: [{ field: 'recipient', message: expect.any(String) }] });
  });
});

describe('statements', () => {
  let many: Org;
  let explain: pg.Client;
  beforeAll(async () => {
    explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
    await explain.connect();
    // 5,000 logs of 20 numbers; +254720000001 is in two of them.
    many = await signupOrg(api);
    await herald.db.raw(
      `INSERT INTO message_logs (organization_id, channel, recipients, pending_count, message_preview, message_length, unit_cost, settled_at, created_at)
       SELECT ?, 'sms', (SELECT json_agg('+2547' || lpad((i * 20 + p + 100000)::text, 8, '0')) FROM generate_series(1, 20) p)::json,
              0, 'x', 1, 1, now(), now() - i * interval '1 minute'
       FROM generate_series(1, 5000) i`,
      [many.orgId],
    );
    await herald.db.raw(
      `UPDATE message_logs SET recipients = json_build_array('+254720000001', json_build_object('recipient', '+254720000001', 'status', 'failed', 'error', 'x'))
       WHERE organization_id = ? AND id IN (SELECT id FROM message_logs WHERE organization_id = ? ORDER BY created_at LIMIT 2)`,
      [many.orgId, many.orgId],
    );
    // As autovacuum would leave it: the addresses' statistics current.
    await herald.db.raw('VACUUM ANALYZE message_logs');
  });
  afterAll(() => explain?.end());

  const searchStatements = async (query: string) => {
    const { result, statements } = await tenantStatementsOf(herald.db, () => search(many, query));
    expect(result.status).toBe(200);
    const found = statements.filter((s) => s.sql.includes('string_to_array'));
    expect(found.length).toBeGreaterThan(0);
    return { result, statements: found };
  };

  test('the search is answered from the index of the logs’ addresses', async () => {
    if (await isCitus(explain)) return; // there the plans are the workers'; tests/citus-routing.test.ts covers the routing
    const { result, statements } = await searchStatements('recipient=0720000001&limit=1');
    expect(result.headers.get('x-total-count')).toBe('2');
    for (const s of statements) {
      const { rows } = await explain.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${s.sql}`, s.bindings);
      expect({ sql: s.sql, plan: rows.map((r) => r['QUERY PLAN']).join('\n') }).toEqual({ sql: s.sql, plan: expect.stringContaining('message_logs_org_recipients_idx') });
    }
  });

  test('every statement stays with the organization (one shard on Citus, an organization-restricted scan otherwise)', async () => {
    const { statements } = await searchStatements('recipient=0720000001&channel=sms&limit=1');
    await expectEachWithOrganization(explain, statements, many.orgId);
  });
});
