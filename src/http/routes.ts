import * as apiKeys from '../modules/api-keys/service.js';
import * as auditLog from '../modules/audit/service.js';
import * as auth from '../modules/auth/service.js';
import * as campaigns from '../modules/campaigns/service.js';
import { campaignDetail, canceledCampaign, launchedCampaign, listedCampaign } from '../modules/campaigns/dto.js';
import * as campaignDryRun from '../modules/campaigns/dry-run.js';
import { previewMessage } from '../modules/campaigns/message-preview.js';
import * as campaignResend from '../modules/campaigns/resend.js';
import { pendingSendView } from '../modules/campaigns/runs.js';
import * as contacts from '../modules/contacts/service.js';
import { attributeKeys } from '../modules/contacts/attribute-keys.js';
import * as personData from '../modules/person-data/service.js';
import * as closure from '../modules/closure/service.js';
import * as erasure from '../modules/erasure/service.js';
import { bulk as bulkContacts } from '../modules/contacts/bulk.js';
import { exportContacts } from '../modules/contacts/export.js';
import * as contactImports from '../modules/contact-imports/service.js';
import * as groups from '../modules/groups/service.js';
import * as invitations from '../modules/invitations/service.js';
import * as invitationAcceptance from '../modules/invitations/accept.js';
import * as messageLogs from '../modules/message-logs/service.js';
import * as stats from '../modules/stats/service.js';
import * as notifications from '../modules/notifications/service.js';
import * as sandbox from '../modules/sandbox/service.js';
import * as sandboxEvents from '../modules/sandbox/receipts.js';
import * as templates from '../modules/templates/service.js';
import * as organizations from '../modules/organizations/service.js';
import * as providers from '../modules/providers/service.js';
import * as suppressions from '../modules/suppressions/service.js';
import * as dkim from '../modules/dkim/service.js';
import * as users from '../modules/users/service.js';
import * as twoFactor from '../modules/two-factor/service.js';
import * as webhooks from '../modules/webhooks/service.js';
import { listedUser } from '../modules/users/dto.js';
import { jsonArray } from '../lib/download.js';
import { queryFilters, queryParams, type Route } from './rest.js';

const none = () => undefined;

/** Every REST path of the interface, one line each. Authorization lives in the operations. */
export const routes: Route[] = [
  { method: 'post', path: '/auth/signup', op: auth.signup, status: 201 },
  { method: 'post', path: '/auth/login', op: auth.login, view: auth.loginView },
  { method: 'post', path: '/auth/login/mfa', op: auth.loginWithTwoFactor, view: ({ token, user }) => ({ token, user }) },

  { method: 'get', path: '/users', op: users.list, list: true, input: none, view: listedUser },
  { method: 'get', path: '/users/me', op: users.me, input: none, view: (r) => ({ ...r.user, organization: r.organization }) },
  { method: 'get', path: '/users/:id', op: users.get, input: none },
  { method: 'post', path: '/users', op: users.create, status: 201 },
  { method: 'put', path: '/users/:id', op: users.update },
  { method: 'put', path: '/users/:id/deactivate', op: users.deactivate, input: none },
  { method: 'put', path: '/users/:id/reactivate', op: users.reactivate, input: none },
  { method: 'put', path: '/users/:id/password', op: users.changePassword },
  { method: 'delete', path: '/users/:id', op: users.remove, input: none },
  { method: 'get', path: '/users/me/two-factor', op: twoFactor.status, input: none },
  { method: 'post', path: '/users/me/two-factor', op: twoFactor.startEnrolment, input: none },
  { method: 'delete', path: '/users/me/two-factor', op: twoFactor.disable },
  { method: 'post', path: '/users/me/two-factor/confirm', op: twoFactor.confirm },
  { method: 'post', path: '/users/me/two-factor/recovery-codes', op: twoFactor.regenerateRecoveryCodes },
  { method: 'delete', path: '/users/:id/two-factor', op: twoFactor.reset, input: none },

  { method: 'get', path: '/invitations', op: invitations.list, list: true, input: none },
  { method: 'post', path: '/invitations', op: invitations.invite, status: 201 },
  { method: 'delete', path: '/invitations/:id', op: invitations.revoke, input: none },
  { method: 'get', path: '/invitations/accept/:token', op: invitationAcceptance.preview, input: none },
  { method: 'post', path: '/invitations/accept/:token', op: invitationAcceptance.accept, status: 201, view: invitationAcceptance.sessionView },

  { method: 'get', path: '/organizations/current', op: organizations.current, input: none },
  { method: 'put', path: '/organizations/current', op: organizations.updateOrganization },
  { method: 'put', path: '/organizations/current/credentials', op: organizations.updateCredentials },
  { method: 'get', path: '/organizations/current/closure', op: closure.get, input: none, errors: [404] },
  { method: 'post', path: '/organizations/current/closure', op: closure.close, status: 202, errors: [409] },
  { method: 'delete', path: '/organizations/current/closure', op: closure.cancel, input: none, errors: [404, 409] },

  { method: 'get', path: '/providers', op: providers.list, input: queryParams },
  { method: 'post', path: '/providers', op: providers.create, status: 201 },
  { method: 'get', path: '/provider-types', op: providers.types, input: none },
  { method: 'put', path: '/providers/order', op: providers.reorder },
  { method: 'get', path: '/providers/:id', op: providers.get, input: none },
  { method: 'put', path: '/providers/:id', op: providers.update },
  { method: 'delete', path: '/providers/:id', op: providers.remove, input: none },
  { method: 'post', path: '/providers/:id/test', op: providers.test },

  { method: 'post', path: '/contacts', op: contacts.create, status: 201 },
  { method: 'get', path: '/contacts', op: contacts.listJson, list: true, input: queryFilters },
  { method: 'get', path: '/contacts/export', op: exportContacts, stream: true, input: queryParams },
  { method: 'post', path: '/contacts/bulk', op: bulkContacts },
  { method: 'get', path: '/contacts/attribute-keys', op: attributeKeys, input: none },
  { method: 'get', path: '/contacts/data', op: personData.ofAddress, stream: true, streamType: 'application/json', input: queryParams },
  { method: 'post', path: '/contacts/:id/erase', op: erasure.eraseContact, status: 202, input: none },
  { method: 'get', path: '/contacts/:id/data', op: personData.ofContact, stream: true, streamType: 'application/json', input: none },
  { method: 'get', path: '/contacts/:id', op: contacts.get, input: none },
  { method: 'put', path: '/contacts/:id', op: contacts.update },
  { method: 'delete', path: '/contacts/:id', op: contacts.remove, input: none },

  { method: 'post', path: '/contacts/import', op: contactImports.start, status: 202, upload: true },
  { method: 'get', path: '/contact-imports', op: contactImports.list, list: true, input: none },
  { method: 'get', path: '/contact-imports/:id', op: contactImports.get, input: none },
  { method: 'post', path: '/contact-imports/:id/cancel', op: contactImports.cancel, input: none },

  { method: 'get', path: '/erasures', op: erasure.list, list: true, input: none },
  { method: 'post', path: '/erasures', op: erasure.eraseAddress, status: 202 },
  { method: 'get', path: '/erasures/:id', op: erasure.get, input: none },
  { method: 'get', path: '/suppressions', op: suppressions.list, list: true, input: queryFilters },
  { method: 'post', path: '/suppressions', op: suppressions.add, status: 201 },
  { method: 'post', path: '/suppressions/import', op: suppressions.importCsv, upload: true },
  { method: 'delete', path: '/suppressions/:id', op: suppressions.remove, input: none },

  { method: 'get', path: '/dkim-keys', op: dkim.list, input: none },
  { method: 'post', path: '/dkim-keys', op: dkim.create, status: 201 },
  { method: 'get', path: '/dkim-keys/:id', op: dkim.get, input: none },
  { method: 'delete', path: '/dkim-keys/:id', op: dkim.remove, input: none },
  { method: 'post', path: '/dkim-keys/:id/check', op: dkim.check, input: none },

  { method: 'post', path: '/groups', op: groups.create, status: 201 },
  { method: 'get', path: '/groups', op: groups.list, list: true, input: none },
  { method: 'get', path: '/groups/:id', op: groups.get, input: none },
  { method: 'put', path: '/groups/:id', op: groups.update },
  { method: 'delete', path: '/groups/:id', op: groups.remove, input: none },

  { method: 'post', path: '/templates', op: templates.create, status: 201 },
  { method: 'get', path: '/templates', op: templates.list, list: true, input: none },
  { method: 'get', path: '/templates/:id', op: templates.get, input: none },
  { method: 'put', path: '/templates/:id', op: templates.update },
  { method: 'delete', path: '/templates/:id', op: templates.remove, input: none },

  { method: 'post', path: '/campaigns', op: campaigns.create, status: 201 },
  { method: 'get', path: '/campaigns', op: campaigns.list, list: true, input: none, view: listedCampaign },
  { method: 'post', path: '/campaigns/preview', op: previewMessage, errors: [404] },
  { method: 'get', path: '/campaigns/:id', op: campaigns.get, input: none, view: campaignDetail },
  { method: 'put', path: '/campaigns/:id', op: campaigns.update },
  { method: 'post', path: '/campaigns/:id/launch', op: campaigns.launch, input: none, view: launchedCampaign },
  { method: 'post', path: '/campaigns/:id/cancel', op: campaigns.cancel, input: none, view: canceledCampaign },
  { method: 'post', path: '/campaigns/:id/preview', op: campaignDryRun.preview },
  { method: 'get', path: '/campaigns/:id/estimate', op: campaignDryRun.estimate, input: none },
  { method: 'get', path: '/campaigns/:id/resend-failed', op: campaignResend.estimate, input: none },
  { method: 'post', path: '/campaigns/:id/resend-failed', op: campaignResend.resend, status: 201, input: none },
  { method: 'post', path: '/campaigns/:id/test', op: campaignDryRun.test },
  { method: 'get', path: '/campaigns/:id/progress', op: campaigns.progressOf, input: none },
  { method: 'get', path: '/campaigns/:id/runs', op: campaigns.runs, list: true, input: none },
  { method: 'get', path: '/campaigns/:id/pending-sends', op: campaigns.pendingSends, list: true, input: none, view: pendingSendView },
  { method: 'get', path: '/campaigns/:id/funnel', op: stats.funnel, input: none },

  { method: 'post', path: '/notifications/send', op: notifications.send },
  { method: 'post', path: '/notifications/send-to-all', op: notifications.sendToAll, stream: 'answer', view: jsonArray },
  { method: 'post', path: '/notifications/estimate', op: notifications.estimate },
  { method: 'post', path: '/webhooks', op: webhooks.create, status: 201 },
  { method: 'get', path: '/webhooks', op: webhooks.list, list: true, input: none },
  { method: 'get', path: '/webhooks/:id', op: webhooks.get, input: none },
  { method: 'put', path: '/webhooks/:id', op: webhooks.update },
  { method: 'delete', path: '/webhooks/:id', op: webhooks.remove, input: none },
  { method: 'post', path: '/webhooks/:id/rotate-secret', op: webhooks.rotateSecret, input: none },
  { method: 'post', path: '/webhooks/:id/test', op: webhooks.sendTest, status: 202 },
  { method: 'get', path: '/webhooks/:id/attempts', op: webhooks.endpointAttempts, list: true, input: none },
  { method: 'get', path: '/webhook-events', op: webhooks.events, list: true, input: none },
  { method: 'get', path: '/webhook-events/:id', op: webhooks.event, input: none },
  { method: 'get', path: '/webhook-events/:id/attempts', op: webhooks.eventAttempts, list: true, input: none },
  { method: 'post', path: '/webhook-events/:id/resend', op: webhooks.resend, status: 202 },

  { method: 'get', path: '/message-logs', op: messageLogs.list, list: true, input: queryFilters },
  { method: 'get', path: '/message-logs/stats', op: messageLogs.stats, input: queryFilters },
  { method: 'get', path: '/stats/daily', op: stats.daily, input: queryFilters },
  { method: 'get', path: '/message-logs/:id', op: messageLogs.get, input: none },
  { method: 'get', path: '/message-logs/:id/events', op: messageLogs.events, input: none },
  { method: 'get', path: '/sandbox/outbox', op: sandbox.list, list: true, input: queryFilters },
  { method: 'post', path: '/sandbox/events', op: sandboxEvents.simulateEvent },

  { method: 'post', path: '/api-keys', op: apiKeys.create, status: 201 },
  { method: 'get', path: '/api-keys', op: apiKeys.list, list: true, input: none },
  { method: 'put', path: '/api-keys/:id/revoke', op: apiKeys.revoke, input: none },
  { method: 'delete', path: '/api-keys/:id', op: apiKeys.remove, input: none },

  { method: 'get', path: '/audit-log', op: auditLog.list, list: true, input: queryFilters },
];
