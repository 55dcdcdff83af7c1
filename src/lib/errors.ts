import { STATUS_CODES } from 'node:http';

export interface FieldProblem {
  field: string;
  message: string;
}

export interface ErrorExtra {
  details?: FieldProblem[];
  retryAfter?: number;
  /** A 405's methods of the path. */
  allow?: string[];
  /** A 401 that refused a credential the request carried (RFC 6750's `invalid_token`), not one for a request without any. */
  credentialRefused?: boolean;
}

/** Every error a client may see: its HTTP status, reason phrase and a message safe to show. */
export class HttpError extends Error {
  readonly error: string;
  constructor(
    readonly statusCode: number,
    message: string,
    readonly extra: ErrorExtra = {},
  ) {
    super(message);
    this.name = 'HttpError';
    this.error = STATUS_CODES[statusCode] ?? 'Error';
  }

  /** A stable machine-readable code for GraphQL `extensions.code`. */
  get code(): string {
    return this.error.toUpperCase().replace(/[^A-Z]+/g, '_');
  }

  /** The response headers the status calls for: `Retry-After`, `Allow`, and `WWW-Authenticate` on every 401. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.extra.retryAfter) headers['Retry-After'] = String(this.extra.retryAfter);
    if (this.extra.allow) headers.Allow = this.extra.allow.join(', ');
    if (this.statusCode === 401) headers['WWW-Authenticate'] = `Bearer realm="herald"${this.extra.credentialRefused ? ', error="invalid_token"' : ''}`;
    return headers;
  }

  toBody(): Record<string, unknown> {
    return {
      statusCode: this.statusCode,
      message: this.message,
      error: this.error,
      ...(this.extra.details ? { details: this.extra.details } : {}),
    };
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const validationFailed = (details: FieldProblem[]) =>
  new HttpError(400, details.map((d) => d.message).join('; '), { details });
export const unauthorized = (message = 'Invalid token') => new HttpError(401, message);
export const authenticationRequired = () =>
  new HttpError(401, 'Authentication required: send Authorization: Bearer <token>, the UNIFIED-API-Key header or the apikey query parameter');
/** The same error, marked as the refusal of a credential that was sent (authentication's own 401s). */
export const credentialRefused = (err: unknown) =>
  err instanceof HttpError && err.statusCode === 401 ? new HttpError(401, err.message, { ...err.extra, credentialRefused: true }) : err;
export const paymentRequired = (message = 'Insufficient credits') => new HttpError(402, message);
export const forbidden = (message = 'Insufficient permissions') => new HttpError(403, message);
export const notFound = (message = 'Resource not found') => new HttpError(404, message);
export const methodNotAllowed = (method: string, allow: string[]) =>
  new HttpError(405, `${method} is not allowed on this path; use ${allow.join(', ')}`, { allow });
export const conflict = (message: string) => new HttpError(409, message);
export const payloadTooLarge = (message: string) => new HttpError(413, message);
export const unsupportedMediaType = (expected: string) => new HttpError(415, `Content-Type must be ${expected}`);
export const tooManyRequests = (retryAfter: number, message = 'Too many requests, try again later') =>
  new HttpError(429, message, { retryAfter });
export const serviceUnavailable = (message = 'Service temporarily unavailable') => new HttpError(503, message);

export const internalError = () => new HttpError(500, 'Internal server error');

/** Postgres SQLSTATEs that mean the database is away rather than the query being wrong. */
const UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300']);
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

/**
 * The errors Express raises before a route runs, all the client's: the body parser's (bad JSON 400,
 * too large 413, wrong charset 415) and any other 4xx it marks (a path parameter that is not UTF-8).
 */
export function fromExpress(err: unknown): HttpError | null {
  const e = err as { type?: unknown; status?: unknown } | null;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new HttpError(400, 'Malformed JSON in request body');
    case 'entity.too.large':
      return new HttpError(413, 'Request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'Unsupported request body encoding');
    case 'request.aborted':
      return new HttpError(400, 'Request aborted');
    default:
      return typeof e?.status === 'number' && e.status >= 400 && e.status < 500 ? new HttpError(e.status, 'Bad request') : null;
  }
}

/** Turns anything thrown into the error a client sees; unknown errors become a bare 500. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const e = err as { code?: string; message?: string; name?: string } | null;
  if (e && typeof e.code === 'string' && (UNAVAILABLE.has(e.code) || NETWORK.has(e.code))) return serviceUnavailable();
  if (e?.name === 'KnexTimeoutError' || /Connection terminated|not queryable|timeout exceeded when trying to connect/i.test(e?.message ?? '')) {
    return serviceUnavailable();
  }
  return internalError();
}
