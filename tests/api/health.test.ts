import { client, startTestHerald, signupOrg } from '../helpers/herald.js';
import type { Herald } from '../../src/server.js';

let herald: Herald;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  herald = await startTestHerald();
  api = client(herald.url);
});
afterAll(() => herald.stop());

test('GET /health and /ready answer without credentials', async () => {
  expect(await api.get('/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
  expect(await api.get('/ready')).toMatchObject({ status: 200, body: { status: 'ready' } });
});

test('security headers are set and X-Powered-By is not', async () => {
  const res = await api.get('/health');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-powered-by')).toBeNull();
  expect(res.headers.get('x-request-id')).toBeTruthy();
});

test('a signed-up admin can read their profile', async () => {
  const org = await signupOrg(api);
  const me = await api.get('/users/me', { token: org.token });
  expect(me.status).toBe(200);
  expect(me.body.organization._id).toBe(org.orgId);
});
