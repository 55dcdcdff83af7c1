// The webhooks module alone: the package's entry point loads the whole REST client (axios and
// every API's resource classes), a twentieth of a second per process for one function.
import { validateRequest } from 'twilio/lib/webhooks/webhooks.js';
import { createProviderPool, HttpTransportError, nonEmpty, postForm, snippet, type HttpResponse } from '../http-client.js';
import { accountLimits } from '../lane-limit.js';
import {
  bodyOf,
  type DeliveryResult,
  type DeliveryTarget,
  type OutboundMessage,
  type ProviderAccount,
  type ProviderAdapter,
  type ProviderField,
  type ProviderReport,
  type SendOptions,
} from '../types.js';

export const TWILIO_FIELDS: readonly ProviderField[] = [
  { name: 'accountSid', required: true, description: 'The Twilio account SID (AC...) messages are sent and billed under.' },
  { name: 'authToken', secret: true, required: true, description: "The account's auth token: it signs the API calls and verifies Twilio's status callbacks." },
  {
    name: 'from',
    description: 'The sender: a Twilio number in E.164 (+14155550100) or an alphanumeric sender id. This or messagingServiceSid is needed.',
  },
  {
    name: 'messagingServiceSid',
    description: 'A Messaging Service (MG...) that picks the sender from its pool; used instead of from when both are set. This or from is needed.',
  },
  { name: 'apiUrl', description: "Twilio's API host for this account (a regional edge such as https://api.dublin.ie1.twilio.com); default: the platform's (TWILIO_API_URL)." },
];

export interface TwilioOptions {
  /** Twilio's REST API host (`TWILIO_API_URL`), without the `/2010-04-01` path. */
  baseUrl: string;
  /** Hard limit per API call. */
  timeoutMs: number;
  /** Where Twilio posts the account's status callbacks; none, and Twilio posts none. */
  statusCallbackUrl: (account: ProviderAccount) => string | undefined;
  /**
   * API calls in flight at once per Twilio account and process, shared by every send of that
   * account: Twilio answers 20429 to an account past its concurrency limit.
   */
  callsInFlight?: number;
}

const NETWORK = 'twilio';

/** The recipient is the problem: final, and no other provider would do better. */
const RECIPIENT_CODES = new Set([
  21211, // invalid 'To' number
  21265, // 'To' is a short code
  21266, // 'To' and 'From' are the same
  21408, // sending to the recipient's region is not enabled
  21610, // the recipient replied STOP
  21612, // 'To' not reachable from this sender
  21614, // 'To' is not a mobile number
  21635, // 'To' is a landline
]);

/** The account or its sender is the problem: another provider of the channel may carry the message. */
const ACCOUNT_CODES = new Set([
  20003, // authentication failed
  20005, // account not active
  20404, // account or Messaging Service not found
  21212, // invalid 'From' number
  21603, // no 'From'
  21606, // 'From' cannot send to this destination
  21608, // trial account, unverified recipient
  21611, // 'From' has more queued messages than Twilio keeps
  21659, // 'From' is not a Twilio number
  21701, // Messaging Service problems: missing, no senders, ...
  21702,
  21703,
  21704,
  30001, // queue overflow
  30002, // account suspended
]);

const THROTTLING_CODE = 20429;

interface TwilioError {
  code?: unknown;
  message?: unknown;
}

export function createTwilioAdapter(options: TwilioOptions): ProviderAdapter {
  const base = options.baseUrl.replace(/\/+$/, '');
  const callsInFlight = options.callsInFlight ?? 16;
  // One queue per Twilio account (and token: a wrong token does not share a real account's queue),
  // a quarter of it kept for transactional sends.
  const queueFor = accountLimits(callsInFlight);
  const pool = createProviderPool();

  async function sendOne(url: string, form: Record<string, string>, authorization: string, target: DeliveryTarget): Promise<DeliveryResult> {
    const fail = (error: string, retryable: boolean, extra: { throttled?: boolean; providerFault?: boolean } = {}): DeliveryResult => ({
      recipient: target.recipient,
      ok: false,
      error: `Twilio: ${error}`,
      retryable,
      throttled: extra.throttled ?? false,
      ...(extra.providerFault ? { providerFault: true } : {}),
      network: NETWORK,
    });
    let res: HttpResponse;
    try {
      res = await postForm(url, form, { timeoutMs: options.timeoutMs, headers: { authorization }, pool });
    } catch (err) {
      if (err instanceof HttpTransportError) {
        return fail(err.kind === 'timeout' ? err.message : `connection failed (${err.code ?? err.message})`, true);
      }
      throw err;
    }

    if (res.status >= 200 && res.status < 300) {
      const sid = (res.json as { sid?: unknown } | undefined)?.sid;
      if (typeof sid === 'string' && sid) return { recipient: target.recipient, ok: true, network: NETWORK, providerMessageId: sid };
      // Twilio may have created the message: sending it again could deliver it twice.
      return fail(`unreadable answer (HTTP ${res.status})${snippet(res.text)}`, false);
    }

    const error = res.json && typeof res.json === 'object' ? (res.json as TwilioError) : undefined;
    const code = Number(error?.code);
    const known = Number.isInteger(code) && code > 0;
    const reason = `${typeof error?.message === 'string' && error.message ? error.message : `HTTP ${res.status}${known ? '' : snippet(res.text)}`}${known ? ` (${code})` : ''}`;
    if (res.status === 429 || code === THROTTLING_CODE) return fail(reason, true, { throttled: true });
    if (res.status >= 500) return fail(reason, true);
    if (RECIPIENT_CODES.has(code)) return fail(reason, false);
    if (ACCOUNT_CODES.has(code) || res.status === 401 || res.status === 403 || res.status === 404) return fail(reason, false, { providerFault: true });
    return fail(reason, false);
  }

  return {
    channel: 'sms',
    async send(message: OutboundMessage, targets: DeliveryTarget[], account: ProviderAccount, sendOptions?: SendOptions): Promise<DeliveryResult[]> {
      if (!targets.length) return [];
      const failAll = (error: string) =>
        targets.map((t): DeliveryResult => ({ recipient: t.recipient, ok: false, error: `Twilio: ${error}`, retryable: false, providerFault: true, network: NETWORK }));
      const accountSid = nonEmpty(account.settings.accountSid);
      const authToken = account.secrets.authToken;
      if (!accountSid || !authToken) return failAll('missing accountSid or authToken');
      const messagingServiceSid = nonEmpty(account.settings.messagingServiceSid);
      const from = nonEmpty(account.settings.from);
      if (!messagingServiceSid && !from) return failAll('neither from nor messagingServiceSid is set');

      const apiUrl = nonEmpty(account.settings.apiUrl)?.replace(/\/+$/, '') ?? base;
      const url = `${apiUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`;
      const authorization = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
      const statusCallback = options.statusCallbackUrl(account);
      const shared: Record<string, string> = {
        ...(messagingServiceSid ? { MessagingServiceSid: messagingServiceSid } : { From: from! }),
        ...(statusCallback ? { StatusCallback: statusCallback } : {}),
      };
      const queue = queueFor(accountSid, authToken);
      // Twilio takes one message per call: the targets go side by side, within the account's bound.
      return Promise.all(
        targets.map((target) =>
          queue.run(sendOptions, () => sendOne(url, { To: target.recipient, ...shared, Body: bodyOf(message, target) }, authorization, target)),
        ),
      );
    },
    close: () => pool.close(),
  };
}

/**
 * Whether a request claiming to be Twilio's was signed with the account's auth token: `url` is the
 * exact URL Twilio was given (scheme, host, path and query), `params` the form fields it posted.
 */
export function verifyTwilioSignature(authToken: string, signature: string | undefined, url: string, params: Record<string, string>): boolean {
  if (!authToken || !signature) return false;
  try {
    return validateRequest(authToken, signature, url, params);
  } catch {
    // An unparseable URL: nothing Twilio could have signed.
    return false;
  }
}

/** Short meanings of the delivery errors Twilio reports most (its ErrorMessage is often absent). */
const DELIVERY_ERRORS: Record<string, string> = {
  '30001': 'Queue overflow',
  '30002': 'Account suspended',
  '30003': 'Unreachable destination handset',
  '30004': 'Message blocked',
  '30005': 'Unknown destination handset',
  '30006': 'Landline or unreachable carrier',
  '30007': 'Carrier violation/filtered',
  '30008': 'Unknown error',
  '30009': 'Missing segment',
  '30010': 'Message price exceeds max price',
  '21610': 'Recipient unsubscribed',
};

/**
 * A status callback as a receipt: `delivered` (and `read`, where the channel reports it) is
 * delivered, `undelivered` and `failed` are not; the states on the way (queued, sending, sent,
 * accepted, ...) are null. Twilio gives no reliable time for the event (`RawDlrDoneDate` is the
 * carrier's, to the minute, in no stated zone), so it happened now.
 */
export function twilioStatusReport(params: Record<string, string>): ProviderReport | null {
  const sid = params.MessageSid || params.SmsSid;
  const status = (params.MessageStatus || params.SmsStatus || '').toLowerCase();
  if (!sid || !status) return null;
  if (status === 'delivered' || status === 'read') return { providerMessageId: sid, delivered: true, at: new Date(), status };
  if (status !== 'undelivered' && status !== 'failed') return null;
  const code = params.ErrorCode?.trim();
  const meaning = (code && DELIVERY_ERRORS[code]) || params.ErrorMessage?.trim();
  const error = code ? `Twilio: ${code}${meaning ? ` ${meaning}` : ''}` : `Twilio: ${meaning || status}`;
  return { providerMessageId: sid, delivered: false, at: new Date(), error, status };
}
