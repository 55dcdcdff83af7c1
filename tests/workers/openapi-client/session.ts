// The README's sandbox session, through a client generated from Herald's /openapi.json by tools
// nobody on this project wrote: `openapi-typescript` writes `./schema.ts` from the document (in the
// test, next to this file), `openapi-fetch` makes the calls typed by it. Type-checked with `tsc`
// against the generated types before it runs, so a document that describes a path, a body or an
// answer wrongly fails here. Prints what each step answered, as JSON, for the test to check.
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const [baseUrl, email] = process.argv.slice(2) as [string, string];
const steps: Record<string, unknown> = {};

/** A step's answer, or a failure naming it. */
function ok<T>(name: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    throw new Error(`${name}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  steps[name] = { status: result.response.status, data: result.data };
  return result.data;
}

const anonymous = createClient<paths>({ baseUrl });
const signup = ok(
  'signup',
  await anonymous.POST('/auth/signup', {
    body: {
      firstName: 'Ada', lastName: 'Lovelace', email, password: 'correct horse',
      countryCode: '+254', phoneNumber: '712345678', companyName: 'Acme', sector: 'Tech', country: 'KE',
    },
  }),
);

const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${signup.token}` } });
const me = ok('me', await api.GET('/users/me'));
if (me.organization.credits !== 100) throw new Error(`a new organization has 100 credits, not ${me.organization.credits}`);
const group = ok('group', await api.POST('/groups', { body: { name: 'VIP', color: 'bg-red-500' } }));
const contact = ok('contact', await api.POST('/contacts', { body: { name: 'Grace', phone: '0712345678', email: 'grace@example.com', groups: [group._id] } }));
ok('sms', await api.POST('/notifications/send', { body: { type: 'sms', to: '0712345678', message: 'Hello' } }));
ok('email', await api.POST('/notifications/send', { body: { type: 'email', to: ['grace@example.com'], subject: 'Hi', message: '<p>Hello</p>' } }));
ok('whatsapp', await api.POST('/notifications/send-to-all', { body: { type: 'whatsapp', to: 'all', message: 'Hello all' } }));
const outbox = ok('outbox', await api.GET('/sandbox/outbox'));
const logs = ok('logs', await api.GET('/message-logs', { params: { query: { channel: 'sms' } } }));
const campaign = ok(
  'campaign',
  await api.POST('/campaigns', { body: { name: 'Launch', type: 'broadcast', channels: ['sms'], recipients: { groups: [group._id] }, messages: { sms: { content: 'We are live' } } } }),
);
ok('launch', await api.POST('/campaigns/{id}/launch', { params: { path: { id: campaign._id } } }));
const launched = ok('launched', await api.GET('/campaigns/{id}', { params: { path: { id: campaign._id } } }));
const welcome = ok(
  'welcome',
  await api.POST('/campaigns', {
    body: { name: 'Welcome', type: 'automated', channels: ['sms'], messages: { sms: { content: 'Welcome, {{ contact.name }}' } }, trigger: { event: 'contact.added_to_group', groupId: group._id } },
  }),
);
ok('welcome launch', await api.POST('/campaigns/{id}/launch', { params: { path: { id: welcome._id } } }));
ok('joined', await api.POST('/contacts', { body: { name: 'Juma', phone: '0711000666', groups: [group._id] } }));
let runs = ok('runs', await api.GET('/campaigns/{id}/runs', { params: { path: { id: welcome._id } } }));
for (let i = 0; i < 100 && !(runs[0]?.status === 'completed'); i++) {
  await new Promise((r) => setTimeout(r, 100));
  runs = ok('runs', await api.GET('/campaigns/{id}/runs', { params: { path: { id: welcome._id } } }));
}

console.log(JSON.stringify({ steps, outbox: outbox.length, logs: logs.length, launched: launched.status, sent: launched.analytics.sent, runs: runs.map((r) => [r.status, r.analytics.sent]) }));
