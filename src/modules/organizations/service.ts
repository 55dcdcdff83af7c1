import { z } from 'zod';
import type { Knex } from 'knex';
import type { AuthedContext, Context } from '../../context.js';
import type { Config } from '../../config/config.js';
import { nowMs } from '../../db/database.js';
import { isEmailAddress } from '../../lib/addresses.js';
import { notFound } from '../../lib/errors.js';
import { CALLER_CHANNEL } from '../auth/caller-cache.js';
import { loginState } from '../two-factor/store.js';
import * as v from '../../lib/validation.js';
import { isPrivateHost } from '../../lib/hosts.js';
import { timeZone } from '../../lib/time-zones.js';
import { operation } from '../../operation.js';
import { EMAIL_SECURE_MODES, type StoredCredentials } from '../../delivery/credentials.js';
import { legacyCredentials, writeLegacyCredentials } from '../../delivery/providers.js';
import { isCertificateBundle, showCredentials } from './credentials.js';
import * as credits from '../../delivery/credits.js';
import { toSummary, type OrganizationDto, type OrganizationRow } from './dto.js';
import { organizationRows } from './queries.js';
import { record } from '../audit/record.js';
import { closingOf } from '../closure/service.js';
import { sendingHours } from '../../lib/sending-hours.js';
import { frequencyCapsInput, storedCaps } from '../campaigns/caps.js';
import { isDeepStrictEqual } from 'node:util';

/**
 * The organization as `role` may see it: the SMS report URL, a credential of its own, is an admin's
 * alone. Its credentials are each channel's first provider of the original type (`delivery/providers.ts`).
 */
async function toOrganizationDto(ctx: AuthedContext, row: OrganizationRow, db: Knex = ctx.db): Promise<OrganizationDto> {
  const config: Config = ctx.config;
  const role = ctx.caller.role;
  return {
    ...toSummary(row),
    deliveryMode: deliveryModeOf(ctx),
    emailFromName: row.email_from_name,
    tracking: row.tracking,
    requireTwoFactor: row.require_two_factor,
    retentionDays: row.retention_days,
    timezone: row.time_zone,
    sendingHours: row.sending_hours,
    frequencyCaps: row.frequency_caps,
    closure: await closingOf(db, row.id),
    credentials: showCredentials(config, await legacyCredentials(db, config, row.id), row.id, role),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** How the organization's messages are delivered: the platform's mode (`DELIVERY_MODE`), which the console shows on every page. */
export const deliveryModeOf = (ctx: Pick<Context, 'delivery'>): OrganizationDto['deliveryMode'] => ctx.delivery.mode;

export const current = operation({
  access: { role: 'any', apiKeys: false },
  async run(ctx) {
    const [row] = await organizationRows(ctx.db, [ctx.caller.orgId]);
    if (!row) throw notFound();
    return toOrganizationDto(ctx, row);
  },
});

const text = (max: number) => z.string().trim().min(1).max(max);

/** `587` or `"587"`: self-hosters write ports both ways; stored as a string. */
const port = z
  .union([z.number(), z.string()], { error: 'must be a port number' })
  .transform((p) => String(p).trim())
  .pipe(z.string().regex(/^\d{1,5}$/, 'must be a port number').refine((p) => Number(p) >= 1 && Number(p) <= 65535, 'must be between 1 and 65535'));

/** A channel's rate in messages a second (`50`, `0.5`, `"50"`); null removes it (the default applies again). */
const rate = z
  .union([z.number(), z.string().trim().regex(/^\d+(\.\d+)?$/, 'must be messages a second').transform(Number)], { error: 'must be messages a second' })
  .pipe(z.number().min(0.1, 'must be at least 0.1 messages a second').max(10_000, 'must be at most 10000 messages a second'))
  .nullable();

const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], { error: 'must be true or false' });

/** Credentials an organization may take away again by sending the empty string. */
const REMOVABLE = ['email_user', 'email_pass', 'email_tls_ca'] as const;
/** Rates an organization takes away again by sending null. */
const RATES = ['sms_rate', 'email_rate', 'whatsapp_rate'] as const;

export const updateCredentials = operation({
  access: { role: 'admin', apiKeys: false },
  input: z.strictObject({
    sms_apiKey: text(500).optional(),
    sms_partnerID: text(100).optional(),
    sms_shortCode: text(100).optional(),
    email_host: z.string().trim().min(1).max(253).regex(/^[A-Za-z0-9.:\-\[\]]+$/, 'must be a host name or address').optional(),
    email_port: port.optional(),
    // For these, the empty string removes the field (a relay without AUTH needs no user).
    email_user: z.string().trim().max(254).optional(),
    email_pass: z.string().trim().max(500).optional(),
    // A domain without a dot is refused in `run` when the platform blocks private hosts.
    email_from: z.string().trim().max(254).refine((a) => isEmailAddress(a, { dotlessDomains: true }), 'must be a valid email').optional(),
    email_secure: z.enum(EMAIL_SECURE_MODES).optional(),
    email_tls_verify: flag.optional(),
    email_tls_ca: z
      .string()
      .trim()
      .max(65_536)
      .refine((pem) => pem === '' || isCertificateBundle(pem), 'must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)')
      .optional(),
    whatsapp_access_token: text(2000).optional(),
    whatsapp_phone_number_id: z.string().trim().regex(/^\d{1,30}$/, 'must be digits').optional(),
    whatsapp_app_secret: text(500).optional(),
    whatsapp_verify_token: text(500).optional(),
    sms_rate: rate.optional(),
    email_rate: rate.optional(),
    whatsapp_rate: rate.optional(),
  }),
  // Where the platform blocks private hosts (BLOCK_PRIVATE_HOSTS), named with the input's other problems.
  async check(ctx, input) {
    if (!ctx.config.blockPrivateHosts) return [];
    const host = input.email_host && (await isPrivateHost(input.email_host.replace(/^\[|\]$/g, '')))
      ? [{ field: 'email_host', message: 'email_host must not be a loopback, private or link-local address' }]
      : [];
    return [...host, ...v.dotlessRefused('email_from', input.email_from, true)];
  },
  async run(ctx, input) {
    const row = await ctx.db.transaction(async (trx) => {
      // The organization's row locked: one change of its credentials at a time.
      await trx('organizations').where({ id: ctx.caller.orgId }).forUpdate().first('id');
      const before = await legacyCredentials(trx, ctx.config, ctx.caller.orgId);
      const merged = { ...before, ...input } as StoredCredentials & Partial<Record<(typeof RATES)[number], number | null>>;
      for (const field of REMOVABLE) if (merged[field] === '') delete merged[field];
      for (const field of RATES) if (merged[field] === null) delete merged[field];
      await recordCredentialsChange(trx, ctx, before, merged);
      await writeLegacyCredentials(trx, ctx.config, ctx.caller.orgId, before, merged);
      return writeOrganization(ctx, trx, {});
    });
    return toOrganizationDto(ctx, row);
  },
});

/** The audit entry of a change of credentials: the names of the fields set, changed or removed, never a value. */
async function recordCredentialsChange(trx: Knex.Transaction, ctx: AuthedContext, before: StoredCredentials, after: StoredCredentials) {
  const names = new Set([...Object.keys(before), ...Object.keys(after)] as (keyof StoredCredentials)[]);
  const fields = [...names].filter((k) => before[k] !== after[k]).sort();
  if (fields.length) await record(trx, ctx, { action: 'credentials.updated', resourceType: 'organization', resourceId: ctx.caller.orgId, details: { fields } });
}

/** The organization's settings: each one's API name and its column of `organizations`. */
const SETTINGS = {
  tracking: 'tracking',
  requireTwoFactor: 'require_two_factor',
  retentionDays: 'retention_days',
  timezone: 'time_zone',
  sendingHours: 'sending_hours',
  frequencyCaps: 'frequency_caps',
} as const;

/**
 * The audit entry of a change of the organization's settings (columns of `organizations`), with
 * each setting that changes from and to (by its API name); read under the row's lock, before the write.
 */
async function recordSettingsChange(trx: Knex.Transaction, ctx: AuthedContext, changes: Record<string, unknown>) {
  const columns = Object.keys(changes);
  if (!columns.length) return;
  const current = (await trx('organizations').where({ id: ctx.caller.orgId }).forUpdate().first(columns)) as Record<string, unknown>;
  const changed = columns.filter((c) => !isDeepStrictEqual(current[c], changes[c]));
  if (!changed.length) return;
  const apiName = Object.fromEntries(Object.entries(SETTINGS).map(([name, column]) => [column, name]));
  const details = { changes: Object.fromEntries(changed.map((c) => [apiName[c], { from: current[c], to: changes[c] }])) };
  await record(trx, ctx, { action: 'organization.updated', resourceType: 'organization', resourceId: ctx.caller.orgId, details });
}

/** Writes the caller's organization's `changes` (and its `updated_at`) and answers the row as the API shows it, with its credits. */
async function writeOrganization(
  ctx: AuthedContext,
  trx: Knex.Transaction,
  changes: Partial<Pick<OrganizationRow, 'tracking' | 'require_two_factor' | 'retention_days' | 'time_zone' | 'sending_hours' | 'frequency_caps'>>,
): Promise<OrganizationRow> {
  const [updated] = await trx('organizations')
    .where({ id: ctx.caller.orgId })
    .update({ ...changes, updated_at: nowMs(ctx.db) })
    .returning('*');
  return { ...updated, credits: await credits.balance(trx, ctx.caller.orgId) } as OrganizationRow;
}

/** `PUT /organizations/current`: the organization's settings (`tracking`, `requireTwoFactor`, `retentionDays`, `timezone`, `sendingHours`, `frequencyCaps`). Admins, by JWT. */
export const updateOrganization = operation({
  access: { role: 'admin', apiKeys: false },
  input: z.strictObject({
    // Whether ad hoc sends' emails carry the open pixel and rewritten links (campaigns always do).
    tracking: flag.optional(),
    // Whether every member must use two-factor authentication (see src/modules/two-factor).
    requireTwoFactor: flag.optional(),
    // How long logs and what hangs off them are kept (see src/modules/retention).
    retentionDays: z.number().int().min(30).max(3650).optional(),
    // The zone of its contacts that have none of their own (see lib/time-zones.ts).
    timezone: timeZone().optional(),
    // When campaigns may reach a recipient, in their zone (see lib/sending-hours.ts).
    sendingHours: sendingHours().optional(),
    // How many campaign messages one address may get per channel and period (see campaigns/caps.ts).
    frequencyCaps: frequencyCapsInput().transform(storedCaps).optional(),
  }),
  // Requiring it without having it would leave the admin with a session that may only enrol.
  async check(ctx, input) {
    if (!input.requireTwoFactor || (await loginState(ctx.db, ctx.caller.userId!, ctx.caller.orgId)).enabled) return [];
    return [{ field: 'requireTwoFactor', message: 'requireTwoFactor can be turned on once your own account uses two-factor authentication' }];
  },
  async run(ctx, input) {
    const changes = Object.fromEntries(
      Object.entries(SETTINGS).flatMap(([name, column]) => (input[name as keyof typeof input] === undefined ? [] : [[column, input[name as keyof typeof input]]])),
    );
    const row = await ctx.db.transaction(async (trx) => {
      await recordSettingsChange(trx, ctx, changes);
      const written = await writeOrganization(ctx, trx, changes);
      // Authentication reads the requirement with each user: every process forgets its users on commit.
      if (input.requireTwoFactor !== undefined) await trx.raw("SELECT pg_notify(?, '')", [CALLER_CHANNEL]);
      return written;
    });
    if (input.requireTwoFactor !== undefined) ctx.callers.clear();
    return toOrganizationDto(ctx, row);
  },
});
