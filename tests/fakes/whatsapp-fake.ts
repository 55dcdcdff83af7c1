import { createHmac } from 'node:crypto';
import type http from 'node:http';
import { behaviourTable, fakeHttpServer, readJson, sendJson, type TransportBehaviour } from '../helpers/fake-server.js';

/**
 * A local WhatsApp Cloud API (spec/providers.md): `POST /<phone_number_id>/messages` with a bearer
 * token, answering the Graph API's success and `{ error: { message, type, code, ... } }` shapes.
 *
 *   const wa = await startWhatsAppFake({ token: 't', phoneNumberId: '1001' });  // wa.url -> WHATSAPP_API_URL
 *   wa.setBehaviour({ kind: 'error', code: 131047 }, '254700000001');           // one number fails
 *   wa.setBehaviour({ kind: 'http', status: 500 });                             // every call fails
 *   wa.calls                                                                    // every request
 *   await wa.stop();
 *
 * `url` includes a Graph version path (`/v21.0`), like the production base URL.
 * A wrong token always answers 401 with code 190, a wrong phone number id 400 with code 100,
 * whatever the behaviour. Per-number behaviours win over the global one. `first` counts the calls
 * it meets and is success after them:
 *   wa.setBehaviour({ kind: 'first', calls: 50, behaviour: { kind: 'error', code: 130429 } });
 *
 * Webhooks, as Meta sends them (providers.md, "Receipts from providers"):
 *   wa.issued                                                   // every message it accepted: wamid, to, reference
 *   const body = wa.notification({ statuses: [wa.status(wa.issued[0], 'delivered')] });
 *   await wa.postWebhook(callbackUrl, body, appSecret);        // raw body signed with X-Hub-Signature-256
 */
export type WhatsAppBehaviour =
  | TransportBehaviour
  /** A Graph API error; status and message default to what the Cloud API answers for that code. */
  | { kind: 'error'; code: number; status?: number; message?: string; subcode?: number }
  /** Waits, then behaves as `then` (default success). */
  | { kind: 'delay'; ms: number; then?: WhatsAppBehaviour }
  /** The first `calls` calls it applies to behave as `behaviour`; every later one succeeds. */
  | { kind: 'first'; calls: number; behaviour: WhatsAppBehaviour };

export interface WhatsAppCall {
  phoneNumberId: string;
  authorization: string | undefined;
  body: any;
}

/** A message the fake accepted: what its statuses name. */
export interface WhatsAppIssued {
  wamid: string;
  /** The recipient's digits. */
  to: string;
  /** The `biz_opaque_callback_data` it was sent with. */
  reference?: string;
}

export type WhatsAppStatusName = 'sent' | 'delivered' | 'read' | 'failed';

export interface WhatsAppStatusOptions {
  /** Unix seconds; default now. */
  timestamp?: number;
  /** Leave `biz_opaque_callback_data` out, so the receiver must look the wamid up. */
  withoutReference?: boolean;
  /** `failed`: the error (default 131026, undeliverable). */
  error?: { code: number; title: string; message?: string };
}

export interface WebhookReply {
  status: number;
  body: any;
}

export interface WhatsAppFakeOptions {
  token?: string;
  phoneNumberId?: string;
}

/** What the Cloud API answers for the codes Herald cares about. */
export const WHATSAPP_ERRORS: Record<number, { status: number; type: string; message: string }> = {
  190: { status: 401, type: 'OAuthException', message: 'Error validating access token: Session has expired' },
  100: { status: 400, type: 'OAuthException', message: 'Invalid parameter' },
  130429: { status: 400, type: 'OAuthException', message: '(#130429) Rate limit hit' },
  131056: { status: 400, type: 'OAuthException', message: '(#131056) (Business Account, Consumer Account) pair rate limit hit' },
  131047: { status: 400, type: 'OAuthException', message: '(#131047) Re-engagement message' },
  131026: { status: 400, type: 'OAuthException', message: '(#131026) Message Undeliverable' },
  131000: { status: 500, type: 'OAuthException', message: '(#131000) Something went wrong' },
};

export interface WhatsAppFake {
  url: string;
  token: string;
  phoneNumberId: string;
  calls: WhatsAppCall[];
  setBehaviour(behaviour: WhatsAppBehaviour, to?: string): void;
  reset(): void;
  stop(): Promise<void>;
  /** The messages accepted, in order. */
  issued: WhatsAppIssued[];
  /** A `statuses[]` item for an accepted message, carrying its reference back as Meta does. */
  status(message: WhatsAppIssued, status: WhatsAppStatusName, options?: WhatsAppStatusOptions): Record<string, unknown>;
  /** A `messages[]` item: a text reply from `from` (digits). */
  reply(from: string, text: string, timestamp?: number): Record<string, unknown>;
  /** A whole notification (`object: whatsapp_business_account`) holding these statuses and replies. */
  notification(value: { statuses?: unknown[]; messages?: unknown[] }): Record<string, unknown>;
  /**
   * POSTs a notification to a callback URL with `X-Hub-Signature-256` over its raw body, keyed with
   * `appSecret`; a string body is sent as is, `signature` replaces the header's value.
   */
  postWebhook(url: string, body: unknown, appSecret: string, options?: { signature?: string }): Promise<WebhookReply>;
}

/** Meta's webhook signature of a raw body. */
export const metaSignature = (raw: string | Buffer, appSecret: string) => `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;

async function postRaw(url: string, raw: string, headers: Record<string, string>): Promise<WebhookReply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body };
}

export async function startWhatsAppFake(options: WhatsAppFakeOptions = {}): Promise<WhatsAppFake> {
  const token = options.token ?? 'test-whatsapp-token';
  const phoneNumberId = options.phoneNumberId ?? '100200300';
  const calls: WhatsAppCall[] = [];
  const issued: WhatsAppIssued[] = [];
  const behaviours = behaviourTable<WhatsAppBehaviour>({ kind: 'success' });
  let nextId = 1;

  function graphError(res: http.ServerResponse, code: number, status?: number, message?: string, subcode?: number) {
    const known = WHATSAPP_ERRORS[code] ?? { status: 400, type: 'OAuthException', message: `(#${code}) Error` };
    sendJson(res, status ?? known.status, {
      error: {
        message: message ?? known.message,
        type: known.type,
        code,
        ...(subcode === undefined ? {} : { error_subcode: subcode }),
        fbtrace_id: `trace${nextId++}`,
      },
    });
  }

  /** Calls each `first` behaviour has met so far. */
  const met = new WeakMap<WhatsAppBehaviour, number>();

  function respond(res: http.ServerResponse, body: any, behaviour: WhatsAppBehaviour) {
    switch (behaviour.kind) {
      case 'first': {
        const n = met.get(behaviour) ?? 0;
        met.set(behaviour, n + 1);
        return respond(res, body, n < behaviour.calls ? behaviour.behaviour : { kind: 'success' });
      }
      case 'delay':
        return server.later(behaviour.ms, () => respond(res, body, behaviour.then ?? { kind: 'success' }));
      case 'drop':
        return void res.socket?.destroy();
      case 'http':
        return sendJson(res, behaviour.status, behaviour.body ?? `HTTP ${behaviour.status}`);
      case 'malformed':
        return sendJson(res, 200, behaviour.body ?? '{"messaging_product":"whatsapp"');
      case 'error':
        return graphError(res, behaviour.code, behaviour.status, behaviour.message, behaviour.subcode);
      case 'success': {
        const wamid = `wamid.fake${nextId++}`;
        issued.push({ wamid, to: String(body.to), ...(body.biz_opaque_callback_data === undefined ? {} : { reference: body.biz_opaque_callback_data }) });
        return sendJson(res, 200, {
          messaging_product: 'whatsapp',
          contacts: [{ input: body.to, wa_id: body.to }],
          messages: [{ id: wamid }],
        });
      }
    }
  }

  const server = fakeHttpServer(async (req, res) => {
    // The base URL carries a pinned Graph version, as in production.
    const match = /^\/v\d+\.\d+\/([^/]+)\/messages$/.exec(req.url ?? '');
    const read = await readJson(req);
    if (!read.ok) return graphError(res, 100, 400, 'Request body is not JSON');
    const { body } = read;
    calls.push({ phoneNumberId: match ? decodeURIComponent(match[1]) : '', authorization: req.headers.authorization, body });
    if (req.method !== 'POST' || !match) return graphError(res, 100, 400, 'Unknown path components');
    if (req.headers.authorization !== `Bearer ${token}`) return graphError(res, 190);
    if (decodeURIComponent(match[1]) !== phoneNumberId) {
      return graphError(res, 100, 400, `Unsupported post request. Object with ID '${match[1]}' does not exist`, 33);
    }
    const valid =
      body?.messaging_product === 'whatsapp' &&
      body.type === 'text' &&
      typeof body.text?.body === 'string' &&
      /^\d{6,15}$/.test(String(body.to)) &&
      (body.biz_opaque_callback_data === undefined || (typeof body.biz_opaque_callback_data === 'string' && body.biz_opaque_callback_data.length <= 512));
    if (!valid) return graphError(res, 100, 400, 'Invalid parameter');
    respond(res, body, behaviours.of(body.to));
  });

  return {
    url: `${await server.listen()}/v21.0`,
    token,
    phoneNumberId,
    calls,
    setBehaviour: behaviours.set,
    reset: behaviours.reset,
    stop: server.stop,
    issued,
    status: (message, status, options = {}) => ({
      id: message.wamid,
      status,
      timestamp: String(options.timestamp ?? Math.floor(Date.now() / 1000)),
      recipient_id: message.to,
      ...(message.reference !== undefined && !options.withoutReference ? { biz_opaque_callback_data: message.reference } : {}),
      ...(status === 'failed' ? { errors: [options.error ?? { code: 131026, title: 'Message undeliverable', message: 'Message undeliverable' }] } : {}),
    }),
    reply: (from, text, timestamp = Math.floor(Date.now() / 1000)) => ({ from, id: `wamid.in${nextId++}`, timestamp: String(timestamp), type: 'text', text: { body: text } }),
    notification: (value) => ({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'waba-1',
          changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { phone_number_id: phoneNumberId }, ...value } }],
        },
      ],
    }),
    postWebhook: (url, body, appSecret, options = {}) => {
      const raw = typeof body === 'string' ? body : JSON.stringify(body);
      return postRaw(url, raw, { 'x-hub-signature-256': options.signature ?? metaSignature(raw, appSecret) });
    },
  };
}
