import type http from 'node:http';
import { behaviourTable, fakeHttpServer, readJson, sendJson, type TransportBehaviour } from '../helpers/fake-server.js';

/**
 * A local SMS gateway speaking the contract in spec/providers.md: `POST /api/services/sendsms/`
 * and `POST /api/services/sendbulk/` (at most 20 messages), answering `{ responses: [...] }`.
 *
 *   const gateway = await startSmsGatewayFake();            // gateway.url -> SMS_API_URL
 *   gateway.setBehaviour({ kind: 'code', code: 1003 }, '254700000001');  // one number fails
 *   gateway.setBehaviour({ kind: 'http', status: 500 });    // every call answers 500
 *   gateway.calls                                           // every request, in arrival order
 *   await gateway.stop();
 *
 * Per-number behaviours win over the global one. `code` fails just that message; the others
 * (`http`, `malformed`, `drop`, `delay`) apply to the whole call as soon as one of its numbers has them.
 * `first` counts the calls it meets (once per call, whatever its numbers) and is success after them:
 *   gateway.setBehaviour({ kind: 'first', calls: 10, behaviour: { kind: 'http', status: 429 } });
 *
 * Delivery reports, pushed as the gateway does (providers.md, "Receipts from providers"):
 *   gateway.answered                                                   // every message it accepted
 *   await gateway.pushReports(callbackUrl, gateway.report(gateway.answered[0], 'DeliveredToTerminal'));
 */
export type SmsBehaviour =
  | TransportBehaviour
  /** The message is answered with this `response-code` (description defaults to the gateway's wording). */
  | { kind: 'code'; code: number; description?: string }
  /** Waits, then behaves as `then` (default success). */
  | { kind: 'delay'; ms: number; then?: SmsBehaviour }
  /** The first `calls` calls it applies to behave as `behaviour`; every later one succeeds. */
  | { kind: 'first'; calls: number; behaviour: SmsBehaviour };

export interface SmsCall {
  path: string;
  body: any;
  headers: http.IncomingHttpHeaders;
  /** When the request arrived (ms since the epoch): gaps between calls show a client's backoff. */
  at: number;
}

export interface SmsGatewayFakeOptions {
  /** Credentials the gateway accepts; any other pair gets response-code 1006. Unset: anything goes. */
  apikey?: string;
  partnerID?: string;
  /** `networkid` in answers; `null` leaves it out (clients then fall back to the gateway host). */
  networkId?: string | null;
  /** Leave `clientsmsid` out of answers, as some deployments do. */
  omitClientSmsId?: boolean;
  /** Answer a bulk call's messages in reverse order (matched by `clientsmsid`, which is echoed). */
  reverseAnswers?: boolean;
}

/** A message the gateway accepted: what its reports name. */
export interface SmsAnswered {
  messageid: string;
  clientsmsid?: string;
  mobile: string;
}

export interface SmsReportOptions {
  description?: string;
  /** `YYYY-MM-DD HH:MM:SS` (UTC); default now. */
  timestamp?: string;
  /** Leave `clientsmsid` out, so the receiver must look the `messageid` up. */
  withoutClientSmsId?: boolean;
}

const gatewayTime = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');

export const SMS_DESCRIPTIONS: Record<number, string> = {
  200: 'Success',
  1001: 'Invalid sender id',
  1002: 'Network not allowed',
  1003: 'Invalid mobile number',
  1004: 'Low bulk credits',
  1005: 'Failed. System error',
  1006: 'Invalid credentials',
  1007: 'Failed. System error',
  4090: 'Internal Error. Try again after 5 minutes',
  4091: 'No Partner ID is Set',
  4092: 'No API KEY Provided',
  4093: 'Details Not Found',
};

export interface SmsGatewayFake {
  url: string;
  calls: SmsCall[];
  /** Most requests the gateway held at once: shows a client's concurrency bound. */
  readonly peakInFlight: number;
  setBehaviour(behaviour: SmsBehaviour, mobile?: string): void;
  /** Back to success everywhere, calls kept. */
  reset(): void;
  stop(): Promise<void>;
  /** The messages accepted (answered 200), in order. */
  answered: SmsAnswered[];
  /** A delivery report for an accepted message. */
  report(message: SmsAnswered, status: string, options?: SmsReportOptions): Record<string, unknown>;
  /** POSTs one report (or an array, or a raw string) to a callback URL, unsigned, as the gateway does. */
  pushReports(url: string, reports: unknown): Promise<{ status: number; body: any }>;
}

export async function startSmsGatewayFake(options: SmsGatewayFakeOptions = {}): Promise<SmsGatewayFake> {
  const calls: SmsCall[] = [];
  const answered: SmsAnswered[] = [];
  const behaviours = behaviourTable<SmsBehaviour>({ kind: 'success' });
  let nextId = 1;
  let inFlight = 0;
  let peakInFlight = 0;

  /** Calls each `first` behaviour has met so far. */
  const met = new WeakMap<SmsBehaviour, number>();
  /** What the behaviours of one call are for that call: a `first` one is resolved once per call. */
  function resolverOfCall() {
    const resolved = new Map<SmsBehaviour, SmsBehaviour>();
    const resolve = (b: SmsBehaviour): SmsBehaviour => {
      if (b.kind !== 'first') return b;
      let r = resolved.get(b);
      if (!r) {
        const n = met.get(b) ?? 0;
        met.set(b, n + 1);
        r = n < b.calls ? resolve(b.behaviour) : { kind: 'success' };
        resolved.set(b, r);
      }
      return r;
    };
    return resolve;
  }

  function respond(res: http.ServerResponse, list: any[], behaviour: SmsBehaviour | undefined, resolve: (b: SmsBehaviour) => SmsBehaviour) {
    if (behaviour?.kind === 'first') return respond(res, list, resolve(behaviour), resolve);
    if (behaviour?.kind === 'delay') return server.later(behaviour.ms, () => respond(res, list, behaviour.then ?? { kind: 'success' }, resolve));
    if (behaviour?.kind === 'drop') return void res.socket?.destroy();
    if (behaviour?.kind === 'http') return sendJson(res, behaviour.status, behaviour.body ?? { error: `HTTP ${behaviour.status}` });
    if (behaviour?.kind === 'malformed') return sendJson(res, 200, behaviour.body ?? '<html>Bad gateway</html>');
    const responses = list.map((sms) => {
      const own = resolve(behaviours.of(sms.mobile));
      const badCredentials =
        (options.apikey !== undefined && sms.apikey !== options.apikey) || (options.partnerID !== undefined && String(sms.partnerID) !== options.partnerID);
      const code = badCredentials ? 1006 : own.kind === 'code' ? own.code : 200;
      const description = own.kind === 'code' && own.description ? own.description : (SMS_DESCRIPTIONS[code] ?? 'Error');
      const messageid = code === 200 ? String(nextId++) : undefined;
      if (messageid) answered.push({ messageid, mobile: String(sms.mobile), ...(sms.clientsmsid === undefined ? {} : { clientsmsid: String(sms.clientsmsid) }) });
      return {
        'response-code': code,
        'response-description': description,
        mobile: sms.mobile,
        ...(messageid ? { messageid } : {}),
        ...(options.networkId === null ? {} : { networkid: options.networkId ?? '1' }),
        ...(options.omitClientSmsId || sms.clientsmsid === undefined ? {} : { clientsmsid: sms.clientsmsid }),
      };
    });
    sendJson(res, 200, { responses: options.reverseAnswers ? responses.reverse() : responses });
  }

  const server = fakeHttpServer(async (req, res) => {
    inFlight += 1;
    peakInFlight = Math.max(peakInFlight, inFlight);
    res.on('close', () => (inFlight -= 1));
    const read = await readJson(req);
    if (!read.ok) return sendJson(res, 400, { error: 'body is not JSON' });
    const { body } = read;
    const path = req.url ?? '';
    calls.push({ path, body, headers: req.headers, at: Date.now() });
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'POST only' });
    let list: any[];
    if (path === '/api/services/sendsms/') {
      list = [body];
    } else if (path === '/api/services/sendbulk/') {
      list = Array.isArray(body?.smslist) ? body.smslist : [];
      // A real gateway rejects these outright; answering 400 makes a client bug visible in tests.
      if (!list.length || list.length > 20 || body.count !== list.length) {
        return sendJson(res, 400, { error: 'smslist must hold 1 to 20 messages and match count' });
      }
    } else {
      return sendJson(res, 404, { error: 'not found' });
    }
    const resolve = resolverOfCall();
    const callWide = list.map((sms) => resolve(behaviours.of(sms.mobile))).find((b) => b.kind !== 'success' && b.kind !== 'code');
    respond(res, list, callWide, resolve);
  });

  return {
    url: await server.listen(),
    calls,
    get peakInFlight() {
      return peakInFlight;
    },
    setBehaviour: behaviours.set,
    reset: behaviours.reset,
    stop: server.stop,
    answered,
    report: (message, status, opts = {}) => ({
      messageid: message.messageid,
      ...(message.clientsmsid !== undefined && !opts.withoutClientSmsId ? { clientsmsid: message.clientsmsid } : {}),
      mobile: message.mobile,
      status,
      description: opts.description ?? (status === 'DeliveredToTerminal' ? 'Delivered to terminal' : status),
      networkid: options.networkId ?? '1',
      timestamp: opts.timestamp ?? gatewayTime(new Date()),
    }),
    async pushReports(url, reports) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof reports === 'string' ? reports : JSON.stringify(reports) });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, body };
    },
  };
}
