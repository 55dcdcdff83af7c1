/**
 * How the audit log's actions read in the console: each action's words, grouped by the resource
 * they act on. The filter offers a whole group (its prefix, `user.`) or one action.
 */
export const AUDIT_ACTION_GROUPS: { label: string; prefix: string; actions: Record<string, string> }[] = [
  {
    label: 'Users',
    prefix: 'user.',
    actions: {
      'user.created': 'User added',
      'user.updated': 'User details changed',
      'user.role_changed': 'Role changed',
      'user.deactivated': 'User deactivated',
      'user.reactivated': 'User reactivated',
      'user.deleted': 'User deleted',
      'user.password_reset': 'Password reset by an admin',
      'user.password_changed': 'Own password changed',
      'user.two_factor_reset': 'Two-factor authentication reset by an admin',
    },
  },
  {
    label: 'Invitations',
    prefix: 'invitation.',
    actions: { 'invitation.created': 'Member invited', 'invitation.revoked': 'Invitation revoked', 'invitation.accepted': 'Invitation accepted' },
  },
  {
    label: 'API keys',
    prefix: 'api_key.',
    actions: { 'api_key.created': 'API key created', 'api_key.revoked': 'API key revoked', 'api_key.deleted': 'API key deleted' },
  },
  {
    label: 'Organization',
    prefix: 'organization.',
    actions: { 'organization.updated': 'Settings changed', 'organization.closing_requested': 'Closing requested', 'organization.closing_cancelled': 'Closing cancelled' },
  },
  {
    label: 'Channel credentials',
    prefix: 'credentials.',
    actions: { 'credentials.updated': 'Credentials changed' },
  },
  {
    label: 'Providers',
    prefix: 'provider.',
    actions: {
      'provider.created': 'Provider added',
      'provider.updated': 'Provider changed',
      'provider.deleted': 'Provider deleted',
      'provider.reordered': 'Providers reordered',
      'provider.tested': 'Provider test message sent',
    },
  },
  {
    label: 'Suppressions',
    prefix: 'suppression.',
    actions: {
      'suppression.added': 'Address suppressed by hand',
      'suppression.removed': 'Address removed from suppressions',
      'suppression.imported': 'Suppressions imported',
    },
  },
  {
    label: 'DKIM keys',
    prefix: 'dkim.',
    actions: {
      'dkim.created': 'DKIM key created',
      'dkim.deleted': 'DKIM key deleted',
    },
  },
  {
    label: 'Webhooks',
    prefix: 'webhook.',
    actions: {
      'webhook.created': 'Webhook endpoint added',
      'webhook.updated': 'Webhook endpoint changed',
      'webhook.deleted': 'Webhook endpoint deleted',
      'webhook.secret_rotated': 'Webhook secret rotated',
      'webhook.test_sent': 'Webhook test sent',
      'webhook.event_resent': 'Webhook event re-sent',
    },
  },
  {
    label: 'Campaigns',
    prefix: 'campaign.',
    actions: { 'campaign.launched': 'Campaign launched', 'campaign.launch_reverted': 'Campaign launch undone (quota)', 'campaign.canceled': 'Campaign canceled' },
  },
  {
    label: 'Contact imports',
    prefix: 'contact_import.',
    actions: { 'contact_import.started': 'Import started', 'contact_import.canceled': 'Import canceled' },
  },
  {
    label: 'Consent',
    prefix: 'contact.',
    actions: {
      'contact.subscriptions_changed': 'Contact consent changed',
      'contact.bulk_unsubscribed': 'Contacts unsubscribed in bulk',
      'contact.bulk_resubscribed': 'Contacts resubscribed in bulk',
      'contact.erased': 'Person erased',
    },
  },
];

const LABELS: Record<string, string> = Object.assign({}, ...AUDIT_ACTION_GROUPS.map((g) => g.actions));

/** An action's words; an action this console does not know yet reads as itself. */
export const actionLabel = (action: string) => LABELS[action] ?? action;

/** The filter's choices: any action, each group (its prefix), each action. */
export const ACTION_OPTIONS = [
  { value: '', label: 'Any action' },
  ...AUDIT_ACTION_GROUPS.map((g) => ({
    group: g.label,
    items: [{ value: g.prefix, label: `Every ${g.label.toLowerCase()} action` }, ...Object.entries(g.actions).map(([value, label]) => ({ value, label }))],
  })),
];

/** Whether a value of the URL is one of the filter's choices. */
export const isActionOption = (value: string | null): value is string =>
  !!value && AUDIT_ACTION_GROUPS.some((g) => g.prefix === value || value in g.actions);

const RESOURCE_LABELS: Record<string, string> = {
  user: 'User',
  invitation: 'Invitation',
  api_key: 'API key',
  organization: 'Organization',
  webhook: 'Webhook endpoint',
  provider: 'Provider',
  campaign: 'Campaign',
  contact_import: 'Contact import',
  contact: 'Contact',
  suppression: 'Suppression',
};

export const resourceLabel = (type: string) => RESOURCE_LABELS[type] ?? type;
