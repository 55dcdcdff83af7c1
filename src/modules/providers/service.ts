import type { Knex } from 'knex';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import { tenant } from '../../db/tenant.js';
import { EMAIL_SECURE_MODES } from '../../delivery/credentials.js';
import { accountOf, PROVIDER_COLUMNS, PROVIDER_TYPES, providerType, readSecrets, sealSecrets, missingFields, type ProviderRow, type ProviderType } from '../../delivery/providers.js';
import { providerReportUrl } from '../../delivery/report-urls.js';
import { CHANNELS, type Channel, type DeliveryResult, type ProviderField } from '../../delivery/types.js';
import { badRequest, validationFailed, type FieldProblem } from '../../lib/errors.js';
import { isPrivateHost } from '../../lib/hosts.js';
import { operation } from '../../operation.js';
import { toE164 } from '../../lib/phone.js';
import { isEmailAddress } from '../../lib/addresses.js';
import { record } from '../audit/record.js';
import { isCertificateBundle } from '../organizations/credentials.js';

/**
 * Providers (the accounts each channel is sent through, in order): admins register them, order
 * them, switch them off and on, and send a test message through one. Secrets are write-only
 * (shown as "set"). The v1.0 credentials are a view of each channel's first provider of its
 * original type (`delivery/providers.ts`). Sending uses the enabled ones in order, each next one
 * taking what the one before could not carry (`delivery/registry.ts`).
 */

const ADMIN = { role: 'admin', apiKeys: false } as const;
const TABLE = 'providers';
/** Providers per channel an organization may keep. */
const MAX_PER_CHANNEL = 10;

/** The types that reach a host given in their settings: the host must not be private where the platform blocks that. */
const HOST_FIELDS: Record<string, string> = { smtp: 'host', smpp: 'host', africastalking: 'apiUrl', twilio: 'apiUrl' };

const typeNames = PROVIDER_TYPES.map((t) => t.type) as [string, ...string[]];
const value = z.union([z.string().max(65_536), z.number().finite(), z.boolean(), z.null()]);
const values = z.record(z.string().max(100), value).refine((r) => Object.keys(r).length <= 50, 'at most 50 fields');
const rate = z.number().min(0.1, 'must be at least 0.1').max(10_000, 'must be at most 10000').nullable();
const name = z.string().trim().min(1, 'must not be empty').max(100);

const dto = (ctx: AuthedContext, row: ProviderRow) => {
  const type = providerType(row.type);
  const secrets = readSecrets(ctx.config, row);
  return {
    _id: row.id,
    channel: row.channel,
    type: row.type,
    name: row.name,
    position: row.position,
    enabled: row.enabled,
    rate: row.rate,
    settings: row.settings,
    // Write-only: which are set, never their values.
    secrets: Object.fromEntries((type?.fields ?? []).filter((f) => f.secret).map((f) => [f.name, secrets[f.name] ? 'set' : null])),
    missing: missingFields(accountOf(ctx.config, row)),
    // Where the provider's delivery reports go (the types that push them to a URL Herald shows).
    reportUrl: row.type === 'africastalking' || row.type === 'twilio' ? providerReportUrl(ctx.config, row.organization_id, row.id) : null,
    health: {
      circuit: row.circuit,
      circuitChangedAt: row.circuit_changed_at?.toISOString() ?? null,
      lastFailureAt: row.last_failure_at?.toISOString() ?? null,
      lastError: row.last_error,
    },
    organization: row.organization_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
};
export type ProviderDto = ReturnType<typeof dto>;

/** A field's value checked against its type; the problem, or null. */
function fieldProblem(field: ProviderField, given: string | number | boolean): string | null {
  if (field.kind === 'integer') return Number.isInteger(given) && (given as number) >= 0 && (given as number) <= 1_000_000 ? null : 'must be a whole number';
  if (field.kind === 'boolean') return typeof given === 'boolean' ? null : 'must be true or false';
  if (typeof given !== 'string') return 'must be text';
  if (!given.trim()) return 'must not be empty (null removes it)';
  if (given.length > (field.name === 'tlsCa' ? 65_536 : 4_000)) return 'is too long';
  return null;
}

/** Type-specific rules beyond each field's own kind. */
function typeProblems(type: ProviderType, settings: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const bad = (field: string, message: string) => problems.push({ field: `settings.${field}`, message: `settings.${field} ${message}` });
  if (type.type === 'smtp') {
    if (settings.port !== undefined && !/^\d{1,5}$/.test(String(settings.port))) bad('port', 'must be a port number');
    if (settings.secure !== undefined && !(EMAIL_SECURE_MODES as readonly unknown[]).includes(settings.secure)) bad('secure', `must be one of ${EMAIL_SECURE_MODES.join(', ')}`);
    if (settings.from !== undefined && !isEmailAddress(String(settings.from), { dotlessDomains: true })) bad('from', 'must be a valid email');
    if (typeof settings.tlsCa === 'string' && !isCertificateBundle(settings.tlsCa)) bad('tlsCa', 'must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)');
  }
  if (type.type === 'whatsapp-cloud' && settings.phoneNumberId !== undefined && !/^\d{1,30}$/.test(String(settings.phoneNumberId))) bad('phoneNumberId', 'must be digits');
  if (type.type === 'smpp' && settings.port !== undefined && !(Number(settings.port) >= 1 && Number(settings.port) <= 65_535)) bad('port', 'must be a port number');
  if ((type.type === 'africastalking' || type.type === 'twilio') && settings.apiUrl !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(String(settings.apiUrl))) bad('apiUrl', 'must be an http(s) URL of a host, without a path');
  if (type.type === 'twilio' && settings.from !== undefined && String(settings.from).startsWith('+') && !toE164(String(settings.from))) bad('from', 'must be an E.164 number or an alphanumeric sender id');
  return problems;
}

/**
 * Merges `changes` (a field's null removes it) into a provider's settings and secrets and checks
 * the result against its type: unknown fields, wrong kinds, what the type requires.
 */
function merged(
  type: ProviderType,
  before: { settings: Record<string, string | number | boolean>; secrets: Record<string, string> },
  changes: { settings?: Record<string, unknown>; secrets?: Record<string, unknown> },
): { settings: Record<string, string | number | boolean>; secrets: Record<string, string>; problems: FieldProblem[] } {
  const settings = { ...before.settings };
  const secrets = { ...before.secrets };
  const problems: FieldProblem[] = [];
  const fields = new Map(type.fields.map((f) => [f.name, f]));
  for (const [part, target] of [['settings', settings], ['secrets', secrets]] as const) {
    for (const [key, given] of Object.entries(changes[part] ?? {})) {
      const field = fields.get(key);
      const path = `${part}.${key}`;
      if (!field || (part === 'secrets') !== !!field.secret) {
        const own = type.fields.filter((f) => (part === 'secrets') === !!f.secret).map((f) => f.name);
        problems.push({ field: path, message: `${path} is not a ${part === 'secrets' ? 'secret' : 'setting'} of ${type.type}${own.length ? ` (${own.join(', ')})` : ''}` });
        continue;
      }
      if (given === null || (part === 'secrets' && given === '')) {
        delete (target as Record<string, unknown>)[key];
        continue;
      }
      const problem = fieldProblem(field, given as string | number | boolean);
      if (problem) problems.push({ field: path, message: `${path} ${problem}` });
      else (target as Record<string, unknown>)[key] = typeof given === 'string' ? given.trim() : given;
    }
  }
  if (!problems.length) problems.push(...typeProblems(type, settings));
  if (!problems.length) {
    const missing = missingFields({ type: type.type, settings, secrets });
    for (const m of missing) {
      const secret = fields.get(m)!.secret;
      problems.push({ field: `${secret ? 'secrets' : 'settings'}.${m}`, message: `${secret ? 'secrets' : 'settings'}.${m} is required for ${type.type}` });
    }
  }
  return { settings, secrets, problems };
}

async function hostProblems(ctx: AuthedContext, type: ProviderType, settings: Record<string, unknown>): Promise<FieldProblem[]> {
  const field = HOST_FIELDS[type.type];
  const given = field ? settings[field] : undefined;
  if (!ctx.config.blockPrivateHosts || typeof given !== 'string') return [];
  const host = field === 'apiUrl' ? new URL(given).hostname : given;
  return (await isPrivateHost(host.replace(/^\[|\]$/g, ''))) ? [{ field: `settings.${field}`, message: `settings.${field} must not be a loopback, private or link-local address` }] : [];
}

const fail = (problems: FieldProblem[]) => {
  if (problems.length) throw validationFailed(problems);
};

/** The names of what an update changed (secrets by name only). */
function changedNames(before: ProviderRow, after: ProviderRow, beforeSecrets: Record<string, string>, afterSecrets: Record<string, string>): string[] {
  const names: string[] = [];
  for (const key of ['name', 'enabled', 'rate'] as const) if (before[key] !== after[key]) names.push(key);
  for (const key of new Set([...Object.keys(before.settings), ...Object.keys(after.settings)])) if (before.settings[key] !== after.settings[key]) names.push(`settings.${key}`);
  for (const key of new Set([...Object.keys(beforeSecrets), ...Object.keys(afterSecrets)])) if (beforeSecrets[key] !== afterSecrets[key]) names.push(`secrets.${key}`);
  return names;
}

/** The provider types Herald speaks, with their fields: what the console's form is built from. */
export const types = operation({
  access: ADMIN,
  async run() {
    return PROVIDER_TYPES.map((t) => ({ type: t.type, channel: t.channel, label: t.label, defaultRate: t.defaultRate ?? null, fields: t.fields.map((f) => ({ kind: 'text', secret: false, required: false, ...f })) }));
  },
});

/** The organization's providers, each channel's in order (one channel's with `channel`). */
export const list = operation({
  access: ADMIN,
  input: z.strictObject({ channel: z.enum(CHANNELS as [Channel, ...Channel[]], { error: `must be one of ${CHANNELS.join(', ')}` }).optional() }),
  async run(ctx, input) {
    const query = tenant(ctx.db, ctx.caller.orgId).scoped(TABLE);
    if (input.channel) query.where('channel', input.channel);
    const rows = (await query.orderBy([{ column: 'channel' }, { column: 'position' }, { column: 'created_at' }]).select(PROVIDER_COLUMNS)) as ProviderRow[];
    return rows.map((row) => dto(ctx, row));
  },
});

export const get = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return dto(ctx, await tenant(ctx.db, ctx.caller.orgId).owned<ProviderRow>(TABLE, id, [...PROVIDER_COLUMNS]));
  },
});

export const create = operation({
  access: ADMIN,
  input: z.strictObject({
    type: z.enum(typeNames, { error: `must be one of ${typeNames.join(', ')}` }),
    channel: z.string().optional(),
    name: name.optional(),
    enabled: z.boolean().optional(),
    rate: rate.optional(),
    settings: values.optional(),
    secrets: values.optional(),
  }),
  async check(ctx, input) {
    const type = input.type ? providerType(input.type) : undefined;
    if (!type) return [];
    const problems: FieldProblem[] = [];
    if (input.channel !== undefined && input.channel !== type.channel) problems.push({ field: 'channel', message: `channel must be ${type.channel} for ${type.type}` });
    const result = merged(type, { settings: {}, secrets: {} }, { settings: input.settings, secrets: input.secrets });
    problems.push(...result.problems);
    if (!result.problems.length) problems.push(...(await hostProblems(ctx, type, result.settings)));
    return problems;
  },
  async run(ctx, input) {
    const type = providerType(input.type)!;
    const { settings, secrets } = merged(type, { settings: {}, secrets: {} }, input);
    const row = await ctx.db.transaction(async (trx) => {
      // The channel's rows locked: positions are handed out one at a time.
      const existing = (await tenant(trx, ctx.caller.orgId).scoped(TABLE).where('channel', type.channel).forUpdate().select('position')) as { position: number }[];
      if (existing.length >= MAX_PER_CHANNEL) throw badRequest(`An organization keeps at most ${MAX_PER_CHANNEL} ${type.channel} providers`);
      const [created] = (await trx(TABLE)
        .insert({
          organization_id: ctx.caller.orgId,
          channel: type.channel,
          type: type.type,
          name: input.name ?? type.label,
          position: Math.max(0, ...existing.map((e) => e.position)) + 1,
          enabled: input.enabled ?? true,
          rate: input.rate ?? null,
          settings: JSON.stringify(settings),
          secrets: sealSecrets(ctx.config, secrets),
        })
        .returning(PROVIDER_COLUMNS)) as ProviderRow[];
      await record(trx, ctx, { action: 'provider.created', resourceType: 'provider', resourceId: created!.id, details: { type: type.type, channel: type.channel, name: created!.name } });
      return created!;
    });
    return dto(ctx, row);
  },
});

export const update = operation({
  access: ADMIN,
  input: z.strictObject({ name: name.optional(), enabled: z.boolean().optional(), rate: rate.optional(), settings: values.optional(), secrets: values.optional() }),
  async run(ctx, input, { id }: { id: string }) {
    const row = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const before = await t.owned<ProviderRow>(TABLE, id, [...PROVIDER_COLUMNS], { forUpdate: true });
      const type = providerType(before.type)!;
      const beforeSecrets = readSecrets(ctx.config, before);
      const result = merged(type, { settings: before.settings, secrets: beforeSecrets }, input);
      fail(result.problems);
      fail(await hostProblems(ctx, type, result.settings));
      const [updated] = (await t
        .scoped(TABLE)
        .where(`${TABLE}.id`, id)
        .update({
          ...(input.name !== undefined && { name: input.name }),
          ...(input.enabled !== undefined && { enabled: input.enabled }),
          ...(input.rate !== undefined && { rate: input.rate }),
          settings: JSON.stringify(result.settings),
          secrets: sealSecrets(ctx.config, result.secrets),
          // A changed provider is another provider as far as its failures go: its circuit starts closed.
          ...((input.settings !== undefined || input.secrets !== undefined || input.enabled !== undefined) && { circuit: 'closed', circuit_changed_at: null }),
          updated_at: nowMs(trx),
        })
        .returning(PROVIDER_COLUMNS)) as ProviderRow[];
      const fields = changedNames(before, updated!, beforeSecrets, result.secrets);
      if (fields.length) await record(trx, ctx, { action: 'provider.updated', resourceType: 'provider', resourceId: id, details: { type: type.type, name: updated!.name, fields } });
      return updated!;
    });
    return dto(ctx, row);
  },
});

export const remove = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const row = await t.owned<ProviderRow>(TABLE, id, ['id', 'type', 'name', 'channel', 'position'], { forUpdate: true });
      await t.scoped(TABLE).where(`${TABLE}.id`, id).delete();
      // The channel's order closes the gap.
      await t.scoped(TABLE).where('channel', row.channel).where('position', '>', row.position).decrement('position', 1);
      await trx('send_pace').where({ organization_id: ctx.caller.orgId, channel: `${row.channel}:${id}` }).delete();
      await record(trx, ctx, { action: 'provider.deleted', resourceType: 'provider', resourceId: id, details: { type: row.type, name: row.name } });
    });
    return { message: 'Provider deleted successfully' };
  },
});

/** Puts a channel's providers in the order given (every one of them, once). */
export const reorder = operation({
  access: ADMIN,
  input: z.strictObject({
    channel: z.enum(CHANNELS as [Channel, ...Channel[]], { error: `must be one of ${CHANNELS.join(', ')}` }),
    ids: z.array(z.string()).min(1).max(MAX_PER_CHANNEL),
  }),
  async run(ctx, input) {
    const rows = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const current = (await t.scoped(TABLE).where('channel', input.channel).forUpdate().select('id')) as { id: string }[];
      const ids = input.ids.map((i) => i.toLowerCase());
      const known = new Set(current.map((c) => c.id));
      if (ids.length !== known.size || new Set(ids).size !== ids.length || !ids.every((i) => known.has(i))) {
        throw badRequest(`ids must list every ${input.channel} provider of the organization once (${current.length} of them)`);
      }
      await Promise.all(ids.map((pid, i) => t.scoped(TABLE).where(`${TABLE}.id`, pid).update({ position: i + 1, updated_at: nowMs(trx) })));
      await record(trx, ctx, { action: 'provider.reordered', resourceType: 'provider', resourceId: null, details: { channel: input.channel, ids } });
      return (await t.scoped(TABLE).where('channel', input.channel).orderBy('position').select(PROVIDER_COLUMNS)) as ProviderRow[];
    });
    return rows.map((row) => dto(ctx, row));
  },
});

/**
 * A test message through this provider alone (no failover), to an address of the caller's choice:
 * sent at once, not charged, not a message log; the answer says what the provider said.
 */
export const test = operation({
  access: ADMIN,
  input: z.strictObject({ to: z.string().trim().min(1).max(254), message: z.string().trim().min(1).max(1000).optional(), subject: z.string().trim().max(200).optional() }),
  async run(ctx, input, { id }: { id: string }) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<ProviderRow>(TABLE, id, [...PROVIDER_COLUMNS]);
    const recipient = row.channel === 'email' ? input.to.toLowerCase() : toE164(input.to);
    if (!recipient || (row.channel === 'email' && !isEmailAddress(recipient))) throw badRequest(row.channel === 'email' ? 'to must be a valid email' : 'to must be a valid phone number');
    const org = (await ctx.db('organizations').where({ id: ctx.caller.orgId }).first('name', 'email_from_name')) as { name: string; email_from_name: string | null };
    const channel = ctx.delivery.viaProvider(org, row);
    const body = input.message ?? `A test message from Herald through ${row.name}.`;
    const [result] = (await channel.send(
      { channel: row.channel, orgId: ctx.caller.orgId, fromName: channel.fromName, subject: input.subject ?? 'Herald provider test', body },
      [{ recipient, clientId: crypto.randomUUID() }],
      { lane: 'transactional' },
    )) as [DeliveryResult];
    await ctx.db.transaction((trx: Knex.Transaction) =>
      record(trx, ctx, { action: 'provider.tested', resourceType: 'provider', resourceId: id, details: { type: row.type, name: row.name, ok: result.ok } }),
    );
    return { ok: result.ok, error: result.error ?? null, providerMessageId: result.providerMessageId ?? null, network: result.network };
  },
});
