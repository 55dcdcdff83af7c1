import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AuthedContext } from '../../context.js';
import { nowMs } from '../../db/database.js';
import type { PageRequest } from '../../db/pagination.js';
import { paginateAs } from '../../db/pagination.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { EVENT_TYPES, eventData, wake, type SettledLogColumns } from '../../delivery/outbox.js';
import { encryptJson } from '../../lib/crypto.js';
import type { FieldProblem } from '../../lib/errors.js';
import { isPrivateHost } from '../../lib/hosts.js';
import { isUuid } from '../../lib/ids.js';
import { listOf, operation } from '../../operation.js';
import { endpointColumns, toAttemptDto, toEndpointDto, toEventDto, type AttemptRow, type DeliveryRow, type EndpointRow, type EventRow } from './dto.js';
import { insertTestEvent, resendDelivery } from './sql.js';
import { record, safeUrl } from '../audit/record.js';

/**
 * Outbound webhooks (platform.md): the endpoints an organization's admins register, and what was
 * sent to them. Events are written by the changes that cause them (`delivery/outbox.ts`) and
 * delivered by `delivery.ts`; this is the API of both.
 */

const ADMIN = { role: 'admin', apiKeys: true } as const;
const ENDPOINTS = 'webhook_endpoints';
/** How long a rotated secret keeps signing beside the new one. */
const OVERLAP_MS = 24 * 3600 * 1000;

const url = () => z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000);
const description = () => z.string().trim().max(500).nullable();
const eventTypes = () =>
  z
    .array(z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }))
    .max(EVENT_TYPES.length)
    .transform((types) => [...new Set(types)]);

/** A new secret as Standard Webhooks writes it: `whsec_` and 32 random bytes in base64. */
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** The problems of an endpoint URL beyond its form: `https` in production, no private address where those are blocked. */
async function urlProblems(ctx: AuthedContext, given: string | undefined): Promise<FieldProblem[]> {
  if (given === undefined) return [];
  const target = new URL(given);
  if (ctx.config.env === 'production' && target.protocol !== 'https:') return [{ field: 'url', message: 'url must be https' }];
  if (ctx.config.blockPrivateHosts && (await isPrivateHost(target.hostname.replace(/^\[|\]$/g, '')))) {
    return [{ field: 'url', message: 'url must not be a loopback, private or link-local address' }];
  }
  return [];
}

/** The API names of an endpoint's settings that an update changed. */
function endpointChanges(before: EndpointRow, after: EndpointRow): string[] {
  const changed: string[] = [];
  if (before.url !== after.url) changed.push('url');
  if (before.description !== after.description) changed.push('description');
  if (before.event_types.join() !== after.event_types.join()) changed.push('eventTypes');
  if (before.enabled !== after.enabled) changed.push('enabled');
  return changed;
}

export const list = listOf(ADMIN, ENDPOINTS, endpointColumns, toEndpointDto);

export const get = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toEndpointDto(await tenant(ctx.db, ctx.caller.orgId).owned<EndpointRow>(ENDPOINTS, id, endpointColumns));
  },
});

export const create = operation({
  access: ADMIN,
  input: z.strictObject({ url: url(), description: description().optional(), eventTypes: eventTypes().optional(), enabled: z.boolean().optional() }),
  check: (ctx, input, _params, failed) => (failed.has('url') ? Promise.resolve([]) : urlProblems(ctx, input.url)),
  async run(ctx, input) {
    const secret = newSecret();
    const row = await ctx.db.transaction(async (trx) => {
      const [created] = (await trx(ENDPOINTS)
        .insert({
          organization_id: ctx.caller.orgId,
          url: input.url,
          description: input.description ?? null,
          event_types: input.eventTypes ?? [],
          enabled: input.enabled ?? true,
          secret: encryptJson(ctx.config.credentialsKey, secret),
        })
        .returning(endpointColumns)) as EndpointRow[];
      const details = { url: safeUrl(created!.url), eventTypes: created!.event_types, enabled: created!.enabled };
      await record(trx, ctx, { action: 'webhook.created', resourceType: 'webhook', resourceId: created!.id, details });
      return created!;
    });
    return { ...toEndpointDto(row), secret };
  },
});

export const update = operation({
  access: ADMIN,
  input: z.strictObject({ url: url().optional(), description: description().optional(), eventTypes: eventTypes().optional(), enabled: z.boolean().optional() }),
  check: (ctx, input, _params: { id: string }, failed) => (failed.has('url') ? Promise.resolve([]) : urlProblems(ctx, input.url)),
  async run(ctx, input, { id }: { id: string }) {
    const row = await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const before = await t.owned<EndpointRow>(ENDPOINTS, id, endpointColumns, { forUpdate: true });
      const [updated] = (await t
        .scoped(ENDPOINTS)
        .where(`${ENDPOINTS}.id`, id)
        .update({
          ...(input.url !== undefined && { url: input.url }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.eventTypes !== undefined && { event_types: input.eventTypes }),
          // Enabling again starts afresh: the reason it was disabled and its failure streak are gone.
          ...(input.enabled !== undefined && { enabled: input.enabled }),
          ...(input.enabled === true && { disabled_reason: null, failing_since: null, failures_in_a_row: 0 }),
          updated_at: nowMs(ctx.db),
        })
        .returning(endpointColumns)) as EndpointRow[];
      const fields = endpointChanges(before, updated!);
      if (fields.length) await record(trx, ctx, { action: 'webhook.updated', resourceType: 'webhook', resourceId: id, details: { url: safeUrl(updated!.url), fields } });
      return updated!;
    });
    // Deliveries left pending while it was disabled go now.
    if (input.enabled === true) await wake(ctx.db, ctx.caller.orgId, [id]);
    return toEndpointDto(row);
  },
});

export const remove = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const endpoint = await t.owned<EndpointRow>(ENDPOINTS, id, endpointColumns);
      // Its deliveries go with it (their key); then its attempts, which have none, read after the
      // delete has waited for any recording of attempts in flight.
      await t.scoped(ENDPOINTS).where(`${ENDPOINTS}.id`, id).delete();
      await t.scoped('webhook_attempts').where('webhook_attempts.endpoint_id', id).delete();
      await record(trx, ctx, { action: 'webhook.deleted', resourceType: 'webhook', resourceId: id, details: { url: safeUrl(endpoint.url) } });
    });
    return { message: 'Webhook endpoint deleted successfully' };
  },
});

/** A new secret; the previous one keeps signing beside it for 24 hours, so receivers can switch without losing a delivery. */
export const rotateSecret = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const secret = newSecret();
    const expires = new Date(Date.now() + OVERLAP_MS);
    await ctx.db.transaction(async (trx) => {
      const t = tenant(trx, ctx.caller.orgId);
      const current = await t.owned<{ secret: Buffer; url: string }>(ENDPOINTS, id, ['secret', 'url'], { forUpdate: true });
      await t
        .scoped(ENDPOINTS)
        .where(`${ENDPOINTS}.id`, id)
        .update({ previous_secret: current.secret, previous_secret_expires_at: expires, secret: encryptJson(ctx.config.credentialsKey, secret), updated_at: nowMs(trx) });
      await record(trx, ctx, { action: 'webhook.secret_rotated', resourceType: 'webhook', resourceId: id, details: { url: safeUrl(current.url), previousSecretExpiresAt: expires.toISOString() } });
    });
    return { secret, previousSecretExpiresAt: expires.toISOString() };
  },
});

/** An example of an event type, marked `test`, delivered to this endpoint alone. */
export const sendTest = operation({
  access: ADMIN,
  input: z.strictObject({ eventType: z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }).optional() }),
  async run(ctx, input, { id }: { id: string }) {
    const endpoint = await tenant(ctx.db, ctx.caller.orgId).owned<EndpointRow>(ENDPOINTS, id, endpointColumns);
    const type = input.eventType ?? endpoint.event_types[0] ?? 'message.sent';
    const data = { test: true, message: `A test ${type} event from Herald`, endpointId: id };
    const row = await ctx.db.transaction(async (trx) => {
      const [inserted] = await run(trx, insertTestEvent, { orgId: ctx.caller.orgId, endpointId: id, type, data: JSON.stringify(data) });
      await record(trx, ctx, { action: 'webhook.test_sent', resourceType: 'webhook', resourceId: id, details: { url: safeUrl(endpoint.url), eventType: type, eventId: inserted!.event_id } });
      return inserted;
    });
    await wake(ctx.db, ctx.caller.orgId, [id]);
    return { eventId: row!.event_id };
  },
});

const attemptColumns = [
  'webhook_attempts.id',
  'webhook_attempts.endpoint_id',
  'webhook_attempts.event_id',
  'webhook_events.type',
  'webhook_attempts.attempt',
  'webhook_attempts.succeeded',
  'webhook_attempts.response_status',
  'webhook_attempts.duration_ms',
  'webhook_attempts.response',
  'webhook_attempts.error',
  'webhook_attempts.attempted_at',
  'webhook_attempts.created_at',
];

/** The attempts of the organization's deliveries matching `where` (an endpoint's, an event's), newest first. */
function attemptsWhere(ctx: AuthedContext, column: 'endpoint_id' | 'event_id', id: string, page: PageRequest) {
  const orgId = ctx.caller.orgId;
  const query = tenant(ctx.db, orgId)
    .scoped('webhook_attempts')
    .join('webhook_events', (j) => j.on('webhook_events.organization_id', 'webhook_attempts.organization_id').andOn('webhook_events.id', 'webhook_attempts.event_id'))
    .where('webhook_events.organization_id', orgId)
    .where(`webhook_attempts.${column}`, id)
    .select(attemptColumns);
  return paginateAs(query, 'webhook_attempts', page, (row: AttemptRow) => toAttemptDto(row));
}

export const endpointAttempts = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id, ...page }: { id: string } & PageRequest) {
    await tenant(ctx.db, ctx.caller.orgId).owned(ENDPOINTS, id, ['id']);
    return attemptsWhere(ctx, 'endpoint_id', id, page);
  },
});

const EVENTS = 'webhook_events';
const eventColumns = ['webhook_events.id', 'webhook_events.type', 'webhook_events.occurred_at', 'webhook_events.data', 'webhook_events.settled_log_id', 'webhook_events.created_at'];

/** The settled logs some message events name (`outbox.eventData`), by id. */
async function settledLogsOf(ctx: AuthedContext, events: EventRow[]): Promise<Map<string, SettledLogColumns>> {
  const ids = [...new Set(events.flatMap((e) => (e.settled_log_id ? [e.settled_log_id] : [])))];
  if (!ids.length) return new Map();
  const rows = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('message_logs')
    .whereIn('message_logs.id', ids)
    .select('id', 'recipients as settled_recipients', 'provider_ids as settled_provider_ids')) as ({ id: string } & SettledLogColumns)[];
  return new Map(rows.map(({ id, ...log }) => [id, log]));
}

/** Events as the API shows them: with their deliveries, and a message event's recipients from its settled log. */
async function eventDtos(ctx: AuthedContext, events: EventRow[]) {
  if (!events.length) return [];
  const [deliveries, logs] = await Promise.all([deliveriesOf(ctx, events.map((e) => e.id)), settledLogsOf(ctx, events)]);
  const none: SettledLogColumns = { settled_recipients: null, settled_provider_ids: null };
  return events.map((e) => toEventDto({ ...e, data: eventData(e.type, e.data, (e.settled_log_id && logs.get(e.settled_log_id)) || none) }, deliveries.get(e.id) ?? []));
}

/** The deliveries of some events, by event. */
async function deliveriesOf(ctx: AuthedContext, eventIds: string[]): Promise<Map<string, DeliveryRow[]>> {
  const rows = (await tenant(ctx.db, ctx.caller.orgId)
    .scoped('webhook_deliveries')
    .whereIn('webhook_deliveries.event_id', eventIds)
    .orderBy('webhook_deliveries.created_at')
    .select('event_id', 'endpoint_id', 'status', 'attempts', 'next_attempt_at', 'last_response_status')) as DeliveryRow[];
  const by = new Map<string, DeliveryRow[]>();
  for (const r of rows) by.set(r.event_id, [...(by.get(r.event_id) ?? []), r]);
  return by;
}

export const events = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, page: PageRequest) {
    const found = await paginateAs(tenant(ctx.db, ctx.caller.orgId).scoped(EVENTS).select(eventColumns), EVENTS, page, (row: EventRow) => row);
    return { ...found, items: await eventDtos(ctx, found.items) };
  },
});

export const event = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const row = await tenant(ctx.db, ctx.caller.orgId).owned<EventRow>(EVENTS, id, eventColumns);
    return (await eventDtos(ctx, [row]))[0]!;
  },
});

export const eventAttempts = operation({
  access: ADMIN,
  async run(ctx, _input: undefined, { id, ...page }: { id: string } & PageRequest) {
    await tenant(ctx.db, ctx.caller.orgId).owned(EVENTS, id, ['id']);
    return attemptsWhere(ctx, 'event_id', id, page);
  },
});

/** Delivers an event to one of the organization's endpoints again, from a first attempt, with the same `webhook-id`. */
export const resend = operation({
  access: ADMIN,
  input: z.strictObject({ endpointId: z.string() }),
  async check(ctx, input, { id }: { id: string }, failed) {
    // The event in the path first: another organization's is 403 whatever the body names.
    await tenant(ctx.db, ctx.caller.orgId).owned(EVENTS, id, ['id']);
    if (failed.has('endpointId')) return [];
    const mine = isUuid(input.endpointId) && (await tenant(ctx.db, ctx.caller.orgId).scoped(ENDPOINTS).where(`${ENDPOINTS}.id`, input.endpointId).first('id'));
    return mine ? [] : [{ field: 'endpointId', message: 'endpointId must be one of the organization\'s webhook endpoints' }];
  },
  async run(ctx, input, { id }: { id: string }) {
    await ctx.db.transaction(async (trx) => {
      await run(trx, resendDelivery, { orgId: ctx.caller.orgId, eventId: id, endpointId: input.endpointId });
      await record(trx, ctx, { action: 'webhook.event_resent', resourceType: 'webhook', resourceId: input.endpointId, details: { eventId: id } });
    });
    await wake(ctx.db, ctx.caller.orgId, [input.endpointId]);
    return { eventId: id, endpointId: input.endpointId };
  },
});

