/** A webhook endpoint as stored (its secrets stay in the row; `toEndpointDto` never shows them). */
export interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  failing_since: Date | null;
  failures_in_a_row: number;
  created_at: Date;
  updated_at: Date;
}

export const endpointColumns = [
  'webhook_endpoints.id',
  'webhook_endpoints.organization_id',
  'webhook_endpoints.url',
  'webhook_endpoints.description',
  'webhook_endpoints.event_types',
  'webhook_endpoints.enabled',
  'webhook_endpoints.disabled_reason',
  'webhook_endpoints.last_success_at',
  'webhook_endpoints.last_failure_at',
  'webhook_endpoints.failing_since',
  'webhook_endpoints.failures_in_a_row',
  'webhook_endpoints.created_at',
  'webhook_endpoints.updated_at',
];

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const toEndpointDto = (row: EndpointRow) => ({
  _id: row.id,
  url: row.url,
  description: row.description,
  eventTypes: row.event_types,
  enabled: row.enabled,
  disabledReason: row.disabled_reason,
  lastSuccessAt: iso(row.last_success_at),
  lastFailureAt: iso(row.last_failure_at),
  failingSince: iso(row.failing_since),
  failuresInARow: row.failures_in_a_row,
  organization: row.organization_id,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});
export type EndpointDto = ReturnType<typeof toEndpointDto>;

export interface AttemptRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  attempt: number;
  succeeded: boolean;
  response_status: number | null;
  duration_ms: number;
  response: string | null;
  error: string | null;
  attempted_at: Date;
  created_at: Date;
}

export const toAttemptDto = (row: AttemptRow) => ({
  _id: row.id,
  endpointId: row.endpoint_id,
  eventId: row.event_id,
  eventType: row.type,
  attempt: row.attempt,
  status: row.succeeded ? ('succeeded' as const) : ('failed' as const),
  responseStatus: row.response_status,
  durationMs: row.duration_ms,
  response: row.response,
  error: row.error,
  attemptedAt: row.attempted_at.toISOString(),
  createdAt: row.created_at.toISOString(),
});

export interface EventRow {
  id: string;
  type: string;
  occurred_at: Date;
  data: Record<string, unknown>;
  /** A message event's settled log, whose recipients it shows (`outbox.eventData`). */
  settled_log_id: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  event_id: string;
  endpoint_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  next_attempt_at: Date;
  last_response_status: number | null;
}

export const toEventDto = (row: EventRow, deliveries: DeliveryRow[]) => ({
  _id: row.id,
  type: row.type,
  timestamp: row.occurred_at.toISOString(),
  data: row.data,
  deliveries: deliveries.map((d) => ({
    endpointId: d.endpoint_id,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
    lastResponseStatus: d.last_response_status,
  })),
  createdAt: row.created_at.toISOString(),
});
