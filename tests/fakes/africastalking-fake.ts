import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { fakeHttpServer, sendJson, type TransportBehaviour } from '../helpers/fake-server.js';

/**
 * A local Africa's Talking SMS API: `POST /version1/messaging` with an `apiKey` header and a form
 * body (`username`, `to` as comma-separated numbers, `message`, optional `from`), answering 201 with
 * `{ SMSMessageData: { Message, Recipients: [{ statusCode, number, status, cost, messageId }] } }`.
 *
 *   const at = await startAfricasTalkingFake({ username: 'herald', apiKey: 'k' });  // at.url -> AFRICASTALKING_API_URL
 *   at.queue({ kind: 'http', status: 500 }, 2);                                    // the next two calls fail
 *   at.setBehaviour({ kind: 'delay', ms: 100 });                                   // every later call is slow
 *   at.setStatus('+254700000001', 406);                                            // that number is blacklisted
 *   at.calls()                                                                     // every request, in order
 *   await at.pushReport(callbackUrl, { id: at.messages()[0].messageId, status: 'Success' });
 *   await at.stop();
 *
 * Whatever the behaviour, a wrong `apiKey` or `username` (of the app it was started with, or of one
 * added with `addAccount`) answers 401 with Africa's Talking's text, and a request without
 * `Accept: application/json` is answered in XML, as Africa's Talking does.
 * After them, a queued behaviour wins over the one set for every call; then the form is checked
 * (400 without `to` or `message`), and each number gets its status: its own (`setStatus`), else
 * 403 InvalidPhoneNumber for a number that is not E.164 or ends in 0003, else 101 Sent.
 */
export type AfricasTalkingBehaviour =
  | TransportBehaviour
  /** Waits, then behaves as `then` (default success). */
  | { kind: 'delay'; ms: number; then?: AfricasTalkingBehaviour }
  /** Never answers (until the fake stops). */
  | { kind: 'hang' }
  /** HTTP 201 naming no recipient, `Message` saying why: how a refused sender id (`InvalidSenderId`) or an empty balance is answered. */
  | { kind: 'refused'; message: string }
  /** Answers as success does, but the recipients in reverse order and without the numbers in `omit`. */
  | { kind: 'reordered'; omit?: string[] };

export interface AfricasTalkingCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  form: Record<string, string>;
  /** `Date.now()` when the request's body had arrived. */
  at: number;
}

/** A message the fake took (status 100 to 102): what its delivery reports are about. */
export interface AfricasTalkingMessage {
  messageId: string;
  number: string;
  message: string;
  from?: string;
}

export interface AfricasTalkingReport {
  id: string;
  status: string;
  phoneNumber?: string;
  networkCode?: string;
  failureReason?: string;
  retryCount?: string | number;
}

export interface AfricasTalkingFakeOptions {
  username?: string;
  apiKey?: string;
}

/** The per-recipient status codes Africa's Talking documents, with the word it answers beside each. */
export const AFRICASTALKING_STATUSES: Record<number, string> = {
  100: 'Processed',
  101: 'Success',
  102: 'Queued',
  401: 'RiskHold',
  402: 'InvalidSenderId',
  403: 'InvalidPhoneNumber',
  404: 'UnsupportedNumberType',
  405: 'InsufficientBalance',
  406: 'UserInBlacklist',
  407: 'CouldNotRoute',
  409: 'DoNotDisturbRejection',
  500: 'InternalServerError',
  501: 'GatewayError',
  502: 'RejectedByGateway',
};

/** The text Africa's Talking answers a wrong key or username with (HTTP 401, text/plain). */
export const AFRICASTALKING_BAD_AUTH = 'The supplied authentication is invalid';

const PRICE = 0.8;

export interface AfricasTalkingFake {
  url: string;
  username: string;
  apiKey: string;
  calls(): AfricasTalkingCall[];
  messages(): AfricasTalkingMessage[];
  /** The most calls it was answering at once since it started or was reset. */
  peakInFlight(): number;
  /** The next `calls` calls (default one) behave as `behaviour`, after any already queued. */
  queue(behaviour: AfricasTalkingBehaviour, calls?: number): void;
  /** What every call not queued does (default success). */
  setBehaviour(behaviour: AfricasTalkingBehaviour): void;
  /** The status code `number` is answered with from now on. */
  setStatus(number: string, statusCode: number): void;
  /** Another app it accepts calls from, until reset. */
  addAccount(username: string, apiKey: string): void;
  /** Forgets the calls, messages, behaviours and statuses. */
  reset(): void;
  /** POSTs a delivery report to a callback URL, form-encoded and unsigned, as Africa's Talking does. */
  pushReport(callbackUrl: string, report: AfricasTalkingReport): Promise<{ status: number; body: string }>;
  stop(): Promise<void>;
}

const digits = (phone: string) => phone.replace(/\D/g, '');

export async function startAfricasTalkingFake(options: AfricasTalkingFakeOptions = {}): Promise<AfricasTalkingFake> {
  const username = options.username ?? 'herald-test';
  const apiKey = options.apiKey ?? 'test-africastalking-api-key';
  let calls: AfricasTalkingCall[] = [];
  let messages: AfricasTalkingMessage[] = [];
  let queued: AfricasTalkingBehaviour[] = [];
  let everyCall: AfricasTalkingBehaviour = { kind: 'success' };
  let statuses = new Map<string, number>();
  /** The apps it accepts: username to API key. */
  let accounts = new Map([[username, apiKey]]);
  let inFlight = 0;
  let peak = 0;

  const sendText = (res: http.ServerResponse, status: number, text: string, type = 'text/plain') => {
    if (!res.destroyed) res.writeHead(status, { 'content-type': type }).end(text);
  };

  function statusOf(number: string): number {
    const own = statuses.get(digits(number));
    if (own !== undefined) return own;
    return /^\+\d{7,15}$/.test(number) && !number.endsWith('0003') ? 101 : 403;
  }

  function answer(res: http.ServerResponse, form: Record<string, string>, order: { reverse: boolean; omit: string[] }) {
    if (!form.to) return sendText(res, 400, "Request is missing required form field 'to'");
    if (!form.message) return sendText(res, 400, "Request is missing required form field 'message'");
    let recipients = form.to.split(',').map((raw) => {
      const number = raw.trim();
      const statusCode = statusOf(number);
      const sent = statusCode >= 100 && statusCode <= 102;
      const messageId = sent ? `ATXid_${randomBytes(16).toString('hex')}` : 'None';
      if (sent) messages.push({ messageId, number, message: form.message!, ...(form.from ? { from: form.from } : {}) });
      return { statusCode, number, status: AFRICASTALKING_STATUSES[statusCode] ?? 'Failed', cost: sent ? `KES ${PRICE.toFixed(4)}` : '0', messageId };
    });
    const sentCount = recipients.filter((r) => r.statusCode <= 102).length;
    const summary = `Sent to ${sentCount}/${recipients.length} Total Cost: KES ${(sentCount * PRICE).toFixed(4)}`;
    const omitted = new Set(order.omit.map(digits));
    recipients = recipients.filter((r) => !omitted.has(digits(r.number)));
    if (order.reverse) recipients.reverse();
    sendJson(res, 201, { SMSMessageData: { Message: summary, Recipients: recipients } });
  }

  /** Answers one call; resolves once the answer is written (or the connection is gone). */
  async function respond(res: http.ServerResponse, form: Record<string, string>, behaviour: AfricasTalkingBehaviour): Promise<void> {
    switch (behaviour.kind) {
      case 'delay':
        await new Promise<void>((resolve) => server.later(behaviour.ms, resolve));
        return respond(res, form, behaviour.then ?? { kind: 'success' });
      case 'hang':
        return new Promise<void>((resolve) => res.on('close', resolve));
      case 'drop':
        return void res.socket?.destroy();
      case 'http':
        return sendText(res, behaviour.status, behaviour.body ?? `HTTP ${behaviour.status}`);
      case 'malformed':
        return sendText(res, 201, behaviour.body ?? '{"SMSMessageData":', 'application/json');
      case 'refused':
        return sendJson(res, 201, { SMSMessageData: { Message: behaviour.message, Recipients: [] } });
      case 'reordered':
        return answer(res, form, { reverse: true, omit: behaviour.omit ?? [] });
      case 'success':
        return answer(res, form, { reverse: false, omit: [] });
    }
  }

  const server = fakeHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const path = req.url ?? '';
      calls.push({ method: req.method ?? '', path, headers: req.headers, form, at: Date.now() });
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        if (req.method !== 'POST' || path !== '/version1/messaging') return sendText(res, 404, 'Not Found');
        const key = form.username === undefined ? undefined : accounts.get(form.username);
        if (key === undefined || req.headers.apikey !== key) return sendText(res, 401, AFRICASTALKING_BAD_AUTH);
        if (!String(req.headers.accept ?? '').includes('application/json')) {
          return sendText(res, 201, '<?xml version="1.0" encoding="UTF-8"?><AfricasTalkingResponse><SMSMessageData/></AfricasTalkingResponse>', 'application/xml');
        }
        await respond(res, form, queued.shift() ?? everyCall);
      } finally {
        inFlight--;
      }
    });
  });

  const url = await server.listen();
  return {
    url,
    username,
    apiKey,
    calls: () => [...calls],
    messages: () => [...messages],
    peakInFlight: () => peak,
    queue(behaviour, count = 1) {
      for (let i = 0; i < count; i++) queued.push(behaviour);
    },
    setBehaviour(behaviour) {
      everyCall = behaviour;
    },
    setStatus(number, statusCode) {
      statuses.set(digits(number), statusCode);
    },
    addAccount(name, key) {
      accounts.set(name, key);
    },
    reset() {
      accounts = new Map([[username, apiKey]]);
      calls = [];
      messages = [];
      queued = [];
      everyCall = { kind: 'success' };
      statuses = new Map();
      peak = inFlight;
    },
    async pushReport(callbackUrl, report) {
      const fields: Record<string, string> = { id: report.id, status: report.status };
      if (report.phoneNumber !== undefined) fields.phoneNumber = report.phoneNumber;
      fields.networkCode = report.networkCode ?? '63902';
      if (report.failureReason !== undefined) fields.failureReason = report.failureReason;
      fields.retryCount = String(report.retryCount ?? 0);
      const res = await fetch(callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
      return { status: res.status, body: await res.text() };
    },
    stop: server.stop,
  };
}
