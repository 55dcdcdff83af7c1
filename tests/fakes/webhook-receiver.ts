import type http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { fakeHttpServer } from '../helpers/fake-server.js';

/**
 * A local receiver of Herald's outbound webhooks (platform.md, "Outbound webhooks"): records every
 * request as it arrives and answers as scripted. Each delivery is checked against the secrets it
 * has been given with the `standardwebhooks` package's own `Webhook(secret).verify`, so a
 * signature Herald gets wrong fails here the way it would fail at a customer's receiver.
 *
 *   const receiver = await startWebhookReceiver();   // receiver.url -> an endpoint's url
 *   receiver.secrets = [created.body.secret];        // what `verifiedBy` is checked against
 *   receiver.script({ kind: 'answer', status: 500 }, { kind: 'answer', status: 500 });  // the next two fail
 *   receiver.setDefault({ kind: 'hang' });           // then every request is held, never answered
 *   await receiver.waitForRequests(3);               // every request, in arrival order
 *   await receiver.stop();
 *
 * Scripted behaviours are used one per request, in order; after them the default (200 `ok`).
 */
export type ReceiverBehaviour =
  /** Answers this status, with these headers (`retry-after`, `location`...) and body. */
  | { kind: 'answer'; status: number; headers?: Record<string, string>; body?: string }
  /** Reads the request and never answers (until the receiver stops). */
  | { kind: 'hang' }
  /** Destroys the connection without an answer. */
  | { kind: 'drop' }
  /** Waits, then behaves as `then` (default 200 `ok`). */
  | { kind: 'delay'; ms: number; then?: ReceiverBehaviour };

export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as sent: what the signature covers. */
  rawBody: string;
  /** `rawBody` parsed as JSON, or undefined when it is not JSON. */
  body: any;
  /** The `webhook-id` header. */
  id: string | undefined;
  /** When the request arrived (ms since the epoch): gaps between requests show the retry schedule. */
  at: number;
  /** The receiver's `secrets` (as they were on arrival) that verify this request. */
  verifiedBy: string[];
  /** Whether at least one secret verifies it. */
  verified: boolean;
  /** Why verification failed, when it did (the last secret's error, or no secrets known). */
  verifyError?: string;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`; any path is accepted and recorded. */
  url: string;
  requests: ReceivedWebhook[];
  /** Secrets each request is verified against on arrival. */
  secrets: string[];
  /** Requests read but not yet answered. */
  readonly inFlight: number;
  /** Behaviours for the next requests, one each, after any already scripted. */
  script(...behaviours: ReceiverBehaviour[]): void;
  /** The behaviour once the script is used up. */
  setDefault(behaviour: ReceiverBehaviour): void;
  /** Resolves with every request once there are at least `count`; rejects after `timeoutMs`. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Resolves with the first request for which `match` holds; rejects after `timeoutMs`. */
  waitForRequest(match: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook>;
  stop(): Promise<void>;
}

const OK: ReceiverBehaviour = { kind: 'answer', status: 200, body: 'ok' };

/** Whether `secret` verifies a request, by the package's own check (signature and timestamp). */
export function verifies(request: Pick<ReceivedWebhook, 'rawBody' | 'headers'>, secret: string): boolean {
  return verifyError(request, secret) === undefined;
}

function verifyError(request: Pick<ReceivedWebhook, 'rawBody' | 'headers'>, secret: string): string | undefined {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value;
  try {
    new Webhook(secret).verify(request.rawBody, headers);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

function readRaw(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve, reject) => {
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function until<T>(what: () => T | undefined, describe: () => string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = what();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`webhook receiver: ${describe()} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const requests: ReceivedWebhook[] = [];
  const scripted: ReceiverBehaviour[] = [];
  let fallback: ReceiverBehaviour = OK;
  let inFlight = 0;

  function respond(res: http.ServerResponse, behaviour: ReceiverBehaviour) {
    if (res.destroyed) return;
    if (behaviour.kind === 'delay') return server.later(behaviour.ms, () => respond(res, behaviour.then ?? OK));
    if (behaviour.kind === 'hang') return;
    if (behaviour.kind === 'drop') return void res.socket?.destroy();
    res.writeHead(behaviour.status, { 'content-type': 'text/plain', ...behaviour.headers }).end(behaviour.body ?? '');
  }

  const server = fakeHttpServer(async (req, res) => {
    const at = Date.now();
    inFlight += 1;
    res.on('close', () => (inFlight -= 1));
    const rawBody = await readRaw(req);
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const request = { rawBody, headers: req.headers };
    const errors = receiver.secrets.map((secret) => [secret, verifyError(request, secret)] as const);
    const verifiedBy = errors.filter(([, error]) => error === undefined).map(([secret]) => secret);
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawBody,
      body,
      id: typeof req.headers['webhook-id'] === 'string' ? req.headers['webhook-id'] : undefined,
      at,
      verifiedBy,
      verified: verifiedBy.length > 0,
      ...(verifiedBy.length ? {} : { verifyError: errors.at(-1)?.[1] ?? 'no secret to verify with' }),
    });
    respond(res, scripted.shift() ?? fallback);
  });

  const url = await server.listen();
  const receiver: WebhookReceiver = {
    url,
    requests,
    secrets: [],
    get inFlight() {
      return inFlight;
    },
    script: (...behaviours) => void scripted.push(...behaviours),
    setDefault(behaviour) {
      fallback = behaviour;
    },
    waitForRequests: (count, timeoutMs = 20_000) =>
      until(() => (requests.length >= count ? requests : undefined), () => `${requests.length} of ${count} requests`, timeoutMs),
    waitForRequest: (match, timeoutMs = 20_000) =>
      until(() => requests.find(match), () => `no matching request among ${requests.length}`, timeoutMs),
    stop: () => server.stop(),
  };
  return receiver;
}
