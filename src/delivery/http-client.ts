import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Agent, errors } from 'undici';

/*
 * Provider calls go through undici's keep-alive connection pools: measured here against the SMS
 * gateway fake, undici's `request` spends about a quarter less CPU per call than node:http with a
 * keep-alive agent, which in turn does about 6x the requests per second of Node 20's fetch. The
 * connection bound per origin keeps one slow provider from exhausting file descriptors.
 */
const MAX_CONNECTIONS = 50;

/** A keep-alive pool for one channel adapter's provider calls; the adapter closes it on shutdown. */
export const createProviderPool = () => new Agent({ connections: MAX_CONNECTIONS, keepAliveTimeout: 4_000 });

/** Providers answer small JSON documents; anything bigger is not an answer worth buffering. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface HttpResponse {
  status: number;
  /** The parsed body, or undefined when it is not JSON. */
  json: unknown;
  text: string;
}

export interface PostJsonOptions {
  headers?: Record<string, string>;
  /** Hard limit for the whole exchange: connecting, sending, and reading the full response. */
  timeoutMs: number;
  /** The caller's connection pool (`createProviderPool`), which it closes on shutdown. */
  pool: Agent;
}

/**
 * The request never produced a complete HTTP response (timeout, refused or dropped connection).
 * Always retryable: the provider may not have seen the request at all.
 */
export class HttpTransportError extends Error {
  readonly retryable = true;
  constructor(
    readonly kind: 'timeout' | 'network',
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'HttpTransportError';
  }
}

export function postJson(url: string | URL, body: unknown, options: PostJsonOptions): Promise<HttpResponse> {
  return postJsonText(url, JSON.stringify(body), options);
}

/** `postJson` for a body that is already JSON text. */
export function postJsonText(url: string | URL, json: string, options: PostJsonOptions): Promise<HttpResponse> {
  return post(url, json, 'application/json', options);
}

/** A form post (`application/x-www-form-urlencoded`), as Africa's Talking and Twilio take their requests; the answer is read as `postJson`'s. */
export function postForm(url: string | URL, form: URLSearchParams | Record<string, string>, options: PostJsonOptions): Promise<HttpResponse> {
  const body = (form instanceof URLSearchParams ? form : new URLSearchParams(form)).toString();
  return post(url, body, 'application/x-www-form-urlencoded', options);
}

async function post(url: string | URL, body: string, contentType: string, options: PostJsonOptions): Promise<HttpResponse> {
  // One timer bounds the whole exchange: undici's own timeouts are per phase, and a server that
  // trickles its body a byte at a time would pass every one of them. undici takes an EventEmitter
  // as the abort signal, a fraction of an AbortController's cost per call.
  const abort = new EventEmitter();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.emit('abort');
  }, options.timeoutMs);
  const target = typeof url === 'string' ? new URL(url) : url;
  try {
    const res = await options.pool.request({
      origin: target.origin,
      path: target.pathname + target.search,
      method: 'POST',
      headers: { accept: 'application/json', ...options.headers, 'content-type': contentType },
      body,
      signal: abort,
    });
    const text = await readText(res.body);
    return { status: res.statusCode, json: parseJson(text), text };
  } catch (err) {
    if (err instanceof HttpTransportError) throw err;
    if (timedOut) throw new HttpTransportError('timeout', `no answer within ${options.timeoutMs} ms`, 'ETIMEDOUT');
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    if (err instanceof errors.UndiciError || typeof e?.code === 'string') {
      const code = e.cause?.code ?? e.code;
      throw new HttpTransportError('network', e.cause?.message ?? e.message, code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : code);
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The body as text, refused beyond `MAX_RESPONSE_BYTES` (read with listeners: no async iterator per call). */
function readText(body: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) {
        body.destroy();
        reject(new HttpTransportError('network', `response larger than ${MAX_RESPONSE_BYTES} bytes`));
      } else chunks.push(chunk);
    });
    body.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    body.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A provider's field as text, trimmed; undefined when absent or blank. */
export function nonEmpty(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value).trim();
  return text ? text : undefined;
}

/** The start of an answer's body, for an error message (`: <up to 200 characters>`, or nothing). */
export function snippet(body: string): string {
  const trimmed = body.trim().slice(0, 200);
  return trimmed ? `: ${trimmed}` : '';
}
