import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CallerCache } from '../../src/modules/auth/caller-cache.js';
import type { Herald } from '../../src/server.js';
import { addUser, client, createApiKey, signupOrg, startTestHerald, type Client, type Credential } from '../helpers/herald.js';

// Two Herald processes' worth of services on one database, each keeping callers for a minute: only
// the change notification can make process B see what was changed through process A in time.
let a: Herald;
let b: Herald;
let apiA: Client;
let apiB: Client;

beforeAll(async () => {
  [a, b] = await Promise.all([startTestHerald({ AUTH_CACHE_MS: '60000' }), startTestHerald({ AUTH_CACHE_MS: '60000' })]);
  apiA = client(a.url);
  apiB = client(b.url);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

/** Polls `path` on B until `cred` is refused with `status`, for at most a second; returns how long that took. */
async function refusedOnB(cred: Credential, path = '/contacts?limit=1', status = 401): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const res = await apiB.get(path, cred);
    if (res.status === status) return Date.now() - t0;
    expect(res.status).toBe(200);
    if (Date.now() - t0 > 1000) throw new Error('process B still accepts the credential after 1 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('caller cache: changes made through one process apply in every process', () => {
  test('a user deactivated through A is refused by B, where their row was cached', async () => {
    const org = await signupOrg(apiA);
    const member = await addUser(apiA, org);
    expect((await apiB.get('/contacts?limit=1', { token: member.token })).status).toBe(200);
    expect((await apiA.put(`/users/${member.user._id}/deactivate`, undefined, { token: org.token })).status).toBe(200);
    expect(await refusedOnB({ token: member.token })).toBeLessThan(1000);
    // ... and A itself refuses it on the very next request.
    expect((await apiA.get('/contacts?limit=1', { token: member.token })).status).toBe(401);
  });

  test('a role change through A takes admin rights from earlier tokens on B; a password change ends them', async () => {
    const org = await signupOrg(apiA);
    const demoted = await addUser(apiA, org, 'admin');
    const changed = await addUser(apiA, org);
    for (const m of [demoted, changed]) expect((await apiB.get('/contacts?limit=1', { token: m.token })).status).toBe(200);
    expect((await apiB.get('/users?limit=1', { token: demoted.token })).status).toBe(200);
    expect((await apiA.put(`/users/${demoted.user._id}`, { role: 'user' }, { token: org.token })).status).toBe(200);
    expect(
      (await apiA.put(`/users/${changed.user._id}/password`, { oldPassword: changed.password, newPassword: 'a brand new password' }, { token: changed.token })).status,
    ).toBe(200);
    // The demoted user's token keeps working, with the stored role: admin-only paths refuse it.
    expect(await refusedOnB({ token: demoted.token }, '/users?limit=1', 403)).toBeLessThan(1000);
    expect(await refusedOnB({ token: changed.token })).toBeLessThan(1000);
  });

  test('a user deleted through A, and an API key revoked or deleted through A, are refused by B', async () => {
    const org = await signupOrg(apiA);
    const member = await addUser(apiA, org);
    const revoked = await createApiKey(apiA, org);
    const deleted = await createApiKey(apiA, org);
    for (const cred of [{ token: member.token }, { apiKey: revoked.key }, { apiKey: deleted.key }]) {
      expect((await apiB.get('/contacts?limit=1', cred)).status).toBe(200);
    }
    expect((await apiA.delete(`/users/${member.user._id}`, { token: org.token })).status).toBe(200);
    expect((await apiA.put(`/api-keys/${revoked.apiKey._id}/revoke`, undefined, { token: org.token })).status).toBe(200);
    expect((await apiA.delete(`/api-keys/${deleted.apiKey._id}`, { token: org.token })).status).toBe(200);
    expect(await refusedOnB({ token: member.token })).toBeLessThan(1000);
    expect(await refusedOnB({ apiKey: revoked.key })).toBeLessThan(1000);
    expect(await refusedOnB({ apiKey: deleted.key })).toBeLessThan(1000);
  });

  test('a change made in SQL by hand (no Herald process involved) reaches both processes', async () => {
    const org = await signupOrg(apiA);
    const member = await addUser(apiA, org);
    for (const api of [apiA, apiB]) expect((await api.get('/contacts?limit=1', { token: member.token })).status).toBe(200);
    await a.db('users').where({ id: member.user._id }).update({ is_active: false });
    expect(await refusedOnB({ token: member.token })).toBeLessThan(1000);
  });
});

describe('CallerCache', () => {
  const row = { id: 'k1' };

  test('caches nothing until it listens, and nothing when its listener can not connect', async () => {
    const cache = new CallerCache<typeof row, typeof row>(60_000);
    let loads = 0;
    const load = async () => (loads++, row);
    await cache.user('u1', load);
    await cache.user('u1', load);
    expect(loads).toBe(2);
    await cache.listen('postgres://nobody@127.0.0.1:1/none');
    expect(cache.enabled).toBe(false);
    await cache.user('u1', load);
    expect(loads).toBe(3);
    await cache.close();
  });

  test('listening, it reuses a row until it is forgotten, and a lookup overtaken by a change is not kept', async () => {
    const cache = new CallerCache<typeof row, typeof row>(60_000);
    await cache.listen(process.env.HERALD_TEST_DATABASE_URL!);
    expect(cache.enabled).toBe(true);
    let loads = 0;
    const load = async () => (loads++, row);
    await cache.key('hash', load, (r) => r.id);
    await cache.key('hash', load, (r) => r.id);
    expect(loads).toBe(1);
    cache.forgetKey('k1');
    await cache.key('hash', load, (r) => r.id);
    expect(loads).toBe(2);

    // The row is read, then changed (and forgotten) before the read returns: the old row is not stored.
    let release!: () => void;
    const slow = cache.user('u2', () => new Promise((r) => (release = () => r(row))));
    cache.forgetUser('u2');
    release();
    await slow;
    await cache.user('u2', load);
    expect(loads).toBe(3);
    await cache.close();
    expect(cache.enabled).toBe(false);
  });
});
