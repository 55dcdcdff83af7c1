/**
 * The console's one GraphQL client: urql with graphcache (a normalised cache keyed by `_id`), the
 * caller's JWT on every request and in the WebSocket's `connection_init`, and subscriptions over
 * graphql-ws on the same `/graphql` path. A 401 forgets the session, which sends the user to the
 * login page (see `RequireSession`).
 */
import { cacheExchange, type Cache } from '@urql/exchange-graphcache';
import { createClient as createWsClient } from 'graphql-ws';
import { Client, fetchExchange, mapExchange, subscriptionExchange } from 'urql';
import { statusOf } from './errors';
import { getToken, setToken } from './session';

/**
 * After a mutation, lists may have gained or lost an entry: every root list field (a field without
 * an `id` argument, other than the caller's own records) is refetched by the pages that show it.
 * Entities the mutation returned are updated in place by the cache.
 */
function invalidateLists(cache: Cache): void {
  for (const field of cache.inspectFields('Query')) {
    if (field.arguments && 'id' in field.arguments) continue;
    if (field.fieldName === 'me' || field.fieldName === 'twoFactor') continue;
    cache.invalidate('Query', field.fieldName, field.arguments ?? undefined);
  }
}

const authOf = (token: string | null): Record<string, string> => (token ? { Authorization: `Bearer ${token}` } : {});

export function createHeraldClient(token: string | null): { client: Client; dispose: () => void } {
  const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  const ws = createWsClient({ url: wsUrl, lazy: true, connectionParams: () => authOf(getToken()), retryAttempts: 5 });
  const client = new Client({
    url: '/graphql',
    requestPolicy: 'cache-and-network',
    // Queries go over POST too: Apollo's CSRF prevention refuses a GET without a preflight header.
    preferGetMethod: false,
    fetchOptions: () => ({ headers: authOf(getToken()) }),
    exchanges: [
      cacheExchange({
        keys: {
          // Values without an identity of their own live inside their parent.
          Analytics: () => null,
          PageInfo: () => null,
          ContactExportLink: () => null,
          ContactBulkResult: () => null,
          TwoFactorStatus: () => null,
          TwoFactorEnrolment: () => null,
          RecoveryCodes: () => null,
          LoginPayload: () => null,
          AuthPayload: () => null,
          InvitePayload: () => null,
          InvitationPreview: () => null,
          ProviderHealth: () => null,
          ProviderTypeField: () => null,
          ProviderTestResult: () => null,
          CampaignResend: () => null,
          SuppressionImport: () => null,
          SuppressionImportProblem: () => null,
          DkimCheck: () => null,
          // A provider type is known by its name.
          ProviderType: (t) => (t as { type?: string }).type ?? null,
        },
        // Every mutation may change what the lists hold: one rule for all of them.
        updates: { Mutation: new Proxy({}, { get: () => (_result: unknown, _args: unknown, cache: Cache) => invalidateLists(cache) }) },
      }),
      mapExchange({
        // A signed-in session refused: forget it (a login or signup carries no session, so its 401 stays on its form).
        onError(error) {
          if (statusOf(error) === 401 && token) setToken(null);
        },
      }),
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query ?? '' };
          return {
            subscribe(sink) {
              const unsubscribe = ws.subscribe(input, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
  return { client, dispose: () => void ws.dispose() };
}
