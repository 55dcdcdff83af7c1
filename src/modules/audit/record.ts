import type { Knex } from 'knex';
import type { AuthedContext } from '../../context.js';

/**
 * The audit log's one writer (platform.md: "an audit log of admin actions"). Every admin action
 * calls `record` inside the transaction of its change, so an entry exists exactly when the change
 * committed: an action refused (400, 409, ...) or rolled back leaves none, and reads never write one.
 * An action that changes nothing (revoking a revoked key, deactivating an inactive user) is not
 * recorded either. Entries are never changed or removed (see the migration's trigger).
 */

/** Every action the log knows, `<resource>.<what happened>`; the list's `action` filter takes one of them or a prefix of some. */
export const AUDIT_ACTIONS = [
  'user.created',
  'user.updated',
  'user.role_changed',
  'user.deactivated',
  'user.reactivated',
  'user.deleted',
  'user.password_reset',
  'user.password_changed',
  'user.two_factor_reset',
  'invitation.created',
  'invitation.revoked',
  'invitation.accepted',
  'api_key.created',
  'api_key.revoked',
  'api_key.deleted',
  'credentials.updated',
  'organization.updated',
  'organization.closing_requested',
  'organization.closing_cancelled',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.test_sent',
  'webhook.event_resent',
  'campaign.launched',
  'campaign.launch_reverted',
  'campaign.canceled',
  'contact_import.started',
  'contact_import.canceled',
  'contact.subscriptions_changed',
  'contact.bulk_unsubscribed',
  'contact.bulk_resubscribed',
  'contact.erased',
  'campaign.resent',
  'provider.created',
  'provider.updated',
  'provider.deleted',
  'provider.reordered',
  'provider.tested',
  'dkim.created',
  'dkim.deleted',
  'suppression.added',
  'suppression.removed',
  'suppression.imported',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditResourceType = 'user' | 'invitation' | 'api_key' | 'organization' | 'webhook' | 'campaign' | 'contact_import' | 'contact' | 'provider' | 'suppression' | 'dkim_key';

export interface AuditEntryInput {
  action: AuditAction;
  resourceType: AuditResourceType;
  /** The resource acted on; null for an action on many (a bulk consent change). */
  resourceId: string | null;
  /** A few words of what changed, never a secret value (credentials name the fields changed, not their values). */
  details?: Record<string, unknown>;
}

/** Who acted and from where: the request's caller, client address and id. */
export type AuditOrigin = Pick<AuthedContext, 'caller' | 'clientIp' | 'requestId'>;

/** How the actor is named in the entry, as it is now: a user's email, a key's name and visible prefix. */
async function actorLabel(trx: Knex.Transaction, orgId: string, type: 'user' | 'api_key', id: string): Promise<string> {
  if (type === 'user') {
    const user = (await trx('users').where({ id, organization_id: orgId }).first('email')) as { email: string } | undefined;
    return user?.email ?? id;
  }
  const key = (await trx('api_keys').where({ id, organization_id: orgId }).first('name', 'prefix')) as { name: string; prefix: string } | undefined;
  return key ? `${key.name} (${key.prefix})` : id;
}

/** Writes one entry of the caller's organization's audit log, in `trx`: the transaction of the action it records. */
export async function record(trx: Knex.Transaction, origin: AuditOrigin, entry: AuditEntryInput): Promise<void> {
  const { caller } = origin;
  const [type, actorId] = caller.via === 'apiKey' ? (['api_key', caller.apiKeyId] as const) : (['user', caller.userId] as const);
  if (!actorId) throw new Error('an audited action needs a user or an API key behind it');
  await trx('audit_log').insert({
    organization_id: caller.orgId,
    actor_type: type,
    actor_id: actorId,
    actor_label: await actorLabel(trx, caller.orgId, type, actorId),
    action: entry.action,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    details: JSON.stringify(entry.details ?? {}),
    ip: origin.clientIp,
    request_id: origin.requestId,
  });
}

/** The fields of `patch` whose value differs from `current`'s (undefined in `patch`: not changed). */
export function changedFields<T extends object>(current: T, patch: Partial<T>): (keyof T & string)[] {
  return (Object.keys(patch) as (keyof T & string)[]).filter((k) => patch[k] !== undefined && patch[k] !== current[k]);
}

/** A URL as an entry shows it: scheme, host and path, without credentials or a query that may hold a token. */
export const safeUrl = (raw: string): string => {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '';
  }
};
