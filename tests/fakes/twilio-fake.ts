import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { fakeHttpServer, sendJson, type TransportBehaviour } from '../helpers/fake-server.js';

/**
 * A local Twilio Programmable Messaging API: `POST /2010-04-01/Accounts/<AccountSid>/Messages.json`
 * with HTTP Basic auth (account SID, auth token) and a form body, answering Twilio's 201 message
 * and its `{ code, message, more_info, status }` errors.
 *
 *   const tw = await startTwilioFake({ accountSid: 'AC...', authToken: 't' });  // tw.url -> TWILIO_API_URL
 *   tw.queue({ kind: 'http', status: 500 }, 2);                                 // the next two calls fail
 *   tw.queue({ kind: 'error', code: 20429 });                                  // the next call is throttled
 *   tw.setBehaviour({ kind: 'delay', ms: 100 });                               // every later call is slow
 *   tw.calls()                                                                 // every request, in order
 *   await tw.sendStatus(tw.messages()[0].sid, 'delivered');                    // a signed status callback
 *   await tw.stop();
 *
 * Whatever the behaviour, wrong credentials answer 401 (20003) and another account's path 404
 * (20404). After them, a queued behaviour wins over the one set for every call; then the form is
 * checked (21604 no To, 21602 no Body, 21603 no From nor MessagingServiceSid), and a number ending
 * in 0003 is refused as invalid (21211).
 */
export type TwilioBehaviour =
  | TransportBehaviour
  /** A Twilio REST error; status and message default to what Twilio answers for that code. */
  | { kind: 'error'; code: number; status?: number; message?: string }
  /** Waits, then behaves as `then` (default success). */
  | { kind: 'delay'; ms: number; then?: TwilioBehaviour }
  /** Never answers (until the fake stops). */
  | { kind: 'hang' };

export interface TwilioCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  form: Record<string, string>;
  /** `Date.now()` when the request's body had arrived. */
  at: number;
}

/** A message the fake created: what its status callbacks are about. */
export interface TwilioMessage {
  sid: string;
  to: string;
  from: string | null;
  messagingServiceSid: string | null;
  body: string;
  statusCallback?: string;
}

export type TwilioStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'read' | 'accepted';

export interface StatusReply {
  status: number;
  body: string;
  /** The exact form fields posted, and the signature sent with them. */
  params: Record<string, string>;
  signature: string;
}

export interface TwilioFake {
  url: string;
  accountSid: string;
  authToken: string;
  calls(): TwilioCall[];
  messages(): TwilioMessage[];
  /** The most calls it was answering at once since it started or was reset. */
  peakInFlight(): number;
  /** The next `calls` calls (default one) behave as `behaviour`, after any already queued. */
  queue(behaviour: TwilioBehaviour, calls?: number): void;
  /** What every call not queued does (default success). */
  setBehaviour(behaviour: TwilioBehaviour): void;
  /** Forgets the calls, messages and behaviours. */
  reset(): void;
  /**
   * POSTs a status callback for a created message to the StatusCallback URL it was created with,
   * form-encoded and signed as Twilio signs (`X-Twilio-Signature` over that URL and the fields);
   * `extra` adds or replaces fields (`ErrorCode` for undelivered and failed).
   */
  sendStatus(sid: string, status: TwilioStatus, extra?: Record<string, string>): Promise<StatusReply>;
  stop(): Promise<void>;
}

export interface TwilioFakeOptions {
  accountSid?: string;
  authToken?: string;
}

/** What Twilio answers for the codes the adapter tells apart. */
export const TWILIO_ERRORS: Record<number, { status: number; message: string }> = {
  20003: { status: 401, message: 'Authenticate' },
  20404: { status: 404, message: 'The requested resource was not found' },
  20429: { status: 429, message: 'Too Many Requests' },
  21211: { status: 400, message: "The 'To' number is not a valid phone number." },
  21212: { status: 400, message: "The 'From' number is not a valid phone number, shortcode, or alphanumeric sender ID." },
  21408: { status: 400, message: "Permission to send an SMS has not been enabled for the region indicated by the 'To' number." },
  21602: { status: 400, message: 'Message body is required.' },
  21603: { status: 400, message: "A 'From' phone number is required." },
  21604: { status: 400, message: "A 'To' phone number is required." },
  21606: { status: 400, message: "The 'From' phone number provided is not a valid message-capable Twilio phone number for this destination." },
  21610: { status: 400, message: 'Attempt to send to unsubscribed recipient' },
  21611: { status: 400, message: "This 'From' number has exceeded the maximum number of queued messages" },
  21614: { status: 400, message: "'To' number is not a valid mobile number" },
  21617: { status: 400, message: 'The concatenated message body exceeds the 1600 character limit.' },
};

const hex32 = () => randomBytes(16).toString('hex');
/** RFC 2822 in GMT, as Twilio writes its dates. */
const rfc2822 = (date: Date) => date.toUTCString().replace(/GMT$/, '+0000');

/** GSM 03.38: its basic set is one septet a character, its extension set two. */
const GSM_BASIC = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM_EXTENDED = '^{}\\[~]|€\f';

/** The segments a body is split into: 160 GSM septets alone or 153 a part; 70 UCS-2 units alone or 67 a part. */
export function segmentsOf(body: string): number {
  let septets = 0;
  for (const ch of body) {
    if (GSM_BASIC.includes(ch)) septets += 1;
    else if (GSM_EXTENDED.includes(ch)) septets += 2;
    else {
      const units = body.length;
      return units <= 70 ? 1 : Math.ceil(units / 67);
    }
  }
  return septets <= 160 ? 1 : Math.ceil(septets / 153);
}

export async function startTwilioFake(options: TwilioFakeOptions = {}): Promise<TwilioFake> {
  const accountSid = options.accountSid ?? `AC${hex32()}`;
  const authToken = options.authToken ?? 'test-twilio-auth-token';
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  let calls: TwilioCall[] = [];
  let messages = new Map<string, TwilioMessage>();
  let queued: TwilioBehaviour[] = [];
  let everyCall: TwilioBehaviour = { kind: 'success' };
  let inFlight = 0;
  let peak = 0;

  function twilioError(res: http.ServerResponse, code: number, status?: number, message?: string) {
    const known = TWILIO_ERRORS[code] ?? { status: 400, message: `Error ${code}` };
    const httpStatus = status ?? known.status;
    sendJson(res, httpStatus, { code, message: message ?? known.message, more_info: `https://www.twilio.com/docs/errors/${code}`, status: httpStatus });
  }

  function created(res: http.ServerResponse, form: Record<string, string>) {
    const sid = `SM${hex32()}`;
    const viaService = form.MessagingServiceSid ?? null;
    const message: TwilioMessage = {
      sid,
      to: form.To!,
      // With a Messaging Service the sender is picked after the answer: `from` is null until then.
      from: viaService ? null : form.From!,
      messagingServiceSid: viaService,
      body: form.Body!,
      ...(form.StatusCallback ? { statusCallback: form.StatusCallback } : {}),
    };
    messages.set(sid, message);
    const now = rfc2822(new Date());
    const uri = `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`;
    sendJson(res, 201, {
      account_sid: accountSid,
      api_version: '2010-04-01',
      body: message.body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: 'outbound-api',
      error_code: null,
      error_message: null,
      from: message.from,
      messaging_service_sid: viaService,
      num_media: '0',
      num_segments: viaService ? '0' : String(segmentsOf(message.body)),
      price: null,
      price_unit: 'USD',
      sid,
      status: viaService ? 'accepted' : 'queued',
      subresource_uris: { media: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}/Media.json` },
      to: message.to,
      uri,
    });
  }

  /** Answers one call; resolves once the answer is written (or the connection is gone). */
  async function respond(res: http.ServerResponse, form: Record<string, string>, behaviour: TwilioBehaviour): Promise<void> {
    switch (behaviour.kind) {
      case 'delay':
        await new Promise<void>((resolve) => server.later(behaviour.ms, resolve));
        return respond(res, form, behaviour.then ?? { kind: 'success' });
      case 'hang':
        return new Promise<void>((resolve) => res.on('close', resolve));
      case 'drop':
        return void res.socket?.destroy();
      case 'http':
        return sendJson(res, behaviour.status, behaviour.body ?? `HTTP ${behaviour.status}`);
      case 'malformed':
        return sendJson(res, 201, behaviour.body ?? '{"account_sid":');
      case 'error':
        return twilioError(res, behaviour.code, behaviour.status, behaviour.message);
      case 'success':
        if (!form.To) return twilioError(res, 21604);
        if (!form.Body) return twilioError(res, 21602);
        if (!form.From && !form.MessagingServiceSid) return twilioError(res, 21603);
        if (form.To.endsWith('0003')) return twilioError(res, 21211, 400, `The 'To' number ${form.To} is not a valid phone number.`);
        return created(res, form);
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
        if (req.headers.authorization !== expectedAuth) return twilioError(res, 20003);
        const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(path);
        if (req.method !== 'POST' || !match || decodeURIComponent(match[1]!) !== accountSid) {
          return twilioError(res, 20404, 404, `The requested resource ${path} was not found`);
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
    accountSid,
    authToken,
    calls: () => [...calls],
    messages: () => [...messages.values()],
    peakInFlight: () => peak,
    queue(behaviour, count = 1) {
      for (let i = 0; i < count; i++) queued.push(behaviour);
    },
    setBehaviour(behaviour) {
      everyCall = behaviour;
    },
    reset() {
      calls = [];
      messages = new Map();
      queued = [];
      everyCall = { kind: 'success' };
      peak = inFlight;
    },
    async sendStatus(sid, status, extra = {}) {
      const message = messages.get(sid);
      if (!message) throw new Error(`no message ${sid}`);
      if (!message.statusCallback) throw new Error(`message ${sid} was created without a StatusCallback`);
      const params: Record<string, string> = {
        AccountSid: accountSid,
        ApiVersion: '2010-04-01',
        From: message.from ?? '+15005550006',
        MessageSid: sid,
        MessageStatus: status,
        SmsSid: sid,
        SmsStatus: status,
        To: message.to,
        ...(message.messagingServiceSid ? { MessagingServiceSid: message.messagingServiceSid } : {}),
        ...(status === 'undelivered' || status === 'failed' ? { ErrorCode: '30003' } : {}),
        ...extra,
      };
      const signature = getExpectedTwilioSignature(authToken, message.statusCallback, params);
      const res = await fetch(message.statusCallback, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
      });
      return { status: res.status, body: await res.text(), params, signature };
    },
    stop: server.stop,
  };
}
