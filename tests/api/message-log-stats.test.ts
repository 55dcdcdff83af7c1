import pg from 'pg';
import type { Herald } from '../../src/server.js';
import { countsByChannel } from '../../src/modules/message-logs/sql.js';
import { createApiKey, heraldWithOrgs, type Client, type Org } from '../helpers/herald.js';
import { expectEachWithOrganization } from '../helpers/statements.js';

/**
 * `GET /message-logs/stats` and `messageStats`: an organization's recipients since a moment, by
 * channel and status, through both doors, never another organization's.
 */

let herald: Herald, api: Client, org: Org, other: Org, empty: Org;
beforeAll(async () => {
  ({ herald, api, orgs: [org, other, empty] } = await heraldWithOrgs(3));
  const send = (o: Org, body: object) => api.post('/notifications/send', body, { token: o.token });
  // Ours: two SMS sent and one failing (a number ending in 0000), one email. Theirs: three SMS.
  expect((await send(org, { type: 'sms', to: ['0712345678', '0712345679', '+254712340000'], message: 'Hello' })).status).toBe(200);
  expect((await send(org, { type: 'email', to: 'jo@example.com', subject: 'Hi', message: 'Hello Jo' })).status).toBe(200);
  expect((await send(other, { type: 'sms', to: ['0712345601', '0712345602', '0712345603'], message: 'Theirs' })).status).toBe(200);
});
afterAll(() => herald?.stop());

const STATS_QUERY = `query Stats($since: String) { messageStats(since: $since) { since total byChannel { channel status count } } }`;

/** The counts of an answer as `channel/status: count`, zeros left out. */
const nonZero = (byChannel: { channel: string; status: string; count: number }[]) =>
  Object.fromEntries(byChannel.filter((c) => c.count).map((c) => [`${c.channel}/${c.status}`, c.count]));

const startOfTodayUtc = () => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
};

describe('GET /message-logs/stats', () => {
  test('today by default: every channel and status, the organization’s own recipients only', async () => {
    const res = await api.get('/message-logs/stats', { token: org.token });
    expect(res.status).toBe(200);
    expect(res.body.since).toBe(startOfTodayUtc());
    expect(res.body.byChannel).toHaveLength(9);
    expect(res.body.byChannel.map((c: any) => `${c.channel}/${c.status}`)).toEqual([
      'sms/success', 'sms/failed', 'sms/pending', 'email/success', 'email/failed', 'email/pending', 'whatsapp/success', 'whatsapp/failed', 'whatsapp/pending',
    ]);
    expect(nonZero(res.body.byChannel)).toEqual({ 'sms/success': 2, 'sms/failed': 1, 'email/success': 1 });
    expect(res.body.total).toBe(4);

    const theirs = await api.get('/message-logs/stats', { token: other.token });
    expect(nonZero(theirs.body.byChannel)).toEqual({ 'sms/success': 3 });
    expect(theirs.body.total).toBe(3);
  });

  test('an organization that sent nothing: zeros', async () => {
    const res = await api.get('/message-logs/stats', { token: empty.token });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
    expect(res.body.byChannel.every((c: any) => c.count === 0)).toBe(true);
  });

  test('`since` moves the start: a date, a date-time; later sends only', async () => {
    const old = await api.get('/message-logs/stats?since=2000-01-01', { token: org.token });
    expect(old.body).toMatchObject({ since: '2000-01-01T00:00:00.000Z', total: 4 });
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const later = await api.get(`/message-logs/stats?since=${encodeURIComponent(future)}`, { token: org.token });
    expect(later.body).toMatchObject({ since: future, total: 0 });
  });

  test('any role and API keys may read it; no credential is 401; a bad `since` or an unknown filter is 400', async () => {
    const { key } = await createApiKey(api, org, 'user');
    expect((await api.get('/message-logs/stats', { apiKey: key })).body.total).toBe(4);
    expect((await api.get('/message-logs/stats')).status).toBe(401);
    const bad = await api.get('/message-logs/stats?since=yesterday', { token: org.token });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([expect.objectContaining({ field: 'since' })]);
    expect((await api.get('/message-logs/stats?channel=sms', { token: org.token })).status).toBe(400);
  });
});

describe('messageStats (GraphQL)', () => {
  test('the same counts as REST', async () => {
    const res = await api.gql(STATS_QUERY, {}, { token: org.token });
    expect(res.body.errors).toBeUndefined();
    const rest = await api.get('/message-logs/stats', { token: org.token });
    expect(res.body.data.messageStats).toEqual(rest.body);
    const theirs = await api.gql(STATS_QUERY, { since: '2000-01-01' }, { token: other.token });
    expect(nonZero(theirs.body.data.messageStats.byChannel)).toEqual({ 'sms/success': 3 });
  });

  test('a bad `since` is BAD_REQUEST naming it', async () => {
    const res = await api.gql(STATS_QUERY, { since: 'soon' }, { token: org.token });
    expect(res.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400, details: [expect.objectContaining({ field: 'since' })] });
  });
});

test('the statement stays with the organization (one shard on Citus, an organization-restricted scan otherwise)', async () => {
  const explain = new pg.Client({ connectionString: process.env.HERALD_TEST_DATABASE_URL });
  await explain.connect();
  try {
    const bindings = countsByChannel.order.map((p) => ({ orgId: org.orgId, since: new Date(startOfTodayUtc()) })[p]);
    await expectEachWithOrganization(explain, [{ sql: countsByChannel.text, bindings }], org.orgId);
  } finally {
    await explain.end();
  }
});
