import type { Herald } from '../../src/server.js';
import { startWebhookReceiver, verifies, type WebhookReceiver } from '../fakes/webhook-receiver.js';
import { heraldWithOrgs, signupOrg, waitFor, type Client, type Org } from '../helpers/herald.js';

/**
 * platform.md, "Outbound webhooks", through the GraphQL door: the same operations as REST
 * (`tests/webhooks.test.ts` covers delivery itself), their enum of event types, and tenancy.
 */

let herald: Herald, api: Client, org: Org, other: Org;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ({ herald, api, orgs: [org, other] } = await heraldWithOrgs(2, { workers: true, env: { WEBHOOK_RETRY_SCHEDULE: '1,1', WEBHOOK_TIMEOUT_MS: '1000' } }));
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.stop();
  await herald?.stop();
});

const ENDPOINT = '_id url description eventTypes enabled disabledReason failuresInARow';

test('an endpoint is created, tested, listed with its attempts and events, rotated and deleted', async () => {
  const created = await api.gql(
    `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret endpoint { ${ENDPOINT} } } }`,
    { input: { url: `${receiver.url}/graphql-hook`, description: 'GraphQL', eventTypes: ['CAMPAIGN_COMPLETED', 'MESSAGE_SENT'] } },
    { token: org.token },
  );
  expect(created.body.errors).toBeUndefined();
  const { secret, endpoint } = created.body.data.createWebhookEndpoint;
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(endpoint).toMatchObject({ url: `${receiver.url}/graphql-hook`, eventTypes: ['campaign.completed', 'message.sent'], enabled: true, failuresInARow: 0 });

  const queued = await api.gql(`mutation($id: ID!) { sendTestWebhook(id: $id, eventType: CAMPAIGN_COMPLETED) { eventId } }`, { id: endpoint._id }, { token: org.token });
  const { eventId } = queued.body.data.sendTestWebhook;
  const arrived = await receiver.waitForRequest((r) => r.id === eventId);
  expect(verifies(arrived, secret)).toBe(true);
  expect(arrived.body).toMatchObject({ type: 'campaign.completed', data: { test: true } });

  // The receiver sees the request before Herald has its answer and records the attempt.
  const seen = await waitFor(
    () =>
      api.gql(
        `query($id: ID!, $event: ID!) {
           webhookEndpoints { totalCount edges { node { _id } } }
           webhookAttempts(endpointId: $id) { edges { node { eventId eventType attempt status responseStatus } } }
           webhookEvent(id: $event) { type data deliveries { endpointId status attempts } }
           webhookEventAttempts(eventId: $event) { totalCount }
         }`,
        { id: endpoint._id, event: eventId },
        { token: org.token },
      ),
    (res) => res.body.errors !== undefined || res.body.data.webhookAttempts.edges.length > 0,
  );
  expect(seen.body.errors).toBeUndefined();
  expect(seen.body.data.webhookEndpoints.edges.map((e: any) => e.node._id)).toContain(endpoint._id);
  expect(seen.body.data.webhookAttempts.edges[0].node).toEqual({ eventId, eventType: 'campaign.completed', attempt: 1, status: 'succeeded', responseStatus: 200 });
  expect(seen.body.data.webhookEvent).toMatchObject({ type: 'campaign.completed', deliveries: [{ endpointId: endpoint._id, status: 'succeeded', attempts: 1 }] });
  expect(seen.body.data.webhookEventAttempts.totalCount).toBe(1);

  const rotated = await api.gql(`mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret previousSecretExpiresAt } }`, { id: endpoint._id }, { token: org.token });
  const next = rotated.body.data.rotateWebhookSecret.secret;
  const resent = await api.gql(`mutation($id: ID!, $endpointId: ID!) { resendWebhookEvent(id: $id, endpointId: $endpointId) { eventId } }`, { id: eventId, endpointId: endpoint._id }, { token: org.token });
  expect(resent.body.data.resendWebhookEvent.eventId).toBe(eventId);
  const again = await receiver.waitForRequest((r) => r.id === eventId && r !== arrived);
  expect(verifies(again, next) && verifies(again, secret)).toBe(true);
  expect(again.rawBody).toBe(arrived.rawBody);

  const updated = await api.gql(
    `mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { enabled: false, description: null, eventTypes: [] }) { ${ENDPOINT} } }`,
    { id: endpoint._id },
    { token: org.token },
  );
  expect(updated.body.data.updateWebhookEndpoint).toMatchObject({ enabled: false, description: null, eventTypes: [] });
  const deleted = await api.gql(`mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { message } }`, { id: endpoint._id }, { token: org.token });
  expect(deleted.body.data.deleteWebhookEndpoint.message).toBe('Webhook endpoint deleted successfully');
});

test("a send's message.sent shows through GraphQL as it was delivered: its log's recipients, read from the log", async () => {
  const own = await signupOrg(api);
  const created = await api.gql(
    `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret endpoint { _id } } }`,
    { input: { url: `${receiver.url}/graphql-sent`, eventTypes: ['MESSAGE_SENT'] } },
    { token: own.token },
  );
  expect(created.body.errors).toBeUndefined();
  const to = ['gql.one@example.com', 'gql.two@example.com'];
  const sent = await api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Hello there' }, { token: own.token });
  expect(sent.status).toBe(200);
  const arrived = await receiver.waitForRequest((r) => r.path === '/graphql-sent' && r.body?.type === 'message.sent');
  expect(verifies(arrived, created.body.data.createWebhookEndpoint.secret)).toBe(true);
  expect(arrived.body.data.recipients).toEqual(to.map((recipient, i) => ({ recipient, position: i + 1 })));
  const seen = await api.gql(`query($id: ID!) { webhookEvent(id: $id) { type data } }`, { id: arrived.id }, { token: own.token });
  expect(seen.body.errors).toBeUndefined();
  expect(seen.body.data.webhookEvent).toEqual({ type: 'message.sent', data: arrived.body.data });
  // The event is the organization's own: another neither sees it nor its log's recipients.
  const foreign = await api.gql(`query($id: ID!) { webhookEvent(id: $id) { data } }`, { id: arrived.id }, { token: org.token });
  expect(foreign.body.errors![0].extensions.code).toBe('FORBIDDEN');
});

test("another organization's endpoint is FORBIDDEN and a bad URL names its field", async () => {
  const created = await api.gql(
    `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { _id } } }`,
    { input: { url: `${receiver.url}/a` } },
    { token: org.token },
  );
  const id = created.body.data.createWebhookEndpoint.endpoint._id;
  const foreign = await api.gql(`query($id: ID!) { webhookEndpoint(id: $id) { _id } }`, { id }, { token: other.token });
  expect(foreign.body.errors![0].extensions.code).toBe('FORBIDDEN');
  const theirs = await api.gql(`{ webhookEndpoints { totalCount } webhookEvents { totalCount } }`, undefined, { token: other.token });
  expect(theirs.body.data).toEqual({ webhookEndpoints: { totalCount: 0 }, webhookEvents: { totalCount: 0 } });
  const bad = await api.gql(`mutation { createWebhookEndpoint(input: { url: "ftp://example.com" }) { secret } }`, undefined, { token: org.token });
  expect(bad.body.errors![0].extensions.code).toBe('BAD_REQUEST');
  expect(JSON.stringify(bad.body.errors![0].extensions)).toContain('url');
});
