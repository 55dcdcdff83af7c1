import type { Herald } from '../../src/server.js';
import { heraldWithOrgs, signupOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * Time zones: the organization's (its country's when that has one zone, else UTC, until an admin
 * sets another) and each contact's (its own, through the API or an import, or the one zone of its
 * phone number's country; none: the organization's). IANA names only.
 */

let herald: Herald, api: Client, org: Org;
const as = (o: Org) => ({ token: o.token });
const fields = (res: { body: { details?: { field: string }[] } }) => res.body.details?.map((d) => d.field);

beforeAll(async () => {
  ({ herald, api, orgs: [org] } = await heraldWithOrgs(1, { workers: true, signup: { country: 'KE' } }));
}, 60_000);
afterAll(() => herald?.stop());

describe('the organization', () => {
  test("its country's one zone, else UTC; an admin sets an IANA name through either door, audited; an offset or an unknown name is 400", async () => {
    expect((await api.get('/organizations/current', as(org))).body.timezone).toBe('Africa/Nairobi');
    const american = await signupOrg(api, { country: 'US' });
    expect((await api.get('/organizations/current', as(american))).body.timezone).toBe('UTC');
    const named = await signupOrg(api, { country: 'Indonesia' });
    expect((await api.get('/organizations/current', as(named))).body.timezone).toBe('UTC');
    const nigerian = await signupOrg(api, { country: 'Nigeria' });
    expect((await api.get('/organizations/current', as(nigerian))).body.timezone).toBe('Africa/Lagos');

    for (const bad of ['+03:00', 'Mars/Olympus', '', 'UTC+3', 3]) {
      const res = await api.put('/organizations/current', { timezone: bad }, as(american));
      expect({ bad, status: res.status, fields: fields(res) }).toEqual({ bad, status: 400, fields: ['timezone'] });
    }
    const res = await api.put('/organizations/current', { timezone: 'America/New_York' }, as(american));
    expect(res.status).toBe(200);
    expect(res.body.timezone).toBe('America/New_York');
    const gql = await api.gql('mutation { updateOrganization(input: { timezone: "America/Chicago" }) { timezone } }', {}, as(american));
    expect(gql.body.data.updateOrganization.timezone).toBe('America/Chicago');
    expect((await api.gql('{ organization { timezone } }', {}, as(american))).body.data.organization.timezone).toBe('America/Chicago');
    const audit = (await api.get('/audit-log?action=organization.updated', as(american))).body as { details: any }[];
    expect(audit.map((a) => a.details)).toEqual([{ changes: { timezone: { from: 'America/New_York', to: 'America/Chicago' } } }, { changes: { timezone: { from: 'UTC', to: 'America/New_York' } } }]);
  });
});

describe('a contact', () => {
  test("its own zone, else its phone number's country's one zone, else none (the organization's); the phone's follows a new phone, its own stays", async () => {
    const kenyan = await api.post('/contacts', { name: 'Wanjiru', phone: '0712300401' }, as(org));
    expect(kenyan.status).toBe(201);
    expect(kenyan.body.timezone).toBe('Africa/Nairobi');
    const emailOnly = (await api.post('/contacts', { name: 'Mail Only', email: 'mail.only.tz@example.com' }, as(org))).body;
    expect(emailOnly.timezone).toBeNull();
    const american = (await api.post('/contacts', { name: 'Sam', phone: '+12025550143' }, as(org))).body;
    expect(american.timezone).toBeNull();
    const own = (await api.post('/contacts', { name: 'Layla', phone: '0712300402', timezone: 'Asia/Dubai' }, as(org))).body;
    expect(own.timezone).toBe('Asia/Dubai');

    // A new phone moves a zone taken from the phone, never the contact's own.
    expect((await api.put(`/contacts/${kenyan.body._id}`, { phone: '+971501234567' }, as(org))).body.timezone).toBe('Asia/Dubai');
    expect((await api.put(`/contacts/${own._id}`, { phone: '+12025550144' }, as(org))).body.timezone).toBe('Asia/Dubai');
    // Null gives its own zone up: its phone's again (the US has several: none).
    expect((await api.put(`/contacts/${own._id}`, { timezone: null }, as(org))).body.timezone).toBeNull();
    expect((await api.put(`/contacts/${own._id}`, { timezone: 'America/Denver' }, as(org))).body.timezone).toBe('America/Denver');
    expect((await api.get(`/contacts/${own._id}`, as(org))).body.timezone).toBe('America/Denver');

    for (const bad of ['+03:00', 'Nairobi', 42]) {
      const res = await api.post('/contacts', { name: 'Bad', phone: '0712300403', timezone: bad }, as(org));
      expect({ bad, status: res.status, fields: fields(res) }).toEqual({ bad, status: 400, fields: ['timezone'] });
    }
  });

  test('GraphQL: timezone on create, update and read; null gives the own zone up', async () => {
    const created = await api.gql('mutation { createContact(input: { name: "Amani", phone: "0712300404", timezone: "Africa/Lagos" }) { _id timezone } }', {}, as(org));
    const id = created.body.data.createContact._id;
    expect(created.body.data.createContact.timezone).toBe('Africa/Lagos');
    const cleared = await api.gql(`mutation { updateContact(id: "${id}", input: { timezone: null }) { timezone } }`, {}, as(org));
    expect(cleared.body.data.updateContact.timezone).toBe('Africa/Nairobi');
    const bad = await api.gql(`mutation { updateContact(id: "${id}", input: { timezone: "+01:00" }) { timezone } }`, {}, as(org));
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect((await api.gql(`{ contact(id: "${id}") { timezone } }`, {}, as(org))).body.data.contact.timezone).toBe('Africa/Nairobi');
  });

  test("an import sets a row's zone as the contact's own, takes the phone's otherwise, refuses a bad one as a row error; the export writes only a contact's own", async () => {
    const csv = 'name,phone,timezone\nZuri,0712300405,Asia/Tokyo\nBaraka,0712300406,\nBad Zone,0712300407,+03:00\n';
    const res = await api.raw('POST', '/contacts/import', csv, as(org), { 'content-type': 'text/csv' });
    expect(res.status).toBe(202);
    const done = (await waitFor(() => api.get(`/contact-imports/${res.body._id}`, as(org)), (r) => r.body.status === 'completed', 20_000)).body;
    expect(done).toMatchObject({ created: 2, failed: 1, errors: [{ line: 4, column: 'timezone', message: 'timezone must be an IANA time zone (Africa/Nairobi, UTC)' }] });
    const byName = async (name: string) => ((await api.get(`/contacts?search=${name}`, as(org))).body as { timezone: string | null }[])[0]!;
    expect((await byName('Zuri')).timezone).toBe('Asia/Tokyo');
    expect((await byName('Baraka')).timezone).toBe('Africa/Nairobi');

    // Again: a zone moves to the row's; a new phone moves a zone taken from the phone, never one of the contact's own.
    const again = await api.raw('POST', '/contacts/import', 'phone,timezone\n0712300405,\n0712300406,Europe/Paris\n', as(org), { 'content-type': 'text/csv' });
    await waitFor(() => api.get(`/contact-imports/${again.body._id}`, as(org)), (r) => r.body.status === 'completed', 20_000);
    expect((await byName('Zuri')).timezone).toBe('Asia/Tokyo');
    expect((await byName('Baraka')).timezone).toBe('Europe/Paris');

    const exported = await api.get('/contacts/export?search=Zuri', as(org));
    const [header, row] = (exported.body as string).trim().split('\n');
    const cell = (name: string) => row!.split(',')[header!.split(',').indexOf(name)];
    expect(cell('timezone')).toBe('Asia/Tokyo');
    const inferred = await api.get('/contacts/export?search=Amani', as(org));
    expect(((inferred.body as string).trim().split('\n')[1] ?? '').split(',')[header!.split(',').indexOf('timezone')]).toBe('');
  });
});
